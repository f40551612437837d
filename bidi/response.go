package bidi

import "net/http"

// Response holds the response headers of a session's stream, returned by
// [Session.Response] once the service has answered.
type Response struct {
	// StatusCode is the HTTP status, 200 for a stream the model accepted.
	StatusCode int

	// Header holds the response headers.
	Header http.Header

	// InvokedProductionVariant is the production variant that serves the
	// stream (header X-Amzn-Invoked-Production-Variant).
	InvokedProductionVariant string

	// RequestID is the service's request ID (header x-amzn-RequestId), for
	// support cases.
	RequestID string
}

func responseOf(resp *http.Response) *Response {
	r := &Response{
		StatusCode:               resp.StatusCode,
		Header:                   resp.Header,
		InvokedProductionVariant: resp.Header.Get(headerInvokedVariant),
		RequestID:                resp.Header.Get(headerRequestID),
	}
	if r.RequestID == "" {
		r.RequestID = resp.Header.Get(headerAlternateRequestID)
	}
	return r
}
