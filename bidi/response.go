package bidi

import (
	"encoding/json"
	"io"
	"net/http"
	"strconv"
	"strings"

	"github.com/aws/smithy-go"
)

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

// headResponse returns the Response of a stream's response head: the
// engine's status and header fields, and the service's headers read from
// them. It is the one place a Response is built.
func headResponse(status int, h http.Header) *Response {
	r := &Response{
		StatusCode:               status,
		Header:                   h,
		InvokedProductionVariant: h.Get(headerInvokedVariant),
		RequestID:                h.Get(headerRequestID),
	}
	if r.RequestID == "" {
		r.RequestID = h.Get(headerAlternateRequestID)
	}
	return r
}

// ResponseError is returned when the service answers the request with a
// non-2xx HTTP status. It keeps the status, headers, error code, message,
// request ID and a bounded copy of the body. When Code names a modeled
// error, Err holds it ([*ModelError], [*ServiceUnavailableError], ...) and
// [errors.As] reaches it through Unwrap; unmodeled errors such as
// ThrottlingException (HTTP 400) or an unknown 5xx leave Err nil.
type ResponseError struct {
	StatusCode int
	Header     http.Header
	// Code is the sanitised error type from the X-Amzn-ErrorType header or
	// the body's __type or code member; "UnknownError" when none is given.
	Code string
	// Message is the body's Message (or message, errorMessage) member.
	Message string
	// RequestID is the x-amzn-RequestId response header.
	RequestID string
	// Body holds the first bytes of the response body (at most
	// maxErrorBody). It is never part of Error().
	Body []byte
	// Err is the modeled error, if Code names one.
	Err error
}

// modeledFormatter is implemented by the modeled error types: format
// builds the Error string with the given HTTP status (0 for none).
type modeledFormatter interface{ format(status int) string }

// Error implements the error interface. A modeled error is described with
// the status the service actually sent, which need not be its modeled one.
func (e *ResponseError) Error() string {
	var s string
	if f, ok := e.Err.(modeledFormatter); ok {
		s = f.format(e.StatusCode)
	} else if e.Err != nil {
		s = e.Err.Error()
	} else {
		var b strings.Builder
		b.WriteString("bidi: HTTP ")
		b.WriteString(strconv.Itoa(e.StatusCode))
		if t := http.StatusText(e.StatusCode); t != "" {
			b.WriteByte(' ')
			b.WriteString(t)
		}
		b.WriteString(": ")
		b.WriteString(cleanText(e.Code))
		if e.Message != "" {
			b.WriteString(": ")
			b.WriteString(cleanText(e.Message))
		}
		s = b.String()
	}
	if e.RequestID != "" {
		s += " (request id " + cleanText(e.RequestID) + ")"
	}
	return s
}

// Unwrap returns the modeled error, or nil.
func (e *ResponseError) Unwrap() error { return e.Err }

// ErrorCode returns Code.
func (e *ResponseError) ErrorCode() string { return e.Code }

// ErrorMessage returns Message.
func (e *ResponseError) ErrorMessage() string { return e.Message }

// ErrorFault returns the modeled fault when Code names a modeled error,
// else client for 4xx and server for 5xx statuses.
func (e *ResponseError) ErrorFault() smithy.ErrorFault {
	if f := errorFault(e.Code); f != smithy.FaultUnknown {
		return f
	}
	switch {
	case e.StatusCode >= 400 && e.StatusCode < 500:
		return smithy.FaultClient
	case e.StatusCode >= 500:
		return smithy.FaultServer
	}
	return smithy.FaultUnknown
}

// HTTPStatusCode returns StatusCode. It lets callers that know the
// aws-sdk-go-v2 convention ask for the status through an interface.
func (e *ResponseError) HTTPStatusCode() int { return e.StatusCode }

// maxErrorBody bounds how much of an error response body is read.
const maxErrorBody = 64 << 10

// responseError builds the error for a non-2xx response. It reads at most
// maxErrorBody bytes of the body and closes it. The error type comes from
// the X-Amzn-ErrorType header, else the body's __type, else its code
// member, sanitised (":uri" suffix and "namespace#" prefix dropped).
func responseError(status int, h http.Header, body io.ReadCloser) error {
	e := &ResponseError{
		StatusCode: status,
		Header:     h,
		RequestID:  h.Get("X-Amzn-Requestid"),
	}
	if body != nil {
		b, _ := io.ReadAll(io.LimitReader(body, maxErrorBody))
		body.Close()
		if len(b) > 0 {
			e.Body = b
		}
	}
	info, _ := parseErrorBody(e.Body)
	typ := h.Get("X-Amzn-Errortype")
	if typ == "" {
		typ = info.Type
	}
	if typ == "" {
		typ = info.Code
	}
	e.Code = sanitizeErrorCode(typ)
	if e.Code == "" {
		e.Code = codeUnknownError
	}
	e.Message = info.Message
	if e.RequestID == "" {
		e.RequestID = h.Get("X-Amz-Request-Id")
	}
	e.Err = modeledError(e.Code, info.modeledFields)
	return e
}

// errorBody is what parseErrorBody extracts from a JSON error document.
type errorBody struct {
	modeledFields
	Type string // __type
	Code string // code, when it is a string
}

// parseErrorBody decodes a JSON error document. Member names are matched
// exactly except for the message ("Message", "message", "errorMessage")
// and the error code ("ErrorCode", "errorCode"). Values of the wrong JSON
// type are ignored. The raw bytes never end up in the result except as
// decoded string members.
func parseErrorBody(body []byte) (errorBody, error) {
	var out errorBody
	if len(body) == 0 {
		return out, nil
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(body, &m); err != nil {
		return out, err
	}
	str := func(keys ...string) string {
		for _, k := range keys {
			var s string
			if raw, ok := m[k]; ok && json.Unmarshal(raw, &s) == nil && s != "" {
				return s
			}
		}
		return ""
	}
	out.Type = str("__type")
	out.Code = str("code", "Code")
	out.Message = str("Message", "message", "errorMessage")
	out.ErrorCode = str("ErrorCode", "errorCode")
	out.OriginalMessage = str("OriginalMessage")
	out.LogStreamArn = str("LogStreamArn")
	if raw, ok := m["OriginalStatusCode"]; ok {
		var n int
		if json.Unmarshal(raw, &n) == nil {
			out.OriginalStatusCode = n
		}
	}
	return out, nil
}
