package biditest

import (
	"context"
	"errors"
	"io"
	"net/http"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"

	"github.com/sagemaker-bidi/sagemaker-bidi/eventstream"
	"github.com/sagemaker-bidi/sagemaker-bidi/internal/wire"
)

// The tests drive the server with this small client built from the
// protocol pieces (WIRE.md §3–4), independent of package bidi's session.

const testTimeout = 10 * time.Second

// newTestServer starts a server with h after applying mods, and closes it
// when the test ends.
func newTestServer(t testing.TB, h Handler, mods ...func(*Server)) *Server {
	t.Helper()
	s := NewUnstartedServer(h)
	for _, m := range mods {
		m(s)
	}
	s.Start()
	t.Cleanup(s.Close)
	return s
}

type rawOptions struct {
	creds       aws.Credentials
	region      string
	service     string
	method      string
	path        string
	header      http.Header // set before signing
	signTime    time.Time
	afterSign   func(*http.Request)
	client      *http.Client
	noSignature bool
}

type respResult struct {
	resp *http.Response
	err  error
}

// rawStream is one stream opened by hand: a signed request whose body is a
// pipe of signed envelopes, and a decoder on the response body.
type rawStream struct {
	t      testing.TB
	ctx    context.Context
	cancel context.CancelFunc
	pw     *io.PipeWriter
	signer *eventstream.Signer
	buf    []byte
	hdrs   eventstream.Headers
	respc  chan respResult
	resp   *http.Response
	err    error // of the request, once done
	done   bool  // the response (or error) was taken from respc
	dec    *eventstream.Decoder
}

// openRaw starts a stream to endpoint name on s. The request is in flight
// when it returns; response() waits for the response headers.
func openRaw(t testing.TB, s *Server, name string, mods ...func(*rawOptions)) *rawStream {
	t.Helper()
	o := rawOptions{
		creds:    aws.Credentials{AccessKeyID: AccessKeyID, SecretAccessKey: SecretAccessKey},
		region:   Region,
		service:  "sagemaker",
		method:   http.MethodPost,
		path:     "/endpoints/" + name + "/invocations-bidirectional-stream",
		header:   http.Header{},
		signTime: time.Now(),
		client:   s.HTTPClient(),
	}
	o.header.Set("Content-Type", "application/vnd.amazon.eventstream")
	o.header.Set("X-Amz-Content-Sha256", "STREAMING-AWS4-HMAC-SHA256-EVENTS")
	for _, m := range mods {
		m(&o)
	}
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	pr, pw := io.Pipe()
	context.AfterFunc(ctx, func() { pw.CloseWithError(ctx.Err()) })
	req, err := http.NewRequestWithContext(ctx, o.method, s.URL+o.path, pr)
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	for k, v := range o.header {
		req.Header[k] = v
	}
	seed := make([]byte, 32)
	if !o.noSignature {
		if err := v4.NewSigner().SignHTTP(ctx, o.creds, req, "STREAMING-AWS4-HMAC-SHA256-EVENTS", o.service, o.region, o.signTime); err != nil {
			cancel()
			t.Fatal(err)
		}
		if seed, err = eventstream.SeedFromAuthorization(req.Header.Get("Authorization")); err != nil {
			cancel()
			t.Fatal(err)
		}
	}
	if o.afterSign != nil {
		o.afterSign(req)
	}
	rs := &rawStream{
		t: t, ctx: ctx, cancel: cancel, pw: pw,
		signer: eventstream.NewSigner(o.creds, o.region, o.service, seed),
		respc:  make(chan respResult, 1),
	}
	go func() {
		resp, err := o.client.Do(req)
		rs.respc <- respResult{resp, err}
	}()
	t.Cleanup(rs.close)
	return rs
}

// close aborts the stream and releases its resources.
func (rs *rawStream) close() {
	rs.cancel()
	if !rs.done {
		r := <-rs.respc
		rs.resp, rs.done = r.resp, true
	}
	if rs.resp != nil {
		rs.resp.Body.Close()
	}
}

// part returns a PayloadPart message.
func (rs *rawStream) part(p wire.Part) *eventstream.Message {
	rs.hdrs = wire.AppendPartHeaders(rs.hdrs[:0], &p)
	return &eventstream.Message{Headers: rs.hdrs, Payload: p.Bytes}
}

// sendPart signs and writes one PayloadPart envelope.
func (rs *rawStream) sendPart(p wire.Part) error {
	return rs.sendMessage(rs.part(p))
}

// sendText sends a COMPLETE UTF8 part.
func (rs *rawStream) sendText(s string) error {
	return rs.sendPart(wire.Part{Bytes: []byte(s), DataType: wire.DataTypeUTF8, CompletionState: wire.CompletionComplete})
}

// sendMessage signs and writes any inner message.
func (rs *rawStream) sendMessage(m *eventstream.Message) error {
	b, err := rs.signer.AppendMessage(rs.buf[:0], m)
	if err != nil {
		return err
	}
	rs.buf = b
	return rs.write(b)
}

// write writes raw bytes on the request body.
func (rs *rawStream) write(b []byte) error {
	_, err := rs.pw.Write(b)
	return err
}

// end sends the end frame and closes the request body (END_STREAM).
func (rs *rawStream) end() error {
	rs.buf = rs.signer.AppendEnd(rs.buf[:0])
	if err := rs.write(rs.buf); err != nil {
		return err
	}
	return rs.pw.Close()
}

// response waits for the response headers.
func (rs *rawStream) response() (*http.Response, error) {
	if rs.done {
		return rs.resp, rs.err
	}
	select {
	case r := <-rs.respc:
		rs.resp, rs.err, rs.done = r.resp, r.err, true
		if r.err != nil {
			return nil, r.err
		}
		rs.dec = eventstream.NewDecoder(r.resp.Body)
		return r.resp, nil
	case <-rs.ctx.Done():
		return nil, rs.ctx.Err()
	}
}

// mustResponse is response failing the test on error.
func (rs *rawStream) mustResponse() *http.Response {
	rs.t.Helper()
	resp, err := rs.response()
	if err != nil {
		rs.t.Fatalf("response: %v", err)
	}
	return resp
}

// next decodes the next response message; it is valid until the next call.
func (rs *rawStream) next() (*eventstream.Message, error) {
	if _, err := rs.response(); err != nil {
		return nil, err
	}
	return rs.dec.Decode()
}

// mustNext is next failing the test on error.
func (rs *rawStream) mustNext() *eventstream.Message {
	rs.t.Helper()
	m, err := rs.next()
	if err != nil {
		rs.t.Fatalf("reading response event: %v", err)
	}
	return m
}

// recvWithin receives from c or fails the test after the timeout.
func recvWithin[T any](t testing.TB, c <-chan T, what string) T {
	t.Helper()
	select {
	case v := <-c:
		return v
	case <-time.After(testTimeout):
		t.Fatalf("timed out waiting for %s", what)
		panic("unreachable")
	}
}

// violationsOf returns the rules of s's violations.
func violationsOf(s *Server) []Rule {
	var rules []Rule
	for _, err := range s.Violations() {
		var v *Violation
		if errors.As(err, &v) {
			rules = append(rules, v.Rule)
		}
	}
	return rules
}
