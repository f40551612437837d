package biditest

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"

	"github.com/sagemaker-bidi/sagemaker-bidi/eventstream"
	"github.com/sagemaker-bidi/sagemaker-bidi/internal/wire"
)

// The helpers shared by the tests of package biditest. The tests drive
// the server with the small raw client below, built from the protocol
// pieces (docs/wire.md §3–4), independent of package bidi's session.

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
		creds:    aws.Credentials{AccessKeyID: defaultAccessKeyID, SecretAccessKey: defaultSecretAccessKey},
		region:   defaultRegion,
		service:  "sagemaker",
		method:   http.MethodPost,
		path:     "/endpoints/" + name + "/invocations-bidirectional-stream",
		header:   http.Header{},
		signTime: time.Now(),
		client:   s.client,
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
func violationsOf(s *Server) []string {
	var rules []string
	for _, err := range s.Violations() {
		var v *Violation
		if errors.As(err, &v) {
			rules = append(rules, v.Rule)
		}
	}
	return rules
}

// handlerCalled returns a handler that reports that it ran.
func handlerCalled(called chan<- struct{}) Handler {
	return HandlerFunc(func(st *Stream) { called <- struct{}{} })
}

// expectRejection checks an HTTP error response, the violation recorded
// and that the handler did not run.
func expectRejection(t *testing.T, s *Server, rs *rawStream, called chan struct{}, status int, errorType string, rule string) {
	t.Helper()
	resp := rs.mustResponse()
	if resp.StatusCode != status || resp.Header.Get("X-Amzn-ErrorType") != errorType ||
		resp.Header.Get("Content-Type") != "application/json" || resp.Header.Get("X-Amzn-RequestId") == "" {
		t.Fatalf("response %d %v, want %d %s", resp.StatusCode, resp.Header, status, errorType)
	}
	var body struct{ Message string }
	if err := json.NewDecoder(resp.Body).Decode(&body); err != nil || body.Message == "" {
		t.Fatalf("error body: %v %+v", err, body)
	}
	if strings.Contains(body.Message, defaultSecretAccessKey) || strings.Contains(body.Message, "Signature=") {
		t.Fatalf("error message leaks a secret: %q", body.Message)
	}
	if rules := violationsOf(s); len(rules) != 1 || rules[0] != rule {
		t.Fatalf("violations %v, want [%s]", s.Violations(), rule)
	}
	var v *Violation
	if !errors.As(s.Violations()[0], &v) || v.StatusCode != status || v.ErrorType != errorType {
		t.Fatalf("violation %#v", s.Violations()[0])
	}
	select {
	case <-called:
		t.Fatal("the handler ran for a rejected request")
	default:
	}
	if len(s.Streams()) != 0 {
		t.Fatal("a rejected request became a stream")
	}
}

// handSign computes a SigV4 signature with nothing but crypto/hmac and
// crypto/sha256, from a canonical request written out by the caller: the
// independent check of the server's canonicalisation.
func handSign(secret, amzDate, region, creq string) string {
	mac := func(key []byte, data string) []byte {
		m := hmac.New(sha256.New, key)
		m.Write([]byte(data))
		return m.Sum(nil)
	}
	date := amzDate[:8]
	key := mac(mac(mac(mac([]byte("AWS4"+secret), date), region), "sagemaker"), "aws4_request")
	sum := sha256.Sum256([]byte(creq))
	sts := "AWS4-HMAC-SHA256\n" + amzDate + "\n" + date + "/" + region + "/sagemaker/aws4_request\n" + hex.EncodeToString(sum[:])
	return hex.EncodeToString(mac(key, sts))
}

// waitParked waits until a goroutine is parked (not running or runnable)
// with fn on its stack, fn being a function's full name
// ("github.com/…/biditest.(*Stream).Send", say): a call in progress that
// waits. Nothing can signal that a goroutine has parked, so it polls the
// goroutines' stacks; every other wait in these tests is on a channel.
func waitParked(fn string) error {
	frame := "\n" + fn + "("
	deadline := time.Now().Add(testTimeout)
	for {
		for _, g := range goroutineStacks() {
			_, status, _ := strings.Cut(g, " [")
			if strings.Contains(g, frame) && !strings.HasPrefix(status, "running") &&
				!strings.HasPrefix(status, "runnable") && !strings.HasPrefix(status, "syscall") {
				return nil
			}
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("no goroutine parked in %s after %v", fn, testTimeout)
		}
		time.Sleep(time.Millisecond) // how often to look
	}
}

// goroutineStacks returns the stack of every goroutine.
func goroutineStacks() []string {
	buf := make([]byte, 256<<10)
	for {
		n := runtime.Stack(buf, true)
		if n < len(buf) {
			return strings.Split(string(buf[:n]), "\n\n")
		}
		buf = make([]byte, 2*len(buf))
	}
}

// encodeMessage encodes m for Stream.WriteRaw; it panics on a message
// eventstream cannot encode (a test's bug).
func encodeMessage(m *eventstream.Message) []byte {
	b, err := eventstream.AppendMessage(nil, m)
	if err != nil {
		panic(err)
	}
	return b
}
