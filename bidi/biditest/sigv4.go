package biditest

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
)

// This file computes a SigV4 request signature from the request as
// received, to the letter of the algorithm (AWS IAM user guide, "Create a
// signed AWS API request"), for whichever headers the client chose to
// sign. It does not reuse a client signer: aws-sdk-go-v2's v4.Signer
// signs only "host", while AWS's JavaScript SDK signs the HTTP/2
// ":authority" pseudo-header instead, which SigV4 allows over HTTP/2.

// canonicalRequest returns the canonical request of r for the signed
// header names (lower-case, in the order of SignedHeaders) and the payload
// hash (the X-Amz-Content-Sha256 value):
//
//	Method \n CanonicalURI \n CanonicalQueryString \n
//	CanonicalHeaders \n SignedHeaders \n HashedPayload
func canonicalRequest(r *http.Request, signed []string, payloadHash string) string {
	var b strings.Builder
	b.WriteString(r.Method)
	b.WriteByte('\n')
	b.WriteString(canonicalURI(r.URL))
	b.WriteByte('\n')
	b.WriteString(canonicalQuery(r.URL.RawQuery))
	b.WriteByte('\n')
	for _, name := range signed {
		b.WriteString(name)
		b.WriteByte(':')
		b.WriteString(canonicalHeaderValue(r, name))
		b.WriteByte('\n')
	}
	b.WriteByte('\n')
	b.WriteString(strings.Join(signed, ";"))
	b.WriteByte('\n')
	b.WriteString(payloadHash)
	return b.String()
}

// canonicalURI is the path as sent (percent-encoded), URI-encoded once
// more, as every service but S3 signs it: each byte outside the unreserved
// set and '/' becomes %XX. An empty path is "/".
func canonicalURI(u *url.URL) string {
	p := u.EscapedPath()
	if p == "" {
		return "/"
	}
	return uriEncode(p, false)
}

// canonicalQuery sorts the query parameters by name, then value, with
// both URI-encoded.
func canonicalQuery(raw string) string {
	if raw == "" {
		return ""
	}
	type kv struct{ k, v string }
	var params []kv
	for part := range strings.SplitSeq(raw, "&") {
		if part == "" {
			continue
		}
		k, v, _ := strings.Cut(part, "=")
		if uk, err := url.QueryUnescape(k); err == nil {
			k = uk
		}
		if uv, err := url.QueryUnescape(v); err == nil {
			v = uv
		}
		params = append(params, kv{uriEncode(k, true), uriEncode(v, true)})
	}
	slices.SortFunc(params, func(a, b kv) int {
		if c := strings.Compare(a.k, b.k); c != 0 {
			return c
		}
		return strings.Compare(a.v, b.v)
	})
	var b strings.Builder
	for i, p := range params {
		if i > 0 {
			b.WriteByte('&')
		}
		b.WriteString(p.k)
		b.WriteByte('=')
		b.WriteString(p.v)
	}
	return b.String()
}

// uriEncode percent-encodes every byte of s outside A-Z a-z 0-9 - . _ ~
// (and '/' unless encodeSlash) with upper-case hex digits.
func uriEncode(s string, encodeSlash bool) string {
	const hexDigits = "0123456789ABCDEF"
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case 'A' <= c && c <= 'Z', 'a' <= c && c <= 'z', '0' <= c && c <= '9',
			c == '-', c == '.', c == '_', c == '~', c == '/' && !encodeSlash:
			b.WriteByte(c)
		default:
			b.WriteByte('%')
			b.WriteByte(hexDigits[c>>4])
			b.WriteByte(hexDigits[c&15])
		}
	}
	return b.String()
}

// canonicalHeaderValue returns the value of a signed header as SigV4
// canonicalises it: the values of a repeated header joined with ',', each
// trimmed, with inner runs of spaces collapsed. "host" and the HTTP/2
// pseudo-header ":authority" both stand for the request's authority
// (r.Host); the other pseudo-headers are read from the request line.
func canonicalHeaderValue(r *http.Request, name string) string {
	switch name {
	case "host", ":authority":
		return trimAll(r.Host)
	case ":method":
		return r.Method
	case ":path":
		return r.URL.RequestURI()
	case ":scheme":
		if r.TLS != nil {
			return "https"
		}
		return "http"
	}
	vals := slices.Clone(r.Header.Values(name))
	if len(vals) == 0 && name == "content-length" && r.ContentLength >= 0 {
		vals = []string{strconv.FormatInt(r.ContentLength, 10)}
	}
	for i, v := range vals {
		vals[i] = trimAll(v)
	}
	return strings.Join(vals, ",")
}

// trimAll trims s and collapses its inner runs of spaces to one.
func trimAll(s string) string {
	s = strings.TrimSpace(s)
	if !strings.Contains(s, "  ") {
		return s
	}
	return strings.Join(strings.Fields(s), " ")
}

// stringToSign returns the SigV4 string to sign of a canonical request.
func stringToSign(amzDate, scope, creq string) string {
	sum := sha256.Sum256([]byte(creq))
	return signingAlgorithm + "\n" + amzDate + "\n" + scope + "\n" + hex.EncodeToString(sum[:])
}

// signingKey derives the SigV4 signing key of a secret for a date
// (YYYYMMDD), region and service.
func signingKey(secret, date, region, service string) []byte {
	k := hmacSHA256([]byte("AWS4"+secret), date)
	k = hmacSHA256(k, region)
	k = hmacSHA256(k, service)
	return hmacSHA256(k, "aws4_request")
}

func hmacSHA256(key []byte, data string) []byte {
	m := hmac.New(sha256.New, key)
	m.Write([]byte(data))
	return m.Sum(nil)
}
