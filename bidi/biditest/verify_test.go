package biditest

import (
	"encoding/hex"
	"errors"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"

	"github.com/sagemaker-bidi/sagemaker-bidi/eventstream"
	"github.com/sagemaker-bidi/sagemaker-bidi/internal/wire"
)

func TestRequestRejections(t *testing.T) {
	wrongSecret := aws.Credentials{AccessKeyID: defaultAccessKeyID, SecretAccessKey: "not-the-secret"}
	tests := []struct {
		name      string
		endpoint  string
		mod       func(*rawOptions)
		status    int
		errorType string
		rule      string
	}{
		{"bad seed signature", "e", func(o *rawOptions) { o.creds = wrongSecret }, 403, "InvalidSignatureException", ruleSignature},
		{"unknown access key", "e", func(o *rawOptions) { o.creds.AccessKeyID = "AKIDOTHER" }, 403, "UnrecognizedClientException", ruleSignature},
		{"wrong region", "e", func(o *rawOptions) { o.region = "eu-west-1" }, 403, "InvalidSignatureException", ruleSignature},
		{"wrong service", "e", func(o *rawOptions) { o.service = "bedrock" }, 403, "InvalidSignatureException", ruleSignature},
		{"clock skew", "e", func(o *rawOptions) { o.signTime = time.Now().Add(-time.Hour) }, 403, "InvalidSignatureException", ruleSignature},
		{"unexpected session token", "e", func(o *rawOptions) { o.creds.SessionToken = "token" }, 403, "UnrecognizedClientException", ruleSignature},
		{"missing authorization", "e", func(o *rawOptions) { o.noSignature = true }, 403, "MissingAuthenticationTokenException", ruleSignature},
		{"header changed after signing", "e", func(o *rawOptions) {
			o.header.Set("X-Amzn-SageMaker-Target-Variant", "v1")
			o.afterSign = func(r *http.Request) { r.Header.Set("X-Amzn-SageMaker-Target-Variant", "v2") }
		}, 403, "InvalidSignatureException", ruleSignature},
		{"host not signed", "e", func(o *rawOptions) {
			o.afterSign = func(r *http.Request) {
				r.Header.Set("Authorization", strings.Replace(r.Header.Get("Authorization"), "host;", "", 1))
			}
		}, 403, "InvalidSignatureException", ruleSignature},
		{"wrong content type", "e", func(o *rawOptions) { o.header.Set("Content-Type", "application/json") }, 400, "InputValidationError", ruleHeader},
		{"missing content type", "e", func(o *rawOptions) { o.header.Del("Content-Type") }, 400, "InputValidationError", ruleHeader},
		{"wrong content sha256", "e", func(o *rawOptions) { o.header.Set("X-Amz-Content-Sha256", "UNSIGNED-PAYLOAD") }, 400, "InputValidationError", ruleHeader},
		{"invalid endpoint name", "bad_name", nil, 400, "InputValidationError", ruleInput},
		{"endpoint name too long", strings.Repeat("a", 64), nil, 400, "InputValidationError", ruleInput},
		{"endpoint name ends with hyphen", "a-", nil, 400, "InputValidationError", ruleInput},
		{"invalid target variant", "e", func(o *rawOptions) { o.header.Set("X-Amzn-SageMaker-Target-Variant", "-v") }, 400, "InputValidationError", ruleInput},
		{"invalid invocation path", "e", func(o *rawOptions) { o.header.Set("X-Amzn-SageMaker-Model-Invocation-Path", "/abs") }, 400, "InputValidationError", ruleInput},
		{"invalid query string", "e", func(o *rawOptions) { o.header.Set("X-Amzn-SageMaker-Model-Query-String", "a=b&c") }, 400, "InputValidationError", ruleInput},
		{"wrong method", "e", func(o *rawOptions) { o.method = http.MethodPut }, 404, "UnknownOperationException", ruleOperation},
		{"wrong path", "e", func(o *rawOptions) { o.path = "/endpoints/e/invocations" }, 404, "UnknownOperationException", ruleOperation},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			called := make(chan struct{}, 1)
			s := newTestServer(t, handlerCalled(called))
			var mods []func(*rawOptions)
			if tt.mod != nil {
				mods = append(mods, tt.mod)
			}
			rs := openRaw(t, s, tt.endpoint, mods...)
			rs.sendText("not read")
			expectRejection(t, s, rs, called, tt.status, tt.errorType, tt.rule)
		})
	}
}

