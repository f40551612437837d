package eventstream

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
	"github.com/aws/smithy-go/logging"
)

// The published signing vectors of docs/wire.md §6.2 and vectors.txt Part A.
// Sources: aws/aws-sdk-go-v2 aws/signer/v4/stream_test.go
// (TestStreamSigner_GetSignature); smithy-lang/smithy-typescript
// packages/signature-v4/src/SignatureV4.spec.ts ("support event signing");
// smithy-lang/smithy-rs aws/rust-runtime/aws-sigv4/src/event_stream.rs
// (test string_to_sign); awslabs/aws-c-auth tests/test_event_signing.c
// (sigv4_event_signing_test). All Apache-2.0.

func mustHex(t testing.TB, s string) []byte {
	t.Helper()
	b, err := hex.DecodeString(s)
	if err != nil {
		t.Fatalf("bad hex %q: %v", s, err)
	}
	return b
}

func sum(b []byte) *[sha256.Size]byte {
	h := sha256.Sum256(b)
	return &h
}

// fixedClock returns a clock that always reads t.
func fixedClock(t time.Time) func(*SignerOptions) {
	return func(o *SignerOptions) { o.Now = func() time.Time { return t } }
}

// steppingClock returns a clock that reads the given times in turn.
func steppingClock(tb testing.TB, times ...time.Time) func(*SignerOptions) {
	return func(o *SignerOptions) {
		o.Now = func() time.Time {
			if len(times) == 0 {
				tb.Fatal("clock read more often than expected")
			}
			t := times[0]
			times = times[1:]
			return t
		}
	}
}

// A1: headers here are arbitrary bytes, not an encoded :date header, so the
// vector exercises the chain below the envelope layer.
func TestVectorAWSSDKGoStreamSigner(t *testing.T) {
	vectors := []struct {
		headers, payload string
		time             time.Time
		want             string
	}{
		{"foo", "foo", time.Unix(10, 0), "e3a136405ec1152f62136742efd41f8639cd647a1cf21fab12aedb22cccd8999"},
		{"bar", "bar", time.Unix(20, 0), "92a6ad677e839d3003672cb2cefc71ef80d42e8cb300fefce0807e8398c74068"},
		{"baz", "baz", time.Unix(30, 0), "46d6660bd40f2ff5d6246a347895cabe7f4e89d9e1f4c6dad6dabdc801923be1"},
		{"", "", time.Unix(30, 0), "492bcb3e21de447c85f8a9bef6c0eb833e992e405b9b3584be84edaccc5aad18"},
	}
	c := newChain("SECRET", "us-east-1", "transcribestreaming", []byte("foobarbazqux"))
	for i, v := range vectors {
		sig := c.sign(v.time, sum([]byte(v.headers)), sum([]byte(v.payload)))
		if got := hex.EncodeToString(sig[:]); got != v.want {
			t.Errorf("message %d: signature %s, want %s", i+1, got, v.want)
		}
		if got := string(c.prevHex); got != v.want {
			t.Errorf("message %d: chain holds %s, want %s", i+1, got, v.want)
		}
	}
}

// A2: the prior signature is "" and the :date header bytes hold
// 2018-12-29T01:04:06Z while the signing date is 2013-05-24: the STS time
// and the hashed header are independent inputs.
func TestVectorSmithyTypeScriptSignEvent(t *testing.T) {
	headers := []byte{5, ':', 'd', 'a', 't', 'e', 8, 0, 0, 1, 103, 247, 125, 87, 112}
	var date [dateHeaderLen]byte
	encodeDateHeader(&date, 1546045446000)
	if !bytes.Equal(headers, date[:]) {
		t.Fatalf("encodeDateHeader(2018-12-29T01:04:06Z) = %x, want %x", date, headers)
	}
	c := newChain("secret", "REGION", "SERVICE", nil)
	sig := c.sign(time.UnixMilli(1369353600000), sum(headers), sum([]byte("foo")))
	const want = "204bb5e2713e95354680e9522986d3ac0304aeafd33397f39e6540ca51ffe226"
	if got := hex.EncodeToString(sig[:]); got != want {
		t.Errorf("signature %s, want %s", got, want)
	}
	if !strings.Contains(string(c.sts), "\n20130524/REGION/SERVICE/aws4_request\n\n") {
		t.Errorf("STS does not chain from an empty prior signature:\n%s", c.sts)
	}
}

