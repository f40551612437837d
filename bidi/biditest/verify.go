package biditest

import (
	"crypto/hmac"
	"crypto/subtle"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"net/textproto"
	"net/url"
	"slices"
	"strings"
	"time"

	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"

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
			return a, fmt.Errorf("unknown element %q", k)
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
	return violation(RuleSignature, status, errorType, msg, err)
}

// verifySeed checks the SigV4 signature of r as the service would and
// returns the seed of the event signature chain. The canonical request is
// rebuilt from the headers named in SignedHeaders (host is r.Host, the
// HTTP/2 :authority) and signed again with the server's credentials at the
// request's X-Amz-Date.
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
	if s.maxSkew > 0 {
		now := s.now()
		if d := now.Sub(t); d > s.maxSkew || -d > s.maxSkew {
			return nil, authViolation(forbidden, invalidSignatureErrorType,
				fmt.Sprintf("Signature expired or not yet current: X-Amz-Date is %v away from the server's time (limit %v)", d.Round(time.Second), s.maxSkew), nil)
		}
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
	for _, name := range []string{"host", "x-amz-date", "x-amz-content-sha256"} {
		if !slices.Contains(signed, name) {
			return nil, authViolation(forbidden, invalidSignatureErrorType, "SignedHeaders must include "+name, nil)
		}
	}
	token := r.Header.Values("X-Amz-Security-Token")
	if s.creds.SessionToken != "" {
		if len(token) != 1 || !slices.Contains(signed, "x-amz-security-token") ||
			subtle.ConstantTimeCompare([]byte(token[0]), []byte(s.creds.SessionToken)) != 1 {
			return nil, authViolation(forbidden, "UnrecognizedClientException", "The security token included in the request is invalid.", nil)
		}
	} else if len(token) != 0 {
		return nil, authViolation(forbidden, "UnrecognizedClientException", "The security token included in the request is invalid.", nil)
	}
	seed, err := hex.DecodeString(a.signature)
	if err != nil || len(seed) != 32 || strings.ToLower(a.signature) != a.signature {
		return nil, authViolation(forbidden, invalidSignatureErrorType, "Signature must be 64 lower-case hex digits", nil)
	}

	want, err := s.expectedAuthorization(r, signed, t)
	if err != nil {
		return nil, authViolation(forbidden, invalidSignatureErrorType, "cannot compute the request signature", err)
	}
	if want.signedHeaders != a.signedHeaders {
		return nil, authViolation(forbidden, invalidSignatureErrorType,
			fmt.Sprintf("SignedHeaders %q do not match the signable headers of the request (%q)", a.signedHeaders, want.signedHeaders), nil)
	}
	if !hmac.Equal([]byte(want.signature), []byte(a.signature)) {
		return nil, authViolation(forbidden, invalidSignatureErrorType,
			"The request signature we calculated does not match the signature you provided. Check your AWS Secret Access Key and signing method.", nil)
	}
	return seed, nil
}

// expectedAuthorization signs a copy of r that holds only the signed
// headers and returns the Authorization the server computes.
func (s *Server) expectedAuthorization(r *http.Request, signed []string, t time.Time) (authorization, error) {
	u := &url.URL{Scheme: "https", Host: r.Host, Path: r.URL.Path, RawPath: r.URL.RawPath, RawQuery: r.URL.RawQuery}
	req := &http.Request{Method: r.Method, URL: u, Host: r.Host, Header: make(http.Header, len(signed))}
	for _, name := range signed {
		switch name {
		case "host":
			continue
		case "content-length":
			req.ContentLength = r.ContentLength
			continue
		}
		key := textproto.CanonicalMIMEHeaderKey(name)
		if vals := r.Header.Values(key); len(vals) > 0 {
			req.Header[key] = append([]string(nil), vals...)
		}
	}
	err := v4.NewSigner().SignHTTP(r.Context(), s.creds, req, streamingPayloadHash, signingService, s.region, t)
	if err != nil {
		return authorization{}, err
	}
	return parseAuthorization(req.Header.Get("Authorization"))
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
