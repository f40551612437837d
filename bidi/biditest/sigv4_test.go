package biditest

import (
	"crypto/hmac"
	"encoding/hex"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
)

// The credentials, time and host of the known-answer vectors (docs/wire.md
// §3.4 uses the same).
var (
	kaCreds = aws.Credentials{AccessKeyID: "AKIDEXAMPLE", SecretAccessKey: "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY"}
	kaTime  = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
)

const kaHost = "runtime.sagemaker.us-west-2.amazonaws.com:8443"

// kaServer returns an unstarted server set up as Start would, with the
// known-answer credentials and a clock 4 minutes after kaTime.
func kaServer() *Server {
	s := NewUnstartedServer(nil)
	s.Credentials = kaCreds
	s.Now = func() time.Time { return kaTime.Add(4 * time.Minute) }
	s.creds, s.region, s.maxSkew = s.Credentials, defaultRegion, defaultMaxClockSkew
	return s
}

// jsRequest returns the request AWS's JavaScript SDK sends over HTTP/2,
// as the server sees it: :authority (r.Host) and no host header, with its
// bookkeeping headers, signed with the given SignedHeaders and signature.
func jsRequest(t *testing.T, signedHeaders, signature string) *http.Request {
	r := &http.Request{
		Method: "POST", Proto: "HTTP/2.0", ProtoMajor: 2,
		Host:   kaHost,
		URL:    &url.URL{Path: "/endpoints/my-endpoint/invocations-bidirectional-stream"},
		Header: http.Header{},
	}
	r.Header.Set("Amz-Sdk-Invocation-Id", "5a0c1e4e-7d34-4c84-9a52-0c3a1c9e2b11")
	r.Header.Set("Amz-Sdk-Request", "attempt=1; max=3")
	r.Header.Set("Content-Type", "application/vnd.amazon.eventstream")
	r.Header.Set("X-Amz-Content-Sha256", "STREAMING-AWS4-HMAC-SHA256-EVENTS")
	r.Header.Set("X-Amz-Date", "20260102T030405Z")
	r.Header.Set("X-Amz-User-Agent", "aws-sdk-js/3.901.0  ua/2.1")
	r.Header.Set("User-Agent", "not signed")
	r.Header.Set("Authorization", "AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20260102/us-west-2/sagemaker/aws4_request, SignedHeaders="+
		signedHeaders+", Signature="+signature)
	return r.WithContext(t.Context())
}

const jsSignedHeaders = ":authority;amz-sdk-invocation-id;amz-sdk-request;content-type;x-amz-content-sha256;x-amz-date;x-amz-user-agent"

// jsCanonicalRequest is the canonical request of jsRequest, written out by
// hand from the SigV4 algorithm: the pseudo-header sorts first, the
// x-amz-user-agent value has its run of spaces collapsed.
const jsCanonicalRequest = `POST
/endpoints/my-endpoint/invocations-bidirectional-stream

:authority:runtime.sagemaker.us-west-2.amazonaws.com:8443
amz-sdk-invocation-id:5a0c1e4e-7d34-4c84-9a52-0c3a1c9e2b11
amz-sdk-request:attempt=1; max=3
content-type:application/vnd.amazon.eventstream
x-amz-content-sha256:STREAMING-AWS4-HMAC-SHA256-EVENTS
x-amz-date:20260102T030405Z
x-amz-user-agent:aws-sdk-js/3.901.0 ua/2.1

:authority;amz-sdk-invocation-id;amz-sdk-request;content-type;x-amz-content-sha256;x-amz-date;x-amz-user-agent
STREAMING-AWS4-HMAC-SHA256-EVENTS`

// jsSignature is handSign of jsCanonicalRequest, kept as a known answer.
const jsSignature = "444d6bc86bf50155cd2df0171344049678b34028d5f0eeacfab5a8bbb99717c9"

