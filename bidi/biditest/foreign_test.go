package biditest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"

	"github.com/sagemaker-bidi/sagemaker-bidi/bidi"
	"github.com/sagemaker-bidi/sagemaker-bidi/eventstream"
	"github.com/sagemaker-bidi/sagemaker-bidi/internal/wire"
)

// A foreign client is none of this project's client code: the request is
// net/http's HTTP/2 transport with headers set and signed by hand in the
// form AWS's JavaScript SDK uses (":authority" signed instead of "host",
// its bookkeeping headers signed too), and every event is wrapped and
// signed with aws-sdk-go-v2's own v4.StreamSigner, its inner message laid
// out in the JavaScript SDK's header order.
type foreignClient struct {
	hc     *http.Client
	url    string
	creds  aws.Credentials
	region string
}

// foreignStream is one stream of a foreignClient.
type foreignStream struct {
	t      testing.TB
	ctx    context.Context
	pw     *io.PipeWriter
	signer *v4.StreamSigner
	respc  chan *http.Response
	errc   chan error
	resp   *http.Response // once received
	dec    *eventstream.Decoder
}

// open starts a stream to endpoint with the extra (x-amzn-sagemaker-*)
// headers. Like AWS's SDKs, it returns once the request is on its way:
// events may be sent before the response headers arrive.
func (c *foreignClient) open(t testing.TB, endpoint string, extra map[string]string) *foreignStream {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	t.Cleanup(cancel)
	pr, pw := io.Pipe()
	req, err := http.NewRequestWithContext(ctx, "POST", c.url+"/endpoints/"+endpoint+"/invocations-bidirectional-stream", pr)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now().UTC()
	amzDate := now.Format("20060102T150405Z")
	var id [16]byte
	rand.Read(id[:])
	hdr := map[string]string{
		"amz-sdk-invocation-id": hex.EncodeToString(id[:]),
		"amz-sdk-request":       "attempt=1; max=1",
		"content-type":          "application/vnd.amazon.eventstream",
		"x-amz-content-sha256":  "STREAMING-AWS4-HMAC-SHA256-EVENTS",
		"x-amz-date":            amzDate,
		"x-amz-user-agent":      "foreign-test-client/1.0",
	}
	for k, v := range extra {
		hdr[strings.ToLower(k)] = v
	}
	if c.creds.SessionToken != "" {
		hdr["x-amz-security-token"] = c.creds.SessionToken
	}
	names := []string{":authority"}
	for k, v := range hdr {
		req.Header.Set(k, v)
		names = append(names, k)
	}
	slices.Sort(names)
	var creq strings.Builder
	creq.WriteString("POST\n" + req.URL.EscapedPath() + "\n\n")
	for _, n := range names {
		v := req.URL.Host
		if n != ":authority" {
			v = hdr[n]
		}
		creq.WriteString(n + ":" + v + "\n")
	}
	signed := strings.Join(names, ";")
	creq.WriteString("\n" + signed + "\nSTREAMING-AWS4-HMAC-SHA256-EVENTS")
	sig := handSign(c.creds.SecretAccessKey, amzDate, c.region, creq.String())
	req.Header.Set("Authorization", "AWS4-HMAC-SHA256 Credential="+c.creds.AccessKeyID+"/"+amzDate[:8]+"/"+c.region+
		"/sagemaker/aws4_request, SignedHeaders="+signed+", Signature="+sig)
	seed, _ := hex.DecodeString(sig)

	respc := make(chan *http.Response, 1)
	errc := make(chan error, 1)
	go func() {
		resp, err := c.hc.Do(req)
		if err != nil {
			errc <- err
			return
		}
		respc <- resp
	}()
	fs := &foreignStream{t: t, ctx: ctx, pw: pw, signer: v4.NewStreamSigner(c.creds, "sagemaker", c.region, seed), respc: respc, errc: errc}
	t.Cleanup(func() {
		pw.CloseWithError(context.Canceled)
		cancel()
		if fs.resp != nil {
			fs.resp.Body.Close()
		}
	})
	return fs
}

