package bidi

import (
	"context"
	"encoding/hex"
	"math/rand/v2"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
)

// sdkSignedHead signs the request newRequest builds for in and u with the
// SDK's signer, the reference requestSigner must match, and returns its
// header.
func sdkSignedHead(t testing.TB, region, userAgent string, in *OpenInput, u *url.URL, creds aws.Credentials, now time.Time) http.Header {
	t.Helper()
	req, err := http.NewRequestWithContext(context.Background(), http.MethodPost, u.String(), nil)
	if err != nil {
		t.Fatalf("building the reference request for %q: %v", u, err)
	}
	req.ContentLength = -1
	c := &Client{userAgent: []string{userAgent}, signer: newRequestSigner(region, signingName)}
	h, _ := c.newRequest(in, u, creds, now)
	for _, k := range []string{headerAmzDate, headerAmzToken, headerAuthorization} {
		delete(h, k)
	}
	req.Header = h
	signer := v4.NewSigner(func(o *v4.SignerOptions) { o.LogSigning = false })
	if err := signer.SignHTTP(context.Background(), creds, req, streamingPayloadHash, signingName, region, now); err != nil {
		t.Fatal(err)
	}
	return req.Header
}

// checkSignature signs the request for in and u with rs and with the SDK,
// and fails unless both give the same headers and rs returns the
// signature of its Authorization.
func checkSignature(t *testing.T, rs *requestSigner, in *OpenInput, u *url.URL, creds aws.Credentials, now time.Time) {
	t.Helper()
	c := &Client{userAgent: []string{"ua/1 test"}, signer: rs}
	got, seed := c.newRequest(in, u, creds, now)
	want := sdkSignedHead(t, rs.region, c.userAgent[0], in, u, creds, now)
	for k, w := range want {
		if g := got[k]; !slices.Equal(g, w) {
			t.Fatalf("URL %q, input %+v, time %v: header %s = %q, want %q (the SDK's)", u, *in, now, k, g, w)
		}
	}
	if len(got) != len(want) {
		t.Fatalf("URL %q: %d headers, want %d: %v vs %v", u, len(got), len(want), got, want)
	}
	auth := want.Get("Authorization")
	if i := strings.LastIndex(auth, "Signature="); i < 0 || auth[i+len("Signature="):] != hex.EncodeToString(seed) {
		t.Fatalf("seed %x does not match %q", seed, auth)
	}
}

// randomText returns up to n bytes drawn from alphabet, with runs of
// spaces and tabs and non-ASCII text among them.
func randomText(r *rand.Rand, n int) string {
	pieces := []string{"a", "Z", "0", "-", "_", ".", "~", " ", "  ", "   ", "\t", "/", "%", "%2F", "+", "=", "&", "?", "#", ":", ";", ",", "é", "音", "\u00a0", "\u0085", " \t ", "x y"}
	var b strings.Builder
	for k := r.IntN(n + 1); k > 0; k-- {
		b.WriteString(pieces[r.IntN(len(pieces))])
	}
	return b.String()
}

// TestRequestSignatureMatchesSDK signs random requests with requestSigner
// and with the SDK's v4 signer and requires the same X-Amz-Date,
// X-Amz-Security-Token and Authorization. One signer per region signs
// every request, with secrets and days that repeat and change, so that its
// cached key is both reused and replaced.
func TestRequestSignatureMatchesSDK(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	bases := []string{
		"https://runtime.sagemaker.us-east-1.amazonaws.com:8443",
		"https://runtime.sagemaker.eu-west-1.amazonaws.com:8443/",
		"https://127.0.0.1:443", "https://127.0.0.1:8443/prefix/",
		"https://[::1]:443", "https://[::1]:8443/a%20b/", "https://[::1]",
		"http://localhost:80/", "http://localhost:8080/x/y", "https://Host.Example.COM",
		"https://h:/", "https://example.com/%C3%A9/", "HTTPS://example.com:443/p",
	}
	regions := []string{"us-east-1", "eu-west-1", "ap-southeast-2", "cn-north-1", "x"}
	signers := map[string]*requestSigner{}
	secrets := []string{"wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY", "s", "", strings.Repeat("k", 61), strings.Repeat("+/", 70)}
	days := []time.Time{
		time.Date(2026, 11, 27, 0, 0, 0, 0, time.UTC),
		time.Date(2026, 11, 28, 0, 0, 0, 0, time.UTC),
		time.Date(1999, 12, 31, 0, 0, 0, 0, time.UTC),
		time.Date(2100, 2, 28, 0, 0, 0, 0, time.UTC),
	}
	n := 3000
	if testing.Short() {
		n = 300
	}
	for i := 0; i < n; i++ {
		region := regions[r.IntN(len(regions))]
		rs := signers[region]
		if rs == nil {
			rs = newRequestSigner(region, signingName)
			signers[region] = rs
		}
		base, err := url.Parse(bases[r.IntN(len(bases))])
		if err != nil {
			t.Fatal(err)
		}
		in := &OpenInput{EndpointName: randomText(r, 6)}
		if r.IntN(2) == 0 {
			in.TargetVariant = randomText(r, 5)
		}
		if r.IntN(2) == 0 {
			in.ModelInvocationPath = randomText(r, 5)
		}
		if r.IntN(2) == 0 {
			in.ModelQueryString = randomText(r, 5)
		}
		creds := aws.Credentials{AccessKeyID: "AKID" + randomText(r, 2), SecretAccessKey: secrets[r.IntN(len(secrets))]}
		if r.IntN(3) == 0 {
			creds.SessionToken = randomText(r, 8)
		}
		now := days[r.IntN(len(days))].Add(time.Duration(r.Int64N(int64(24 * time.Hour))))
		if r.IntN(4) == 0 {
			now = now.In(time.FixedZone("elsewhere", 5*3600+1800))
		}
		checkSignature(t, rs, in, invocationURL(base, in.EndpointName), creds, now)
	}
}

