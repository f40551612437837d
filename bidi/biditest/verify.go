package biditest

import (
	"crypto/hmac"
	"crypto/subtle"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/sagemaker-bidi/sagemaker-bidi/eventstream"
)

const (
	signingAlgorithm = "AWS4-HMAC-SHA256"
	amzDateFormat    = "20060102T150405Z"
)

// authorization is a parsed SigV4 Authorization header.
type authorization struct {
	accessKey, date, region, service, terminator string
	signedHeaders                                string // as sent: lower-case names joined by ';'
	signature                                    string // lower-case hex
}

func parseAuthorization(h string) (authorization, error) {
	var a authorization
	rest, ok := strings.CutPrefix(h, signingAlgorithm+" ")
	if !ok {
		return a, errors.New("the header does not start with " + signingAlgorithm)
	}
	var credential string
	var haveCred, haveSigned, haveSig bool
	for part := range strings.SplitSeq(rest, ",") {
		k, v, ok := strings.Cut(strings.TrimSpace(part), "=")
		if !ok {
			return a, errors.New("an element has no '='")
		}
		switch k {
		case "Credential":
			credential, haveCred = v, true
		case "SignedHeaders":
			a.signedHeaders, haveSigned = v, true
		case "Signature":
			a.signature, haveSig = v, true
		default:
			return a, fmt.Errorf("unknown element %q", truncateText(k, 64))
		}
	}
	if !haveCred || !haveSigned || !haveSig {
		return a, errors.New("the header needs Credential, SignedHeaders and Signature")
	}
	scope := strings.Split(credential, "/")
	if len(scope) != 5 {
		return a, errors.New("the Credential must be <access key>/<date>/<region>/<service>/aws4_request")
	}
	a.accessKey, a.date, a.region, a.service, a.terminator = scope[0], scope[1], scope[2], scope[3], scope[4]
	return a, nil
}

func authViolation(status int, errorType, msg string, err error) *Violation {
	return violation(ruleSignature, status, errorType, msg, err)
}

// verifySeed checks the SigV4 signature of r as the service would and
// returns the seed of the event signature chain. The canonical request is
// rebuilt from the client's own SignedHeaders list ("host" and
// ":authority" both stand for r.Host, the HTTP/2 :authority) and signed
// again with the server's credentials at the request's X-Amz-Date.
func (s *Server) verifySeed(r *http.Request) ([]byte, *Violation) {
	const forbidden = http.StatusForbidden
	authz := r.Header.Values("Authorization")
	if len(authz) == 0 {
		return nil, authViolation(forbidden, "MissingAuthenticationTokenException", "Missing Authentication Token", nil)
	}
	if len(authz) > 1 {
		return nil, authViolation(forbidden, invalidSignatureErrorType, "more than one Authorization header", nil)
	}
	a, err := parseAuthorization(authz[0])
	if err != nil {
		return nil, authViolation(forbidden, invalidSignatureErrorType, "malformed Authorization header", err)
	}
	amzDate := r.Header.Get("X-Amz-Date")
	t, err := time.Parse(amzDateFormat, amzDate)
	if err != nil {
		return nil, authViolation(forbidden, invalidSignatureErrorType, "missing or malformed X-Amz-Date header", nil)
	}
	if a.date != amzDate[:8] {
		return nil, authViolation(forbidden, invalidSignatureErrorType, "Credential date does not match X-Amz-Date", nil)
	}
	if v := s.checkSkew(t); v != nil {
		return nil, v
	}
	if subtle.ConstantTimeCompare([]byte(a.accessKey), []byte(s.creds.AccessKeyID)) != 1 {
		return nil, authViolation(forbidden, "UnrecognizedClientException", "The security token included in the request is invalid.", nil)
	}
	if a.region != s.region {
		return nil, authViolation(forbidden, invalidSignatureErrorType,
			fmt.Sprintf("Credential should be scoped to a valid region: want %q, got %q", s.region, a.region), nil)
	}
	if a.service != signingService {
		return nil, authViolation(forbidden, invalidSignatureErrorType,
			fmt.Sprintf("Credential should be scoped to correct service: want %q, got %q", signingService, a.service), nil)
	}
	if a.terminator != "aws4_request" {
		return nil, authViolation(forbidden, invalidSignatureErrorType, "Credential should be scoped with a valid terminator: 'aws4_request'", nil)
	}
	signed := strings.Split(a.signedHeaders, ";")
	if v := checkSignedHeaders(r, signed); v != nil {
		return nil, v
	}
	token := r.Header.Values("X-Amz-Security-Token")
	if s.creds.SessionToken != "" {
		if len(token) != 1 || subtle.ConstantTimeCompare([]byte(token[0]), []byte(s.creds.SessionToken)) != 1 {
			return nil, authViolation(forbidden, "UnrecognizedClientException", "The security token included in the request is invalid.", nil)
		}
	} else if len(token) != 0 {
		return nil, authViolation(forbidden, "UnrecognizedClientException", "The security token included in the request is invalid.", nil)
	}
	if s.creds.CanExpire && !s.now().Before(s.creds.Expires) {
		return nil, authViolation(forbidden, "ExpiredTokenException", "The security token included in the request is expired", nil)
	}
	seed, err := hex.DecodeString(a.signature)
	if err != nil || len(seed) != 32 || strings.ToLower(a.signature) != a.signature {
		return nil, authViolation(forbidden, invalidSignatureErrorType, "Signature must be 64 lower-case hex digits", nil)
	}

	scope := a.date + "/" + a.region + "/" + a.service + "/" + a.terminator
	creq := canonicalRequest(r, signed, r.Header.Get("X-Amz-Content-Sha256"))
	key := signingKey(s.creds.SecretAccessKey, a.date, a.region, a.service)
	want := hex.EncodeToString(hmacSHA256(key, stringToSign(amzDate, scope, creq)))
	if !hmac.Equal([]byte(want), []byte(a.signature)) {
		return nil, authViolation(forbidden, invalidSignatureErrorType,
			"The request signature we calculated does not match the signature you provided. Check your AWS Secret Access Key and signing method. Consult the service documentation for details.", nil)
	}
	return seed, nil
}