// response waits for the response headers.
func (fs *foreignStream) response() *http.Response {
	fs.t.Helper()
	if fs.resp != nil {
		return fs.resp
	}
	select {
	case fs.resp = <-fs.respc:
	case err := <-fs.errc:
		fs.t.Fatalf("request: %v", err)
	case <-fs.ctx.Done():
		fs.t.Fatal("no response")
	}
	fs.dec = eventstream.NewDecoder(fs.resp.Body)
	return fs.resp
}

// send signs inner (an encoded event message, or nothing for the end
// frame) with v4.StreamSigner and writes the envelope.
func (fs *foreignStream) send(inner []byte) error {
	now := time.Now()
	date := eventstream.Header{Name: ":date", Value: eventstream.TimestampValue(now)}
	hb, err := eventstream.AppendHeaders(nil, eventstream.Headers{date})
	if err != nil {
		return err
	}
	sig, err := fs.signer.GetSignature(fs.ctx, hb, inner, now)
	if err != nil {
		return err
	}
	env, err := eventstream.AppendMessage(nil, &eventstream.Message{
		Headers: eventstream.Headers{date, {Name: ":chunk-signature", Value: eventstream.BytesValue(sig)}},
		Payload: inner,
	})
	if err != nil {
		return err
	}
	_, err = fs.pw.Write(env)
	return err
}

// sendPart sends one PayloadPart, headers in the JavaScript SDK's order.
func (fs *foreignStream) sendPart(data []byte, dataType, completion string) {
	fs.t.Helper()
	inner, err := eventstream.AppendMessage(nil, &eventstream.Message{Headers: eventstream.Headers{
		{Name: ":event-type", Value: eventstream.StringValue("PayloadPart")},
		{Name: ":message-type", Value: eventstream.StringValue("event")},
		{Name: ":content-type", Value: eventstream.StringValue("application/octet-stream")},
		{Name: "DataType", Value: eventstream.StringValue(dataType)},
		{Name: "CompletionState", Value: eventstream.StringValue(completion)},
	}, Payload: data})
	if err == nil {
		err = fs.send(inner)
	}
	if err != nil {
		fs.t.Fatalf("sending a part: %v", err)
	}
}

// end sends the signed end frame and closes the request (END_STREAM).
func (fs *foreignStream) end() {
	fs.t.Helper()
	if err := fs.send(nil); err != nil {
		fs.t.Fatalf("sending the end frame: %v", err)
	}
	fs.pw.Close()
}

// foreignEvent is a response message as a client reads it.
type foreignEvent struct {
	kind      string // "part", "exception", "error"
	data      string
	dataType  string
	complete  bool
	exception string // :exception-type
	body      map[string]any
}

// next reads the next response message, or returns io.EOF at the clean
// end of the stream.
func (fs *foreignStream) next() (foreignEvent, error) {
	fs.response()
	m, err := fs.dec.Decode()
	if err != nil {
		return foreignEvent{}, err
	}
	switch wire.String(m, ":message-type") {
	case "event":
		return foreignEvent{kind: "part", data: string(m.Payload), dataType: wire.String(m, "DataType"),
			complete: wire.String(m, "CompletionState") != "PARTIAL"}, nil
	case "exception":
		ev := foreignEvent{kind: "exception", exception: wire.String(m, ":exception-type")}
		json.Unmarshal(m.Payload, &ev.body)
		return ev, nil
	}
	return foreignEvent{kind: "error", exception: wire.String(m, ":error-code")}, nil
}

// mustNext is next failing the test on error.
func (fs *foreignStream) mustNext() foreignEvent {
	fs.t.Helper()
	ev, err := fs.next()
	if err != nil {
		fs.t.Fatalf("reading the response: %v", err)
	}
	return ev
}

// expectEOF expects the clean end of the response stream.
func (fs *foreignStream) expectEOF() {
	fs.t.Helper()
	if ev, err := fs.next(); err != io.EOF {
		fs.t.Fatalf("got %+v, %v; want the clean end of the stream", ev, err)
	}
}