// FuzzRequestSignature compares requestSigner with the SDK's signer on
// fuzzed inputs.
func FuzzRequestSignature(f *testing.F) {
	f.Add("https://runtime.sagemaker.us-east-1.amazonaws.com:8443", "my-endpoint", "", "", "", "", "secret", int64(1795000000))
	f.Add("https://[::1]:443/p%20q/", "a b/c", "  v  1 ", "/invocations", "a=1&b=2", "token", strings.Repeat("k", 70), int64(0))
	f.Add("http://h:80", "é", "\t", "", "x  y", "", "", int64(-1))
	f.Fuzz(func(t *testing.T, base, name, variant, path, query, token, secret string, unix int64) {
		b, err := url.Parse(base)
		if err != nil || b.Host == "" || (b.Scheme != "http" && b.Scheme != "https") {
			return
		}
		if unix < -62135596800 || unix > 253402300799 { // years 1 to 9999
			return
		}
		in := &OpenInput{EndpointName: name, TargetVariant: variant, ModelInvocationPath: path, ModelQueryString: query}
		u := invocationURL(b, name)
		if _, err := url.Parse(u.String()); err != nil {
			return // the SDK's side needs a URL that parses
		}
		creds := aws.Credentials{AccessKeyID: "AKID", SecretAccessKey: secret, SessionToken: token}
		checkSignature(t, newRequestSigner("us-east-1", signingName), in, u, creds, time.Unix(unix, 0))
	})
}

// BenchmarkRequestSigning signs the request of one Open with the SDK's
// signer (as Open did) and with requestSigner, side by side.
func BenchmarkRequestSigning(b *testing.B) {
	base, _ := url.Parse("https://runtime.sagemaker.us-east-1.amazonaws.com:8443")
	in := &OpenInput{EndpointName: "my-endpoint", TargetVariant: "variant-1"}
	u := invocationURL(base, in.EndpointName)
	creds := aws.Credentials{AccessKeyID: "AKIDEXAMPLE", SecretAccessKey: "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY", SessionToken: "token"}
	now := time.Now()
	b.Run("impl=sdk", func(b *testing.B) {
		signer := v4.NewSigner(func(o *v4.SignerOptions) { o.LogSigning = false })
		c := &Client{userAgent: []string{userAgent}, signer: newRequestSigner("us-east-1", signingName)}
		b.ReportAllocs()
		for b.Loop() {
			req, err := http.NewRequestWithContext(context.Background(), http.MethodPost, u.String(), nil)
			if err != nil {
				b.Fatal(err)
			}
			req.ContentLength = -1
			h := make(http.Header, 8)
			h["Content-Type"] = []string{contentTypeEventStream}
			h[headerContentSHA256] = []string{streamingPayloadHash}
			h["User-Agent"] = c.userAgent
			h[headerTargetVariant] = []string{in.TargetVariant}
			req.Header = h
			if err := signer.SignHTTP(context.Background(), creds, req, streamingPayloadHash, signingName, "us-east-1", now); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("impl=ours", func(b *testing.B) {
		c := &Client{userAgent: []string{userAgent}, signer: newRequestSigner("us-east-1", signingName)}
		b.ReportAllocs()
		for b.Loop() {
			c.newRequest(in, u, creds, now)
		}
	})
}
