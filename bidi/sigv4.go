package bidi

import (
	"crypto/sha256"
	"encoding/hex"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"

	"github.com/sagemaker-bidi/sagemaker-bidi/internal/sigv4"
)

// requestSigner signs the request that opens a stream with AWS Signature
// Version 4 (docs/wire.md §3): it sets X-Amz-Date, X-Amz-Security-Token
// (with temporary credentials) and Authorization exactly as the SDK's
// v4.Signer.SignHTTP does for the same request, and returns the
// signature, the seed of the event signature chain.
//
// It replaces the SDK's signer on the path of every Open: the general
// signer builds the canonical request from an *http.Request in about 50
// allocations; this one knows the request's shape (a POST without query
// whose body is signed per event) and builds it in one buffer. The SDK's
// signer remains the reference: TestRequestSignatureMatchesSDK and
// FuzzRequestSignature compare the two on random requests, and
// BenchmarkRequestSigning measures both. biditest verifies signatures with
// code of its own, so that the two sides do not share a mistake.
//
// A client has one requestSigner, used by its sessions concurrently; its
// fields are set at construction. Signing keys come from
// internal/sigv4's cache, shared with the sessions' event signers.
type requestSigner struct {
	region  string
	service string
}

// SigV4 names and formats of the request signature.
const (
	sigV4Algorithm      = "AWS4-HMAC-SHA256"
	amzDateFormat       = "20060102T150405Z"
	shortDateFormat     = "20060102"
	headerAmzDate       = "X-Amz-Date"
	headerAmzToken      = "X-Amz-Security-Token"
	headerAuthorization = "Authorization"
)

func newRequestSigner(region, service string) *requestSigner {
	return &requestSigner{region: region, service: service}
}

// sign signs the request to u whose header is h, with creds at now. It
// adds the signature headers to h and returns the signature.
func (rs *requestSigner) sign(h http.Header, u *url.URL, creds aws.Credentials, now time.Time) [sha256.Size]byte {
	var dateBuf [len(amzDateFormat)]byte
	date := now.UTC().AppendFormat(dateBuf[:0], amzDateFormat)
	day := date[:len(shortDateFormat)]
	// The values of the three headers added: one array.
	added := new([3]string)
	if creds.SessionToken != "" {
		added[2] = creds.SessionToken
		h[headerAmzToken] = added[2:3:3]
	}

	// The signed headers: host, X-Amz-Date (set at the end) and every
	// header of h but those SigV4 leaves out, by lower-case name. h is
	// newRequest's: its keys are distinct canonical names, without
	// Content-Length (the body's length is unknown).
	var signedBuf [16]signedHeader
	signed := append(signedBuf[:0], signedHeader{name: "host", from: fromURL}, signedHeader{name: "x-amz-date", from: fromDate})
	for k, vs := range h {
		if k == headerAmzDate || sigV4Ignored(k) {
			continue
		}
		signed = append(signed, signedHeader{name: lowerHeaderName(k), values: vs})
	}
	slices.SortFunc(signed, func(a, b signedHeader) int { return strings.Compare(a.name, b.name) })

	var buf [1024]byte
	b := append(buf[:0], http.MethodPost...)
	b = append(b, '\n')
	b = appendSigV4Path(b, canonicalPath(u))
	b = append(b, '\n', '\n') // and an empty canonical query string
	for _, sh := range signed {
		b = append(b, sh.name...)
		b = append(b, ':')
		switch sh.from {
		case fromURL:
			b = appendStripped(b, signingHost(u))
		case fromDate:
			b = append(b, date...)
		default:
			for j, v := range sh.values {
				if j > 0 {
					b = append(b, ',')
				}
				b = appendStripped(b, strings.TrimSpace(v))
			}
		}
		b = append(b, '\n')
	}
	b = append(b, '\n')
	signedStart := len(b)
	for i, sh := range signed {
		if i > 0 {
			b = append(b, ';')
		}
		b = append(b, sh.name...)
	}
	signedEnd := len(b)
	b = append(b, '\n')
	b = append(b, streamingPayloadHash...)
	creqHash := sha256.Sum256(b)

	// The string to sign, after the canonical request in the same buffer.
	stsStart := len(b)
	b = append(b, sigV4Algorithm+"\n"...)
	b = append(b, date...)
	b = append(b, '\n')
	scopeStart := len(b)
	b = append(b, day...)
	b = append(b, '/')
	b = append(b, rs.region...)
	b = append(b, '/')
	b = append(b, rs.service...)
	b = append(b, "/"+sigv4.Terminator...)
	scopeEnd := len(b)
	b = append(b, '\n')
	b = hex.AppendEncode(b, creqHash[:])
	key := sigv4.SigningKey(creds.SecretAccessKey, day, rs.region, rs.service)
	sig := sigv4.HMAC(key[:], b[stsStart:])
	clear(key[:])

	// X-Amz-Date and Authorization, after the string to sign, made one
	// string.
	outStart := len(b)
	b = append(b, date...)
	b = append(b, sigV4Algorithm+" Credential="...)
	b = append(b, creds.AccessKeyID...)
	b = append(b, '/')
	b = append(b, b[scopeStart:scopeEnd]...)
	b = append(b, ", SignedHeaders="...)
	b = append(b, b[signedStart:signedEnd]...)
	b = append(b, ", Signature="...)
	b = hex.AppendEncode(b, sig[:])
	out := string(b[outStart:])
	added[0], added[1] = out[:len(date)], out[len(date):]
	h[headerAmzDate] = added[0:1:1]
	h[headerAuthorization] = added[1:2:2]
	return sig
}