// errorBody decodes a restJson1 error response.
func (fs *foreignStream) errorBody() map[string]any {
	fs.t.Helper()
	var body map[string]any
	if err := json.NewDecoder(fs.response().Body).Decode(&body); err != nil {
		fs.t.Fatalf("error body: %v", err)
	}
	return body
}

func foreignFor(s *Server) *foreignClient {
	return &foreignClient{hc: s.client, url: s.URL, creds: aws.Credentials{AccessKeyID: defaultAccessKeyID, SecretAccessKey: defaultSecretAccessKey}, region: defaultRegion}
}

// A foreign client signing ":authority" echoes, sends fragments and ends
// cleanly; the server saw its own SignedHeaders.
func TestForeignClientEchoAndFragments(t *testing.T) {
	s := newTestServer(t, DemoModel(&DemoOptions{FragmentSize: 1000}))
	fs := foreignFor(s).open(t, "my-endpoint", map[string]string{"X-Amzn-SageMaker-Target-Variant": "Blue"})
	if fs.response().StatusCode != 200 || fs.resp.Header.Get("X-Amzn-Invoked-Production-Variant") != "Blue" {
		t.Fatalf("response %d %v", fs.response().StatusCode, fs.resp.Header)
	}
	fs.sendPart([]byte("hello"), "UTF8", "COMPLETE")
	if ev := fs.mustNext(); ev.kind != "part" || ev.data != "hello" || ev.dataType != "UTF8" || !ev.complete {
		t.Fatalf("echo %+v", ev)
	}
	audio := strings.Repeat("0123456789", 250)
	fs.sendPart([]byte(audio[:1200]), "BINARY", "PARTIAL")
	fs.sendPart([]byte(audio[1200:2000]), "BINARY", "PARTIAL")
	fs.sendPart([]byte(audio[2000:]), "BINARY", "COMPLETE")
	var got strings.Builder
	var parts int
	for {
		ev := fs.mustNext()
		if ev.kind != "part" || ev.dataType != "BINARY" {
			t.Fatalf("fragment %+v", ev)
		}
		got.WriteString(ev.data)
		parts++
		if ev.complete {
			break
		}
	}
	if got.String() != audio || parts != 3 {
		t.Fatalf("%d fragments, %d bytes back; want 3, %d", parts, got.Len(), len(audio))
	}
	fs.end()
	fs.expectEOF()
	if v := s.Violations(); len(v) != 0 {
		t.Fatalf("violations %v", v)
	}
	st := s.Streams()[0]
	if auth := st.Header.Get("Authorization"); !strings.Contains(auth, "SignedHeaders=:authority;amz-sdk-invocation-id;") {
		t.Fatalf("Authorization %q", auth)
	}
}

// A request signed by hand with the wrong secret, in the same form, is
// refused: the :authority form is verified, not waved through.
func TestForeignClientWrongSecret(t *testing.T) {
	called := make(chan struct{}, 1)
	s := newTestServer(t, handlerCalled(called))
	c := foreignFor(s)
	c.creds.SecretAccessKey = "not-the-secret"
	fs := c.open(t, "e", nil)
	if fs.response().StatusCode != 403 || fs.resp.Header.Get("X-Amzn-ErrorType") != "InvalidSignatureException" {
		t.Fatalf("response %d %s", fs.response().StatusCode, fs.resp.Header.Get("X-Amzn-ErrorType"))
	}
}

