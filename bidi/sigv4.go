package bidi

import (
	"crypto/sha256"
	"encoding/hex"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
)

// requestSigner signs the request that opens a stream with AWS Signature
// Version 4 (docs/wire.md §3): it sets X-Amz-Date, X-Amz-Security-Token
// (with temporary credentials) and Authorization exactly as the SDK's
// v4.Signer.SignHTTP does for the same request, and returns the
// signature, the seed of the event signature chain.
//
// It replaces the SDK's signer on the path of every Open: the general
// signer builds the canonical request from an *http.Request in about 40
// allocations; this one knows the request's shape (a POST without query
// whose body is signed per event) and builds it in one buffer. The SDK's
// signer remains the reference: TestRequestSignatureMatchesSDK and
// FuzzRequestSignature compare the two on random requests, and
// BenchmarkRequestSigning measures both. biditest verifies signatures with
// code of its own, so that the two sides do not share a mistake.
//
// A client has one requestSigner, used by its sessions concurrently. The
// signing key of the last day, secret and region it signed for is kept:
// it changes once a day, and deriving it costs four HMACs. mu guards the
// cached key; region and service are set at construction.
type requestSigner struct {
	region  string
	service string

	mu     sync.Mutex
	secret string // the secret the key was derived from
	day    [len(shortDateFormat)]byte
	key    [sha256.Size]byte
	valid  bool
}

// SigV4 names and formats of the request signature.
const (
	sigV4Algorithm     = "AWS4-HMAC-SHA256"
	sigV4Terminator    = "aws4_request"
	amzDateFormat      = "20060102T150405Z"
	shortDateFormat    = "20060102"
	headerAmzDate      = "X-Amz-Date"
	headerAmzToken     = "X-Amz-Security-Token"
	headerAuthorizaton = "Authorization"
)

func newRequestSigner(region, service string) *requestSigner {
	return &requestSigner{region: region, service: service}
}

// sign signs the request to u whose header is h, with creds at now. It
// adds the signature headers to h and returns the signature.
func (rs *requestSigner) sign(h http.Header, u *url.URL, creds aws.Credentials, now time.Time) [sha256.Size]byte {
	t := now.UTC()
	var dateBuf [len(amzDateFormat)]byte
	amzDate := string(t.AppendFormat(dateBuf[:0], amzDateFormat))
	h[headerAmzDate] = []string{amzDate}
	if creds.SessionToken != "" {
		h[headerAmzToken] = []string{creds.SessionToken}
	}

	// The signed headers: host and every header of h but those SigV4
	// leaves out, lower-cased and sorted.
	var namesBuf [16]string
	names := append(namesBuf[:0], "host")
	for k := range h {
		if sigV4Ignored(k) || strings.EqualFold(k, "Content-Length") {
			continue
		}
		names = append(names, lowerHeaderName(k))
	}
	slices.Sort(names)
	names = slices.Compact(names) // keys that differ only in case: their values are merged below

	b := make([]byte, 0, 1024)
	b = append(b, http.MethodPost...)
	b = append(b, '\n')
	b = appendSigV4Path(b, canonicalPath(u))
	b = append(b, '\n', '\n') // and an empty canonical query string
	for _, name := range names {
		b = append(b, name...)
		b = append(b, ':')
		if name == "host" {
			b = appendStripped(b, signingHost(u))
		} else {
			b = appendHeaderValues(b, h, name)
		}
		b = append(b, '\n')
	}
	b = append(b, '\n')
	signedStart := len(b)
	for i, name := range names {
		if i > 0 {
			b = append(b, ';')
		}
		b = append(b, name...)
	}
	signedEnd := len(b)
	b = append(b, '\n')
	b = append(b, streamingPayloadHash...)
	creqHash := sha256.Sum256(b)

	// The string to sign, after the canonical request in the same buffer.
	stsStart := len(b)
	b = append(b, sigV4Algorithm+"\n"...)
	b = append(b, amzDate...)
	b = append(b, '\n')
	scopeStart := len(b)
	b = append(b, amzDate[:len(shortDateFormat)]...)
	b = append(b, '/')
	b = append(b, rs.region...)
	b = append(b, '/')
	b = append(b, rs.service...)
	b = append(b, "/"+sigV4Terminator...)
	scopeEnd := len(b)
	b = append(b, '\n')
	b = hex.AppendEncode(b, creqHash[:])
	key := rs.signingKey(creds.SecretAccessKey, amzDate[:len(shortDateFormat)])
	sig := hmacSHA256(&key, b[stsStart:])
	clear(key[:])

	// Authorization, after the string to sign.
	authStart := len(b)
	b = append(b, sigV4Algorithm+" Credential="...)
	b = append(b, creds.AccessKeyID...)
	b = append(b, '/')
	b = append(b, b[scopeStart:scopeEnd]...)
	b = append(b, ", SignedHeaders="...)
	b = append(b, b[signedStart:signedEnd]...)
	b = append(b, ", Signature="...)
	b = hex.AppendEncode(b, sig[:])
	h[headerAuthorizaton] = []string{string(b[authStart:])}
	return sig
}

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
	case headerAmzDate:
		return "x-amz-date"
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