// signedHeader is a header of the canonical request: its lower-case name
// and where its value comes from.
type signedHeader struct {
	name   string
	from   valueSource
	values []string // fromHeader: the header's values
}

// valueSource says where a signed header's value comes from.
type valueSource uint8

const (
	fromHeader valueSource = iota // the request's header map
	fromURL                       // host: the URL's host
	fromDate                      // x-amz-date: the signing time
)

// sigV4Ignored reports whether SigV4 signing leaves header k (as written
// in the header map) out of the signature, as the SDK does.
func sigV4Ignored(k string) bool {
	switch k {
	case "Authorization", "User-Agent", "X-Amzn-Trace-Id", "Expect", "Transfer-Encoding":
		return true
	}
	return false
}

// lowerHeaderName returns header name k in lower case, without
// allocating for the names this package sends.
func lowerHeaderName(k string) string {
	switch k {
	case "Content-Type":
		return "content-type"
	case headerContentSHA256:
		return "x-amz-content-sha256"
	case headerAmzToken:
		return "x-amz-security-token"
	case headerTargetVariant:
		return "x-amzn-sagemaker-target-variant"
	case headerModelInvocationPath:
		return "x-amzn-sagemaker-model-invocation-path"
	case headerModelQueryString:
		return "x-amzn-sagemaker-model-query-string"
	}
	return strings.ToLower(k)
}

// appendStripped appends v without leading and trailing spaces and with
// every run of inner spaces collapsed to one (only ' ', as SigV4 says).
func appendStripped(b []byte, v string) []byte {
	v = strings.Trim(v, " ")
	for {
		i := strings.Index(v, "  ")
		if i < 0 {
			return append(b, v...)
		}
		b = append(b, v[:i+1]...)
		v = strings.TrimLeft(v[i:], " ")
	}
}

// canonicalPath is the path of u as sent, escaped ("/" when empty).
func canonicalPath(u *url.URL) string {
	if p := u.EscapedPath(); p != "" {
		return p
	}
	return "/"
}

// appendSigV4Path appends the escaped path p escaped once more, every byte
// but A-Z a-z 0-9 - . _ ~ and '/' as %XX: SigV4 encodes the path twice
// for every service but S3.
func appendSigV4Path(b []byte, p string) []byte {
	const hexUpper = "0123456789ABCDEF"
	for i := 0; i < len(p); i++ {
		if c := p[i]; unreserved(c) || c == '/' {
			b = append(b, c)
		} else {
			b = append(b, '%', hexUpper[c>>4], hexUpper[c&15])
		}
	}
	return b
}

// signingHost is the host signed for u: its host, without an empty port
// (as net/http's request has it) or the scheme's default one (as the SDK's
// signer drops it, an IPv6 literal then losing its brackets too).
func signingHost(u *url.URL) string {
	host := u.Host
	if strings.LastIndexByte(host, ':') > strings.LastIndexByte(host, ']') {
		host = strings.TrimSuffix(host, ":")
	}
	colon := strings.IndexByte(host, ':')
	if colon < 0 {
		return host
	}
	var port string
	switch i := strings.Index(host, "]:"); {
	case i >= 0:
		port = host[i+2:]
	case strings.Contains(host, "]"):
		return host
	default:
		port = host[colon+1:]
	}
	scheme := strings.ToLower(u.Scheme)
	if !(scheme == "https" && port == "443") && !(scheme == "http" && port == "80") {
		return host
	}
	if i := strings.IndexByte(host, ']'); i >= 0 {
		return strings.TrimPrefix(host[:i], "[")
	}
	return host[:colon]
}