// Each modeled HTTP error reaches a foreign client with its type, status
// and members; the server's own input check answers InputValidationError.
func TestForeignClientModeledErrors(t *testing.T) {
	tests := []struct {
		status    int
		errorType string
		fields    map[string]any
	}{
		{400, "InputValidationError", map[string]any{"Message": "bad input", "ErrorCode": "E400"}},
		{424, "ModelError", map[string]any{"Message": "Received server error (500) from primary", "OriginalStatusCode": 500,
			"OriginalMessage": "boom", "LogStreamArn": "arn:aws:logs:us-west-2:123456789012:log-group:/aws/sagemaker/Endpoints/e", "ErrorCode": "ModelError"}},
		{500, "InternalServerError", map[string]any{"Message": "internal", "ErrorCode": "E500"}},
		{503, "ServiceUnavailableError", map[string]any{"Message": "unavailable", "ErrorCode": "E503"}},
	}
	for _, tt := range tests {
		t.Run(tt.errorType, func(t *testing.T) {
			s := newTestServer(t, HandlerFunc(func(st *Stream) { st.Fail(tt.status, tt.errorType, tt.fields) }))
			fs := foreignFor(s).open(t, "e", nil)
			if fs.response().StatusCode != tt.status || fs.resp.Header.Get("X-Amzn-ErrorType") != tt.errorType {
				t.Fatalf("response %d %s", fs.response().StatusCode, fs.resp.Header.Get("X-Amzn-ErrorType"))
			}
			body := fs.errorBody()
			for k, v := range tt.fields {
				if got, _ := json.Marshal(body[k]); string(got) != mustJSON(v) {
					t.Errorf("%s = %s, want %s", k, got, mustJSON(v))
				}
			}
		})
	}
	t.Run("input check", func(t *testing.T) {
		fs := foreignFor(newTestServer(t, nil)).open(t, "e", map[string]string{"X-Amzn-SageMaker-Model-Invocation-Path": "/absolute"})
		if fs.response().StatusCode != 400 || fs.resp.Header.Get("X-Amzn-ErrorType") != "InputValidationError" {
			t.Fatalf("response %d %s", fs.response().StatusCode, fs.resp.Header.Get("X-Amzn-ErrorType"))
		}
		if msg, _ := fs.errorBody()["Message"].(string); !strings.Contains(msg, "ModelInvocationPath") {
			t.Fatalf("Message %q", msg)
		}
	})
}

func mustJSON(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

// The modeled mid-stream errors reach a foreign client after the parts
// sent before them, then the stream ends.
func TestForeignClientMidStreamErrors(t *testing.T) {
	for _, tc := range []struct {
		name string
		fail func(st *Stream)
		code string
	}{
		{"ModelStreamError", func(st *Stream) {
			st.SendException("ModelStreamError", []byte(`{"Message":"the model failed","ErrorCode":"ModelError"}`))
		}, "ModelError"},
		{"InternalStreamFailure", func(st *Stream) {
			st.SendException("InternalStreamFailure", []byte(`{"Message":"the platform failed"}`))
		}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := newTestServer(t, HandlerFunc(func(st *Stream) {
				m, err := st.Recv()
				if err != nil {
					return
				}
				st.Send(m)
				tc.fail(st)
			}))
			fs := foreignFor(s).open(t, "e", nil)
			fs.sendPart([]byte("before"), "UTF8", "COMPLETE")
			if ev := fs.mustNext(); ev.data != "before" {
				t.Fatalf("first %+v", ev)
			}
			ev := fs.mustNext()
			if ev.kind != "exception" || ev.exception != tc.name || ev.body["Message"] == nil {
				t.Fatalf("got %+v, want a %s exception", ev, tc.name)
			}
			if code, _ := ev.body["ErrorCode"].(string); code != tc.code {
				t.Fatalf("ErrorCode %q, want %q", code, tc.code)
			}
			fs.expectEOF()
		})
	}
}

// The bidi client and a foreign client share one server: the signature
// forms coexist.
func TestForeignAndBidiClients(t *testing.T) {
	s := newTestServer(t, Echo())
	fs := foreignFor(s).open(t, "e", nil)
	fs.sendPart([]byte("foreign"), "UTF8", "COMPLETE")
	if ev := fs.mustNext(); ev.data != "foreign" {
		t.Fatalf("foreign echo %+v", ev)
	}
	ctx := t.Context()
	sess, err := s.Client().Open(ctx, &bidi.OpenInput{EndpointName: "e"})
	if err != nil {
		t.Fatal(err)
	}
	defer sess.Close()
	if err := sess.Send(ctx, bidi.Text("ours")); err != nil {
		t.Fatal(err)
	}
	if m, err := sess.Recv(ctx); err != nil || string(m.Data) != "ours" {
		t.Fatalf("bidi echo %q, %v", m.Data, err)
	}
	fs.end()
	fs.expectEOF()
}