func TestValidInputs(t *testing.T) {
	got := make(chan *Stream, 1)
	s := newTestServer(t, HandlerFunc(func(st *Stream) { got <- st }))
	rs := openRaw(t, s, "my-endpoint-1", func(o *rawOptions) {
		o.header.Set("X-Amzn-SageMaker-Target-Variant", "variant--1")
		o.header.Set("X-Amzn-SageMaker-Model-Invocation-Path", "v1/chat.completions")
		o.header.Set("X-Amzn-SageMaker-Model-Query-String", "model=llama&token=a%2Fb")
	})
	if resp := rs.mustResponse(); resp.StatusCode != 200 {
		t.Fatalf("status %d", resp.StatusCode)
	}
	st := recvWithin(t, got, "stream")
	if st.EndpointName != "my-endpoint-1" || st.TargetVariant != "variant--1" ||
		st.ModelInvocationPath != "v1/chat.completions" || st.ModelQueryString != "model=llama&token=a%2Fb" {
		t.Fatalf("stream inputs %+v", st)
	}
}

func TestSessionToken(t *testing.T) {
	creds := aws.Credentials{AccessKeyID: "ASIATEST", SecretAccessKey: "secret", SessionToken: "session-token"}
	s := newTestServer(t, Echo(), func(s *Server) { s.Credentials = creds })
	if c, err := s.AWSConfig().Credentials.Retrieve(t.Context()); err != nil || c.SessionToken != "session-token" || c.AccessKeyID != "ASIATEST" {
		t.Fatalf("AWSConfig credentials %v %v", c.AccessKeyID, err)
	}
	rs := openRaw(t, s, "e", func(o *rawOptions) { o.creds = creds })
	rs.sendText("hi")
	if m := rs.mustNext(); string(m.Payload) != "hi" {
		t.Fatalf("echo %q", m.Payload)
	}

	noToken := creds
	noToken.SessionToken = ""
	called := make(chan struct{}, 1)
	s2 := newTestServer(t, handlerCalled(called), func(s *Server) { s.Credentials = creds })
	rs2 := openRaw(t, s2, "e", func(o *rawOptions) { o.creds = noToken })
	expectRejection(t, s2, rs2, called, 403, "UnrecognizedClientException", ruleSignature)
}

// TestVerifySeedKnownAnswer checks the seed verification against the signed
// request of docs/wire.md §3.4 (vectors.txt B2).
func TestVerifySeedKnownAnswer(t *testing.T) {
	signed := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	s := NewUnstartedServer(nil)
	s.Credentials = aws.Credentials{AccessKeyID: "AKIDEXAMPLE", SecretAccessKey: "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY"}
	s.Now = func() time.Time { return signed.Add(4 * time.Minute) }
	s.creds, s.region, s.maxSkew = s.Credentials, defaultRegion, defaultMaxClockSkew

	r := &http.Request{
		Method: "POST", Proto: "HTTP/2.0", ProtoMajor: 2,
		Host:   "runtime.sagemaker.us-west-2.amazonaws.com:8443",
		URL:    &url.URL{Path: "/endpoints/my-endpoint/invocations-bidirectional-stream"},
		Header: http.Header{},
	}
	r.Header.Set("Authorization", "AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20260102/us-west-2/sagemaker/aws4_request, SignedHeaders=content-type;host;x-amz-content-sha256;x-amz-date, Signature=95790b6ae41e58ce0870758168d1920589b93feb7c61d1839675cb6c2e515258")
	r.Header.Set("Content-Type", "application/vnd.amazon.eventstream")
	r.Header.Set("X-Amz-Content-Sha256", "STREAMING-AWS4-HMAC-SHA256-EVENTS")
	r.Header.Set("X-Amz-Date", "20260102T030405Z")
	r.Header.Set("User-Agent", "not signed")
	r = r.WithContext(t.Context())

	seed, v := s.verifySeed(r)
	if v != nil {
		t.Fatal(v)
	}
	if hex.EncodeToString(seed) != "95790b6ae41e58ce0870758168d1920589b93feb7c61d1839675cb6c2e515258" {
		t.Fatalf("seed %x", seed)
	}

	r.Header.Set("X-Amz-Date", "20260102T030406Z")
	if _, v := s.verifySeed(r); v == nil || v.Rule != ruleSignature {
		t.Fatalf("changed X-Amz-Date: %v", v)
	}
	r.Header.Set("X-Amz-Date", "20260102T030405Z")
	s.Now = func() time.Time { return signed.Add(16 * time.Minute) }
	if _, v := s.verifySeed(r); v == nil || !strings.Contains(v.Message, "Signature expired") {
		t.Fatalf("skew beyond 15 min: %v", v)
	}
}