// TestVerifySeedAuthorityForm: a request signed as AWS's JavaScript SDK
// signs it over HTTP/2, with ":authority" in place of "host", is verified
// from its own SignedHeaders, and its signature is the chain's seed.
func TestVerifySeedAuthorityForm(t *testing.T) {
	sig := handSign(kaCreds.SecretAccessKey, "20260102T030405Z", "us-west-2", jsCanonicalRequest)
	if sig != jsSignature {
		t.Fatalf("hand-computed signature %s, want the recorded %s", sig, jsSignature)
	}
	s := kaServer()
	r := jsRequest(t, jsSignedHeaders, sig)
	if got := canonicalRequest(r, strings.Split(jsSignedHeaders, ";"), streamingPayloadHash); got != jsCanonicalRequest {
		t.Fatalf("canonical request:\n%s\nwant:\n%s", got, jsCanonicalRequest)
	}
	seed, v := s.verifySeed(r)
	if v != nil {
		t.Fatal(v)
	}
	if hex.EncodeToString(seed) != sig {
		t.Fatalf("seed %x, want %s", seed, sig)
	}

	// Unsigned headers may change; signed ones may not.
	r.Header.Set("User-Agent", "another agent")
	r.Header.Set("Accept-Encoding", "gzip")
	if _, v := s.verifySeed(r); v != nil {
		t.Fatalf("unsigned headers changed: %v", v)
	}
	for name, mod := range map[string]func(*http.Request){
		"signed header changed":  func(r *http.Request) { r.Header.Set("Amz-Sdk-Request", "attempt=2; max=3") },
		"authority changed":      func(r *http.Request) { r.Host = "runtime.sagemaker.us-west-2.amazonaws.com" },
		"path changed":           func(r *http.Request) { r.URL.Path = "/endpoints/other/invocations-bidirectional-stream" },
		"signed header removed":  func(r *http.Request) { r.Header.Del("X-Amz-User-Agent") },
		"signed header repeated": func(r *http.Request) { r.Header.Add("Amz-Sdk-Request", "again") },
	} {
		r := jsRequest(t, jsSignedHeaders, sig)
		mod(r)
		if _, v := s.verifySeed(r); v == nil || v.Rule != ruleSignature || !strings.Contains(v.Message, "does not match") {
			t.Errorf("%s: %v, want a signature mismatch", name, v)
		}
	}
}

// TestVerifySeedHostForm: the same request signed with "host" instead of
// ":authority" (as aws-sdk-go-v2 and the Rust SDK sign) is verified too.
func TestVerifySeedHostForm(t *testing.T) {
	signed := "amz-sdk-invocation-id;amz-sdk-request;content-type;host;x-amz-content-sha256;x-amz-date;x-amz-user-agent"
	creq := strings.Replace(jsCanonicalRequest, ":authority:"+kaHost+"\n", "", 1)
	creq = strings.Replace(creq, "content-type:application/vnd.amazon.eventstream\n",
		"content-type:application/vnd.amazon.eventstream\nhost:"+kaHost+"\n", 1)
	creq = strings.Replace(creq, jsSignedHeaders, signed, 1)
	sig := handSign(kaCreds.SecretAccessKey, "20260102T030405Z", "us-west-2", creq)
	if _, v := kaServer().verifySeed(jsRequest(t, signed, sig)); v != nil {
		t.Fatal(v)
	}
	// Signing both is allowed too: they carry the same value.
	both := ":authority;" + signed
	creqBoth := strings.Replace(creq, "\n\namz-sdk-invocation-id", "\n\n:authority:"+kaHost+"\namz-sdk-invocation-id", 1)
	creqBoth = strings.Replace(creqBoth, "\n"+signed+"\n", "\n"+both+"\n", 1)
	sig = handSign(kaCreds.SecretAccessKey, "20260102T030405Z", "us-west-2", creqBoth)
	if _, v := kaServer().verifySeed(jsRequest(t, both, sig)); v != nil {
		t.Fatal(v)
	}
}

// TestVerifySeedRejections: what is wrong is still refused, with the
// service's error types and messages.
func TestVerifySeedRejections(t *testing.T) {
	sig := handSign(kaCreds.SecretAccessKey, "20260102T030405Z", "us-west-2", jsCanonicalRequest)
	tests := []struct {
		name   string
		signed string
		mod    func(*http.Request)
		want   string
	}{
		{"neither host nor :authority signed", strings.Replace(jsSignedHeaders, ":authority;", "", 1), nil,
			"'Host' or ':authority' must be a 'SignedHeader' in the AWS Authorization."},
		{"unsigned x-amz header", jsSignedHeaders, func(r *http.Request) { r.Header.Set("X-Amz-Foo", "bar") },
			"'x-amz-foo' must be a 'SignedHeader'"},
		{"unsigned SageMaker header", jsSignedHeaders, func(r *http.Request) { r.Header.Set("X-Amzn-SageMaker-Target-Variant", "v1") },
			"'x-amzn-sagemaker-target-variant' must be a 'SignedHeader'"},
		{"x-amz-date not signed", strings.Replace(jsSignedHeaders, ";x-amz-date", "", 1), nil,
			"'x-amz-date' must be a 'SignedHeader'"},
		{"unsorted SignedHeaders", "amz-sdk-request;:authority;amz-sdk-invocation-id;content-type;x-amz-content-sha256;x-amz-date;x-amz-user-agent", nil,
			"sorted"},
		{"upper-case SignedHeaders", strings.Replace(jsSignedHeaders, "content-type", "Content-Type", 1), nil, "lower-case"},
		{"unknown pseudo-header", ":authority;:protocol;amz-sdk-invocation-id", nil, "not an HTTP/2 request pseudo-header"},
		{"expired", jsSignedHeaders, func(r *http.Request) { r.Header.Set("X-Amz-Date", "20260102T024905Z") },
			"Signature expired: 20260102T024905Z is now earlier than 20260102T025305Z (20260102T030805Z - 15 min.)"},
		{"not yet current", jsSignedHeaders, func(r *http.Request) { r.Header.Set("X-Amz-Date", "20260102T032405Z") },
			"Signature not yet current: 20260102T032405Z is still later than 20260102T032305Z (20260102T030805Z + 15 min.)"},
		{"wrong region", jsSignedHeaders, func(r *http.Request) {
			r.Header.Set("Authorization", strings.Replace(r.Header.Get("Authorization"), "us-west-2", "eu-west-1", 1))
		}, "Credential should be scoped to a valid region"},
		{"wrong service", jsSignedHeaders, func(r *http.Request) {
			r.Header.Set("Authorization", strings.Replace(r.Header.Get("Authorization"), "/sagemaker/", "/bedrock/", 1))
		}, "Credential should be scoped to correct service"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := jsRequest(t, tt.signed, sig)
			if tt.mod != nil {
				tt.mod(r)
			}
			_, v := kaServer().verifySeed(r)
			if v == nil || v.Rule != ruleSignature || v.StatusCode != http.StatusForbidden ||
				v.ErrorType != "InvalidSignatureException" || !strings.Contains(v.Message, tt.want) {
				t.Fatalf("verifySeed = %v, want 403 InvalidSignatureException %q", v, tt.want)
			}
		})
	}
}