// checkSignedHeaders checks the SignedHeaders list of r's Authorization:
// lower-case names, sorted, without duplicates; "host" or, over HTTP/2,
// the ":authority" pseudo-header among them (SigV4 allows either); only
// pseudo-headers an HTTP/2 request carries; and every x-amz-* and
// x-amzn-sagemaker-* header of the request signed. Other headers may be
// signed or not, as the client chose. Its cost is O(n log n) in the
// number of headers, since the list is checked to be sorted first and
// then searched by bisection; its messages name at most a few headers.
func checkSignedHeaders(r *http.Request, signed []string) *Violation {
	const forbidden = http.StatusForbidden
	for i, name := range signed {
		if name == "" || name != strings.ToLower(name) || (i > 0 && signed[i-1] >= name) {
			return authViolation(forbidden, invalidSignatureErrorType,
				"SignedHeaders must list lower-case header names, sorted and without duplicates", nil)
		}
		if strings.HasPrefix(name, ":") && !slices.Contains(pseudoHeaders, name) {
			return authViolation(forbidden, invalidSignatureErrorType,
				fmt.Sprintf("SignedHeaders names %q, which is not an HTTP/2 request pseudo-header", truncateText(name, 64)), nil)
		}
	}
	isSigned := func(name string) bool {
		_, found := slices.BinarySearch(signed, name)
		return found
	}
	if !isSigned("host") && !isSigned(":authority") {
		return authViolation(forbidden, invalidSignatureErrorType,
			"'Host' or ':authority' must be a 'SignedHeader' in the AWS Authorization.", nil)
	}
	var unsigned []string
	for key := range r.Header {
		name := strings.ToLower(key)
		if (strings.HasPrefix(name, "x-amz-") || strings.HasPrefix(name, "x-amzn-sagemaker-")) && !isSigned(name) {
			unsigned = append(unsigned, name)
		}
	}
	if len(unsigned) > 0 {
		slices.Sort(unsigned)
		const named = 3
		more := ""
		if len(unsigned) > named {
			more = fmt.Sprintf(" (and %d more)", len(unsigned)-named)
			unsigned = unsigned[:named]
		}
		for i, name := range unsigned {
			unsigned[i] = truncateText(name, 64)
		}
		return authViolation(forbidden, invalidSignatureErrorType,
			fmt.Sprintf("'%s' must be a 'SignedHeader' in the AWS Authorization.%s", strings.Join(unsigned, "', '"), more), nil)
	}
	return nil
}

// pseudoHeaders are the pseudo-headers of an HTTP/2 request, which SigV4
// may sign like any header.
var pseudoHeaders = []string{":authority", ":method", ":path", ":scheme"}

// checkSkew rejects a request signed at t further than MaxClockSkew from
// the server's clock, with the service's messages.
func (s *Server) checkSkew(t time.Time) *Violation {
	if s.maxSkew <= 0 {
		return nil
	}
	now := s.now().UTC()
	f := func(t time.Time) string { return t.UTC().Format(amzDateFormat) }
	skew := fmt.Sprintf("%d min.", int(s.maxSkew/time.Minute))
	if s.maxSkew%time.Minute != 0 {
		skew = s.maxSkew.String()
	}
	switch {
	case now.Sub(t) > s.maxSkew:
		return authViolation(http.StatusForbidden, invalidSignatureErrorType,
			fmt.Sprintf("Signature expired: %s is now earlier than %s (%s - %s)", f(t), f(now.Add(-s.maxSkew)), f(now), skew), nil)
	case t.Sub(now) > s.maxSkew:
		return authViolation(http.StatusForbidden, invalidSignatureErrorType,
			fmt.Sprintf("Signature not yet current: %s is still later than %s (%s + %s)", f(t), f(now.Add(s.maxSkew)), f(now), skew), nil)
	}
	return nil
}

// newVerifier returns the event verifier of a stream that starts at seed.
func (s *Server) newVerifier(seed []byte) *eventstream.Verifier {
	return eventstream.NewVerifier(s.creds, s.region, signingService, seed, func(o *eventstream.VerifierOptions) {
		o.Now = s.now
		if s.maxSkew > 0 {
			o.MaxSkew = s.maxSkew
		}
	})
}