// A3: the full string to sign of smithy-rs, through the Signer: the clock
// reads 123456789 s + 1234 ns, which the :date header truncates to ms.
func TestVectorSmithyRsStringToSign(t *testing.T) {
	msg := &Message{
		Headers: Headers{{Name: "some-header", Value: StringValue("value")}},
		Payload: []byte("test payload"),
	}
	seed := sha256.Sum256([]byte("last message sts"))
	s := NewSigner(aws.Credentials{SecretAccessKey: "fake secret key"}, "us-east-1", "testservice", seed[:],
		fixedClock(time.Unix(123_456_789, 1234)))
	env, err := s.AppendMessage(nil, msg)
	if err != nil {
		t.Fatal(err)
	}
	const want = "AWS4-HMAC-SHA256-PAYLOAD\n" +
		"19731129T213309Z\n" +
		"19731129/us-east-1/testservice/aws4_request\n" +
		"be1f8c7d79ef8e1abc5254a2c70e4da3bfaf4f07328f527444e1fc6ea67273e2\n" +
		"0c0e3b3bf66b59b976181bd7d401927bbd624107303c713fd1e5f3d3c8dd1b1e\n" +
		"f2eba0f2e95967ee9fbc6db5e678d2fd599229c0d04b11e4fc8e0f2a02a806c6"
	if got := string(s.chain.sts); got != want {
		t.Errorf("string to sign:\n%s\nwant:\n%s", got, want)
	}
	var m Message
	if err := Unmarshal(env, &m); err != nil {
		t.Fatal(err)
	}
	if d, _ := m.Headers.Get(DateHeader); d.Int != 123_456_789_000 {
		t.Errorf(":date = %d ms, want 123456789000", d.Int)
	}
}