// asReceived returns the request a server receives for req, sent over
// HTTP/2: the authority in Host, the URL as parsed from :path.
func asReceived(t *testing.T, req *http.Request) *http.Request {
	t.Helper()
	u, err := url.ParseRequestURI(req.URL.RequestURI())
	if err != nil {
		t.Fatal(err)
	}
	r := &http.Request{Method: req.Method, Proto: "HTTP/2.0", ProtoMajor: 2, Host: req.URL.Host, URL: u, Header: req.Header.Clone()}
	return r.WithContext(t.Context())
}

// TestVerifySeedMatchesV4Signer cross-checks the canonicalisation with
// aws-sdk-go-v2's own v4.Signer on requests with extra signed headers,
// session tokens, repeated and space-padded values, a query string and a
// path that needs escaping: every signature it makes is accepted, and a
// change to any signed input is refused.
func TestVerifySeedMatchesV4Signer(t *testing.T) {
	tests := []struct {
		name  string
		creds aws.Credentials
		path  string
		hdr   map[string][]string
	}{
		{"bare", kaCreds, "/endpoints/e/invocations-bidirectional-stream", nil},
		{"SDK headers", kaCreds, "/endpoints/my-endpoint/invocations-bidirectional-stream", map[string][]string{
			"Amz-Sdk-Invocation-Id": {"id-1"}, "Amz-Sdk-Request": {"attempt=1; max=3"},
			"X-Amzn-Sagemaker-Target-Variant": {"v1"}, "X-Amzn-Sagemaker-Model-Query-String": {"a=b%2Fc"},
		}},
		{"session token", aws.Credentials{AccessKeyID: "ASIAEXAMPLE", SecretAccessKey: "secret", SessionToken: "token/with+chars="},
			"/endpoints/e/invocations-bidirectional-stream", nil},
		{"repeated and padded values", kaCreds, "/endpoints/e/invocations-bidirectional-stream", map[string][]string{
			"X-Custom": {"  a   b  ", "c"}, "X-Amz-Meta-One": {"1"},
		}},
		{"query string", kaCreds, "/endpoints/e/invocations-bidirectional-stream?b=2&a=1&a=0&c=x%2Fy&d=", nil},
		{"escaped path", kaCreds, "/endpoints/a%3Ab%20c/invocations-bidirectional-stream", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req, err := http.NewRequestWithContext(t.Context(), "POST", "https://"+kaHost+tt.path, nil)
			if err != nil {
				t.Fatal(err)
			}
			req.Header.Set("Content-Type", eventStreamContentType)
			req.Header.Set("X-Amz-Content-Sha256", streamingPayloadHash)
			for k, v := range tt.hdr {
				req.Header[k] = v
			}
			if err := v4.NewSigner().SignHTTP(t.Context(), tt.creds, req, streamingPayloadHash, "sagemaker", defaultRegion, kaTime); err != nil {
				t.Fatal(err)
			}
			s := kaServer()
			s.creds = tt.creds
			seed, v := s.verifySeed(asReceived(t, req))
			if v != nil {
				t.Fatalf("%v\nAuthorization: %s", v, req.Header.Get("Authorization"))
			}
			if want, _ := hex.DecodeString(authSignature(req)); !hmac.Equal(seed, want) {
				t.Fatalf("seed %x, want the signature %x", seed, want)
			}
			tampered := asReceived(t, req)
			tampered.Header.Set("Content-Type", eventStreamContentType+"; charset=x")
			if _, v := s.verifySeed(tampered); v == nil {
				t.Fatal("a change to a signed header was accepted")
			}
		})
	}
}

// authSignature returns the Signature element of req's Authorization.
func authSignature(req *http.Request) string {
	_, sig, _ := strings.Cut(req.Header.Get("Authorization"), "Signature=")
	return sig
}