// expectStreamViolation checks what the client sees after a mid-stream
// violation: an error message with errorCode, then a stream reset.
func expectStreamViolation(t *testing.T, rs *rawStream, errorCode string) {
	t.Helper()
	for {
		m, err := rs.next()
		if err != nil {
			t.Fatalf("reading response: %v, want an error message", err)
		}
		if wire.Classify(m) == wire.KindPayloadPart {
			continue
		}
		if wire.Classify(m) != wire.KindError || wire.String(m, wire.ErrorCodeHeader) != errorCode || wire.String(m, wire.ErrorMessageHeader) == "" {
			t.Fatalf("got %v, want an error message %s", m.Headers, errorCode)
		}
		break
	}
	_, err := rs.next()
	if err == nil || err == io.EOF || !strings.Contains(err.Error(), "INTERNAL_ERROR") {
		t.Fatalf("after the error message: %v, want a stream reset", err)
	}
}

// recvAll returns a handler that echoes parts until an error, which it
// sends on errc.
func recvAll(errc chan<- error) Handler {
	return HandlerFunc(func(st *Stream) {
		for {
			p, err := st.RecvPart()
			if err != nil {
				errc <- err
				return
			}
			st.SendPart(p.Part)
		}
	})
}

func TestMidStreamViolations(t *testing.T) {
	tests := []struct {
		name      string
		send      func(rs *rawStream) // after one good part
		rule      string
		errorCode string
	}{
		{"tampered chunk signature", func(rs *rawStream) {
			bad := eventstream.NewSigner(aws.Credentials{SecretAccessKey: "wrong"}, defaultRegion, "sagemaker", make([]byte, 32))
			b, _ := bad.AppendMessage(nil, rs.part(wire.Part{Bytes: []byte("forged")}))
			rs.write(b)
		}, ruleChunkSignature, "InvalidSignatureException"},
		{"missing end frame", func(rs *rawStream) { rs.pw.Close() }, ruleEndFrame, "InputValidationError"},
		{"truncated envelope", func(rs *rawStream) {
			b, _ := rs.signer.AppendMessage(nil, rs.part(wire.Part{Bytes: []byte("cut")}))
			rs.write(b[:len(b)-3])
			rs.pw.Close()
		}, ruleFraming, "InputValidationError"},
		{"garbage", func(rs *rawStream) { rs.write([]byte("this is not an event stream....")) }, ruleFraming, "InputValidationError"},
		{"not a PayloadPart", func(rs *rawStream) {
			rs.sendMessage(&eventstream.Message{Headers: eventstream.Headers{
				{Name: ":message-type", Value: eventstream.StringValue("event")},
				{Name: ":event-type", Value: eventstream.StringValue("Other")},
			}})
		}, ruleEvent, "InputValidationError"},
		{"bad DataType", func(rs *rawStream) { rs.sendPart(wire.Part{Bytes: []byte("x"), DataType: []byte("TEXT")}) }, ruleEvent, "InputValidationError"},
		{"envelope payload not a message", func(rs *rawStream) {
			b, _ := rs.signer.AppendPayload(nil, []byte("raw bytes, not a message"))
			rs.write(b)
		}, ruleEvent, "InputValidationError"},
		{"empty P", func(rs *rawStream) {
			m := rs.part(wire.Part{Bytes: []byte("x"), DataType: wire.DataTypeBinary})
			m.Headers = append(m.Headers, eventstream.Header{Name: wire.PaddingHeader, Value: eventstream.StringValue("")})
			rs.sendMessage(m)
		}, ruleEvent, "InputValidationError"},
		{"empty CompletionState", func(rs *rawStream) {
			rs.sendMessage(&eventstream.Message{Headers: eventstream.Headers{
				{Name: wire.CompletionStateHeader, Value: eventstream.StringValue("")},
				{Name: wire.EventTypeHeader, Value: eventstream.StringValue("PayloadPart")},
				{Name: wire.MessageTypeHeader, Value: eventstream.StringValue("event")},
			}, Payload: []byte("x")})
		}, ruleEvent, "InputValidationError"},
		{"event after the end frame", func(rs *rawStream) {
			rs.write(rs.signer.AppendEnd(nil))
			rs.sendText("late")
		}, ruleEndFrame, "InputValidationError"},
		{"garbage after the end frame", func(rs *rawStream) {
			rs.write(rs.signer.AppendEnd(nil))
			rs.write([]byte("trailing bytes"))
			rs.pw.Close()
		}, ruleEndFrame, "InputValidationError"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			errc := make(chan error, 1)
			s := newTestServer(t, recvAll(errc))
			rs := openRaw(t, s, "e")
			if err := rs.sendText("good"); err != nil {
				t.Fatal(err)
			}
			tt.send(rs)
			err := recvWithin(t, errc, "RecvPart error")
			var v *Violation
			if !errors.As(err, &v) || v.Rule != tt.rule {
				t.Fatalf("RecvPart = %v, want a %s violation", err, tt.rule)
			}
			expectStreamViolation(t, rs, tt.errorCode)
			if rules := violationsOf(s); len(rules) != 1 || rules[0] != tt.rule {
				t.Fatalf("violations %v", s.Violations())
			}
			if got := s.Streams()[0].Received(); len(got) != 1 || string(got[0].Data) != "good" {
				t.Fatalf("received %+v", got)
			}
		})
	}
}