// A5: the aws-c-auth chain, seed included: the request is signed with
// v4.Signer and the seed read back with SeedFromAuthorization. The events
// are raw payloads "A", "B", "C" and the empty end frame, one second apart.
func TestVectorAWSCAuthEventSigning(t *testing.T) {
	creds := aws.Credentials{AccessKeyID: "access", SecretAccessKey: "secret"}
	req, err := http.NewRequest(http.MethodPost, "https://demo.us-east-1.amazonaws.com/streaming", nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Encoding", "application/vnd.amazon.eventstream")
	req.Header.Set("X-Amz-Content-Sha256", "STREAMING-AWS4-HMAC-SHA256-EVENTS")
	requestTime := time.Date(1981, 1, 16, 6, 30, 0, 0, time.UTC)
	if err := v4.NewSigner().SignHTTP(context.Background(), creds, req, "STREAMING-AWS4-HMAC-SHA256-EVENTS", "demo", "us-east-1", requestTime); err != nil {
		t.Fatal(err)
	}
	const wantAuth = "AWS4-HMAC-SHA256 Credential=access/19810116/us-east-1/demo/aws4_request, " +
		"SignedHeaders=content-encoding;host;x-amz-content-sha256;x-amz-date, " +
		"Signature=e1d8e8c8815e60969f2a34765c9a15945ffc0badbaa4b7e3b163ea19131e949b"
	auth := req.Header.Get("Authorization")
	if auth != wantAuth {
		t.Fatalf("Authorization:\n%s\nwant:\n%s", auth, wantAuth)
	}
	seed, err := SeedFromAuthorization(auth)
	if err != nil {
		t.Fatal(err)
	}

	s := NewSigner(creds, "us-east-1", "demo", seed, steppingClock(t,
		requestTime.Add(1*time.Second), requestTime.Add(2*time.Second),
		requestTime.Add(3*time.Second), requestTime.Add(4*time.Second)))
	var stream []byte
	for _, p := range []string{"A", "B", "C"} {
		if stream, err = s.AppendPayload(stream, []byte(p)); err != nil {
			t.Fatal(err)
		}
	}
	stream = s.AppendEnd(stream)
	want := []string{
		"7aabf85b765e6a4d0d500b6e968657b14726fa3e1eb7e839302728ffd77629a5",
		"f72aa9642f571d24a6e1ae42f10f073ad9448d8a028b6bcd82da081335adda02",
		"632af120435b57ec241d8bfbb12e496dfd5e2730a1a02ac0ab6eaa230ae02e9a",
		"c6f679ddb3af68f5e82f0cf6761244cb2338cf11e7d01a24130aea1b7c17e53e",
	}
	d := NewDecoder(bytes.NewReader(stream))
	v := NewVerifier(creds, "us-east-1", "demo", seed)
	for i, w := range want {
		m, err := d.Decode()
		if err != nil {
			t.Fatalf("envelope %d: %v", i, err)
		}
		sig, _ := m.Headers.Get(ChunkSignatureHeader)
		if got := hex.EncodeToString(sig.Bytes); got != w {
			t.Errorf("chunk %d: signature %s, want %s", i+1, got, w)
		}
		if _, err := v.Verify(m); err != nil {
			t.Errorf("chunk %d: verifier: %v", i+1, err)
		}
	}
	if !v.Ended() {
		t.Error("verifier did not see the end frame")
	}
}

// sagemakerRequest is the HTTP/2 request of vectors.txt Part B2.
func sagemakerRequest(t testing.TB) *http.Request {
	req, err := http.NewRequest(http.MethodPost,
		"https://runtime.sagemaker.us-west-2.amazonaws.com:8443/endpoints/my-endpoint/invocations-bidirectional-stream", nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/vnd.amazon.eventstream")
	req.Header.Set("X-Amz-Content-Sha256", "STREAMING-AWS4-HMAC-SHA256-EVENTS")
	return req
}

var (
	sagemakerCreds = aws.Credentials{AccessKeyID: "AKIDEXAMPLE", SecretAccessKey: "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY"}
	sagemakerTime  = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
)

type logBuffer struct{ bytes.Buffer }

func (l *logBuffer) Logf(_ logging.Classification, format string, v ...any) {
	fmt.Fprintf(&l.Buffer, format, v...)
}

// Part B: the seed signature of the SageMaker request, computed by
// v4.Signer with the streaming payload hash, and read back.
func TestVectorSageMakerSeed(t *testing.T) {
	req := sagemakerRequest(t)
	var log logBuffer
	signer := v4.NewSigner(func(o *v4.SignerOptions) { o.Logger, o.LogSigning = &log, true })
	if err := signer.SignHTTP(context.Background(), sagemakerCreds, req, "STREAMING-AWS4-HMAC-SHA256-EVENTS", "sagemaker", "us-west-2", sagemakerTime); err != nil {
		t.Fatal(err)
	}
	const wantAuth = "AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20260102/us-west-2/sagemaker/aws4_request, " +
		"SignedHeaders=content-type;host;x-amz-content-sha256;x-amz-date, " +
		"Signature=95790b6ae41e58ce0870758168d1920589b93feb7c61d1839675cb6c2e515258"
	if got := req.Header.Get("Authorization"); got != wantAuth {
		t.Errorf("Authorization:\n%s\nwant:\n%s", got, wantAuth)
	}
	const wantCanonical = "POST\n" +
		"/endpoints/my-endpoint/invocations-bidirectional-stream\n" +
		"\n" +
		"content-type:application/vnd.amazon.eventstream\n" +
		"host:runtime.sagemaker.us-west-2.amazonaws.com:8443\n" +
		"x-amz-content-sha256:STREAMING-AWS4-HMAC-SHA256-EVENTS\n" +
		"x-amz-date:20260102T030405Z\n" +
		"\n" +
		"content-type;host;x-amz-content-sha256;x-amz-date\n" +
		"STREAMING-AWS4-HMAC-SHA256-EVENTS"
	const wantSTS = "AWS4-HMAC-SHA256\n20260102T030405Z\n20260102/us-west-2/sagemaker/aws4_request\n" +
		"6a2cc131fe8fe43d1110c29a4af2e72d66903e69d6afd3a0df4705c6d4737211"
	if !strings.Contains(log.String(), wantCanonical) || !strings.Contains(log.String(), wantSTS) {
		t.Errorf("signing log lacks the canonical request or string to sign of Part B2:\n%s", log.String())
	}
	seed, err := SeedFromAuthorization(req.Header.Get("Authorization"))
	if err != nil {
		t.Fatal(err)
	}
	if got := hex.EncodeToString(seed); got != sagemakerChains[1].seedHex {
		t.Errorf("seed %s, want %s", got, sagemakerChains[1].seedHex)
	}
	ref, err := v4.GetSignedRequestSignature(req)
	if err != nil || !bytes.Equal(ref, seed) {
		t.Errorf("v4.GetSignedRequestSignature = %x, %v; SeedFromAuthorization = %x", ref, err, seed)
	}
}

func TestSeedFromAuthorizationErrors(t *testing.T) {
	for _, auth := range []string{
		"",
		"AWS4-HMAC-SHA256 Credential=a/b, SignedHeaders=host",
		"AWS4-HMAC-SHA256 Credential=a/b, SignedHeaders=host, Signature=zz",
		"AWS4-HMAC-SHA256 Credential=a/b, SignedHeaders=host, Signature=0123",
	} {
		if seed, err := SeedFromAuthorization(auth); err == nil {
			t.Errorf("SeedFromAuthorization(%q) = %x, want an error", auth, seed)
		}
	}
}

// sagemakerEvents are the inner events of Part C, with their headers in
// the order the Go SDK writes them: DataType, CompletionState, P, then
// :event-type, :message-type, :content-type.
func sagemakerEvents() []*Message {
	event := func(dataType, state, p string, payload []byte) *Message {
		m := &Message{Payload: payload}
		m.Headers = append(m.Headers, Header{"DataType", StringValue(dataType)}, Header{"CompletionState", StringValue(state)})
		if p != "" {
			m.Headers = append(m.Headers, Header{"P", StringValue(p)})
		}
		m.Headers = append(m.Headers,
			Header{":event-type", StringValue("PayloadPart")},
			Header{":message-type", StringValue("event")},
			Header{":content-type", StringValue("application/octet-stream")})
		return m
	}
	return []*Message{
		event("UTF8", "PARTIAL", "", []byte(`{"inputs":"Hello"}`)),
		event("BINARY", "PARTIAL", "pad", []byte{0x00, 0x01, 0x02, 0xfe, 0xff}),
		event("UTF8", "COMPLETE", "", []byte(`{"inputs":" world"}`)),
	}
}

// Part C: both SageMaker chains, byte for byte: inner messages,
// envelopes, signatures, strings to sign and end frames; then the same
// stream decoded and verified.
func TestVectorSageMakerChains(t *testing.T) {
	const signingKey = "b9b5a81d2e981acb4439896465f19fb35295a4d3aeae20f614cec74d0256fe0d"
	c := newChain(sagemakerCreds.SecretAccessKey, "us-west-2", "sagemaker", nil)
	c.setKey([]byte("20260102"))
	if got := hex.EncodeToString(c.key[:]); got != signingKey {
		t.Errorf("signing key %s, want %s", got, signingKey)
	}
	var date [dateHeaderLen]byte
	encodeDateHeader(&date, sagemakerTime.UnixMilli())
	if got := hex.EncodeToString(date[:]); got != "053a64617465080000019b7ca98c88" {
		t.Errorf(":date header bytes %s", got)
	}

	events := sagemakerEvents()
	for _, vc := range sagemakerChains {
		t.Run(vc.name, func(t *testing.T) {
			seed := mustHex(t, vc.seedHex)
			s := NewSigner(sagemakerCreds, "us-west-2", "sagemaker", seed, fixedClock(sagemakerTime))
			ref := v4.NewStreamSigner(sagemakerCreds, "sagemaker", "us-west-2", seed)
			var stream []byte
			for i, ev := range events {
				inner, err := AppendMessage(nil, ev)
				if err != nil {
					t.Fatal(err)
				}
				if got := hex.EncodeToString(inner); got != vc.inner[i] {
					t.Errorf("event %d: inner message\n%s\nwant\n%s", i+1, got, vc.inner[i])
				}
				start := len(stream)
				if stream, err = s.AppendMessage(stream, ev); err != nil {
					t.Fatal(err)
				}
				if got := hex.EncodeToString(stream[start:]); got != vc.envelopes[i] {
					t.Errorf("event %d: envelope\n%s\nwant\n%s", i+1, got, vc.envelopes[i])
				}
				if got := string(s.chain.sts); got != vc.sts[i] {
					t.Errorf("event %d: string to sign\n%s\nwant\n%s", i+1, got, vc.sts[i])
				}
				if got := s.PrevSignature(); got != vc.sigs[i] {
					t.Errorf("event %d: signature %s, want %s", i+1, got, vc.sigs[i])
				}
				refSig, _ := ref.GetSignature(context.Background(), date[:], inner, sagemakerTime)
				if got := hex.EncodeToString(refSig); got != vc.sigs[i] {
					t.Errorf("event %d: v4.StreamSigner says %s, vector says %s", i+1, got, vc.sigs[i])
				}
			}
			start := len(stream)
			stream = s.AppendEnd(stream)
			if got := hex.EncodeToString(stream[start:]); got != vc.envelopes[3] {
				t.Errorf("end frame\n%s\nwant\n%s", got, vc.envelopes[3])
			}
			if got := string(s.chain.sts); got != vc.sts[3] {
				t.Errorf("end frame: string to sign\n%s\nwant\n%s", got, vc.sts[3])
			}
			if got := s.PrevSignature(); got != vc.sigs[3] {
				t.Errorf("end frame: signature %s, want %s", got, vc.sigs[3])
			}

			// The same stream, the other way: AppendPayload of the
			// pre-encoded inner messages gives the same bytes.
			s2 := NewSigner(sagemakerCreds, "us-west-2", "sagemaker", seed, fixedClock(sagemakerTime))
			var stream2 []byte
			for i := range events {
				stream2, _ = s2.AppendPayload(stream2, mustHex(t, vc.inner[i]))
			}
			stream2 = s2.AppendEnd(stream2)
			if !bytes.Equal(stream, stream2) {
				t.Error("AppendPayload(encoded inner) differs from AppendMessage")
			}

			// Decode, verify and unmarshal.
			d := NewDecoder(bytes.NewReader(stream))
			v := NewVerifier(sagemakerCreds, "us-west-2", "sagemaker", seed)
			var inner Message
			for i := range 4 {
				m, err := d.Decode()
				if err != nil {
					t.Fatalf("envelope %d: %v", i+1, err)
				}
				payload, err := v.Verify(m)
				if err != nil {
					t.Fatalf("envelope %d: %v", i+1, err)
				}
				if i == 3 {
					if len(payload) != 0 {
						t.Errorf("end frame payload %x", payload)
					}
					continue
				}
				if err := Unmarshal(payload, &inner); err != nil {
					t.Fatalf("envelope %d: inner: %v", i+1, err)
				}
				assertMessageEqual(t, &inner, events[i])
			}
			if _, err := d.Decode(); err != io.EOF {
				t.Errorf("after the end frame: %v, want io.EOF", err)
			}
			if !v.Ended() || v.Count() != 4 {
				t.Errorf("verifier: Ended %v, Count %d", v.Ended(), v.Count())
			}
		})
	}
}

// Part D: response-side messages decode to the stated headers and
// payloads, and re-encode byte for byte.
func TestVectorResponseMessages(t *testing.T) {
	var stream []byte
	for _, rv := range responseVectors {
		stream = append(stream, mustHex(t, rv.wire)...)
	}
	d := NewDecoder(bytes.NewReader(stream))
	for _, rv := range responseVectors {
		m, err := d.Decode()
		if err != nil {
			t.Fatalf("%s: %v", rv.name, err)
		}
		if len(m.Headers) != len(rv.headers) {
			t.Errorf("%s: %d headers, want %d", rv.name, len(m.Headers), len(rv.headers))
			continue
		}
		for i, h := range rv.headers {
			got := m.Headers[i]
			if got.Name != h.name || got.Value.Type != TypeString || string(got.Value.Bytes) != h.value {
				t.Errorf("%s: header %d = %s (%v) %q, want %s %q", rv.name, i, got.Name, got.Value.Type, got.Value.Bytes, h.name, h.value)
			}
		}
		if string(m.Payload) != rv.payload {
			t.Errorf("%s: payload %q, want %q", rv.name, m.Payload, rv.payload)
		}
		again, err := AppendMessage(nil, m)
		if err != nil || hex.EncodeToString(again) != rv.wire {
			t.Errorf("%s: re-encoded to %x, %v", rv.name, again, err)
		}
	}
	if _, err := d.Decode(); err != io.EOF {
		t.Errorf("end: %v, want io.EOF", err)
	}
}

// assertMessageEqual fails t unless got and want have the same headers, in
// order, and the same payload.
func assertMessageEqual(t testing.TB, got, want *Message) {
	t.Helper()
	if !messagesEqual(got, want) {
		t.Errorf("message mismatch:\n got %s\nwant %s", describe(got), describe(want))
	}
}

func messagesEqual(a, b *Message) bool {
	if len(a.Headers) != len(b.Headers) || !bytes.Equal(a.Payload, b.Payload) {
		return false
	}
	for i := range a.Headers {
		if a.Headers[i].Name != b.Headers[i].Name || !a.Headers[i].Value.Equal(b.Headers[i].Value) {
			return false
		}
	}
	return true
}

func describe(m *Message) string {
	var b strings.Builder
	for _, h := range m.Headers {
		fmt.Fprintf(&b, "%s:%v=%v ", h.Name, h.Value.Type, h.Value)
	}
	if len(m.Payload) > 64 {
		fmt.Fprintf(&b, "payload[%d]=%x…", len(m.Payload), m.Payload[:64])
	} else {
		fmt.Fprintf(&b, "payload=%x", m.Payload)
	}
	return b.String()
}
