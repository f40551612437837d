package main

import (
	"io"
	"net/http"

	"github.com/aws/aws-sdk-go-v2/service/sagemakerruntime"
)

// withReadOnlyRequestBodies is an option of the official client that
// works around a race in smithy-go v1.28.8 (the version this module
// resolves) which can close the connection under a streamed response:
// InvokeEndpointWithResponseStream then fails in the middle of the event
// stream with "decode event: read tcp ...: use of closed network
// connection".
//
//   - transport/http/request.go:186 ((*Request).Build) wraps the request
//     body, a bytes.Reader, with iointernal.NewSafeReadCloser, which is a
//     safeWriteToReadCloser because the reader is an io.WriterTo.
//   - transport/http/client.go:115 (ClientHandler.Handle) closes that body
//     as soon as HTTPClient.Do returns, that is, once the response
//     headers are in.
//   - net/http may still be in the request write at that moment, on the
//     connection's writeLoop goroutine: with a known ContentLength,
//     transferWriter.writeBody (net/http/transfer.go:372-377) copies
//     ContentLength bytes, then drains the body with io.Copy(io.Discard,
//     body) to check that nothing is left, and io.Copy calls WriteTo.
//   - safeWriteToReadCloser.WriteTo (transport/http/internal/io/safe.go:29)
//     returns (0, io.EOF) once closed, where the io.WriterTo contract is a
//     nil error at the end. net/http takes the EOF as a failed request
//     write and persistConn.writeLoop closes the connection
//     (net/http/transport.go:2678), while the SDK's event stream reader
//     is still reading the response body from it.
//
// The window opens whenever the server answers before writeLoop gets to
// the drain, which a loopback server does often. Later smithy-go
// releases return (0, nil) there. Hiding WriteTo from net/http makes it
// drain with Read instead, and safeReadCloser.Read returns (0, io.EOF)
// after Close, the ordinary end of a reader.
//
// It wraps the client that sagemakerruntime.New has resolved (the
// options functions run after it), so the SDK's defaults-mode timeouts
// are kept.
func withReadOnlyRequestBodies(o *sagemakerruntime.Options) {
	o.HTTPClient = readOnlyBodyClient{o.HTTPClient}
}

// readOnlyBodyClient sends requests with a body that has only Read and
// Close methods.
type readOnlyBodyClient struct {
	next sagemakerruntime.HTTPClient
}

func (c readOnlyBodyClient) Do(r *http.Request) (*http.Response, error) {
	if r.Body != nil && r.Body != http.NoBody {
		r = r.WithContext(r.Context()) // a shallow copy, to leave the SDK's request as it is
		r.Body = struct{ io.ReadCloser }{r.Body}
	}
	return c.next.Do(r)
}