// TestEndFrameThenEndStream: RecvPart returns io.EOF only once the body
// has ended after the end frame (END_STREAM), not at the end frame itself,
// so that anything sent after the end frame is caught.
func TestEndFrameThenEndStream(t *testing.T) {
	errc := make(chan error, 1)
	s := newTestServer(t, recvAll(errc))
	rs := openRaw(t, s, "e")
	if err := rs.sendText("good"); err != nil {
		t.Fatal(err)
	}
	rs.mustNext() // the echo: the handler has received the part
	if err := rs.write(rs.signer.AppendEnd(nil)); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-errc:
		t.Fatalf("RecvPart = %v after the end frame, before the body ended", err)
	case <-time.After(100 * time.Millisecond):
	}
	rs.pw.Close()
	if err := recvWithin(t, errc, "RecvPart"); err != io.EOF {
		t.Fatalf("RecvPart = %v, want io.EOF", err)
	}
	if v := s.Violations(); len(v) != 0 {
		t.Fatalf("violations %v", v)
	}
}

func TestSkipVerify(t *testing.T) {
	errc := make(chan error, 1)
	s := newTestServer(t, recvAll(errc), func(s *Server) { s.SkipVerify = true })
	rs := openRaw(t, s, "e", func(o *rawOptions) {
		o.noSignature = true
		o.header.Del("X-Amz-Content-Sha256")
	})
	// A bare (unsigned) event, then a signed envelope with a made-up seed.
	var p wire.Part
	b, _ := eventstream.AppendMessage(nil, rs.part(wire.Part{Bytes: []byte("bare")}))
	rs.write(b)
	rs.sendPart(wire.Part{Bytes: []byte("signed"), CompletionState: wire.CompletionComplete})
	rs.end()
	for _, want := range []string{"bare", "signed"} {
		m := rs.mustNext()
		wire.ParsePart(m, &p)
		if !p.Valid() || string(p.Bytes) != want {
			t.Fatalf("echo %q, want %q", m.Payload, want)
		}
	}
	if err := recvWithin(t, errc, "end"); err != io.EOF {
		t.Fatalf("end: %v", err)
	}
	if v := s.Violations(); len(v) != 0 {
		t.Fatalf("violations %v", v)
	}
}