// appendHeaderValues appends the canonical value of the header whose
// lower-case name is name: every value of every key of h with that name,
// each trimmed and with runs of spaces collapsed, joined by commas.
func appendHeaderValues(b []byte, h http.Header, name string) []byte {
	first := true
	for k, vs := range h {
		if !strings.EqualFold(k, name) || sigV4Ignored(k) {
			continue
		}
		for _, v := range vs {
			if !first {
				b = append(b, ',')
			}
			first = false
			b = appendStripped(b, strings.TrimSpace(v))
		}
	}
	return b
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
	if u.Opaque != "" {
		// Not a URL this package builds; signed as the SDK would.
		p := u.Opaque
		if i := strings.IndexByte(p, '?'); i >= 0 {
			p = p[:i]
		}
		p = strings.TrimPrefix(p, "//")
		if i := strings.IndexByte(p, '/'); i >= 0 {
			return p[i:]
		}
		return "/"
	}
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

// signingKey returns the SigV4 signing key for secret on day (yyyymmdd),
// the client's region and its service, deriving it when it is not the
// cached one.
func (rs *requestSigner) signingKey(secret, day string) [sha256.Size]byte {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	if rs.valid && rs.secret == secret && string(rs.day[:]) == day {
		return rs.key
	}
	// kSigning = HMAC(HMAC(HMAC(HMAC("AWS4"+secret, day), region), service), "aws4_request")
	secretKey := make([]byte, 0, 4+len(secret))
	secretKey = append(append(secretKey, "AWS4"...), secret...)
	k := hmacSHA256Key(secretKey, []byte(day))
	clear(secretKey)
	k = hmacSHA256(&k, []byte(rs.region))
	k = hmacSHA256(&k, []byte(rs.service))
	k = hmacSHA256(&k, []byte(sigV4Terminator))
	rs.secret, rs.key, rs.valid = secret, k, true
	copy(rs.day[:], day)
	return k
}

// hmacSHA256 returns HMAC-SHA256 with a 32-byte key.
func hmacSHA256(key *[sha256.Size]byte, data []byte) [sha256.Size]byte {
	return hmacSHA256Key(key[:], data)
}

// hmacSHA256Key returns HMAC-SHA256(key, data) (RFC 2104).
func hmacSHA256Key(key, data []byte) [sha256.Size]byte {
	var pad [sha256.BlockSize]byte
	if len(key) > sha256.BlockSize {
		sum := sha256.Sum256(key)
		copy(pad[:], sum[:])
	} else {
		copy(pad[:], key)
	}
	for i := range pad {
		pad[i] ^= 0x36
	}
	inner := sha256.New()
	inner.Write(pad[:])
	inner.Write(data)
	var sum [sha256.Size]byte
	inner.Sum(sum[:0])
	for i := range pad {
		pad[i] ^= 0x36 ^ 0x5c
	}
	outer := sha256.New()
	outer.Write(pad[:])
	outer.Write(sum[:])
	outer.Sum(sum[:0])
	clear(pad[:])
	return sum
}
