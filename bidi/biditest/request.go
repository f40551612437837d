package biditest

import (
	"fmt"
	"mime"
	"net/http"
	"net/url"
	"regexp"
	"strings"
)

// Protocol constants of the request (docs/wire.md §3).
const (
	eventStreamContentType = "application/vnd.amazon.eventstream"
	streamingPayloadHash   = "STREAMING-AWS4-HMAC-SHA256-EVENTS"
	signingService         = "sagemaker"
	pathPrefix             = "/endpoints/"
	pathSuffix             = "/invocations-bidirectional-stream"
)

// SageMaker request headers bound to the operation's optional inputs.
const (
	targetVariantHeader       = "X-Amzn-Sagemaker-Target-Variant"
	invocationPathHeader      = "X-Amzn-Sagemaker-Model-Invocation-Path"
	queryStringHeader         = "X-Amzn-Sagemaker-Model-Query-String"
	invokedVariantHeader      = "X-Amzn-Invoked-Production-Variant"
	requestIDHeader           = "X-Amzn-Requestid"
	errorTypeHeader           = "X-Amzn-Errortype"
	validationErrorType       = "InputValidationError"
	invalidSignatureErrorType = "InvalidSignatureException"
)

// An input is one of the operation's string inputs with the model's
// constraints (the patterns are anchored at both ends).
type input struct {
	name    string // member name, for messages
	maxLen  int
	pattern *regexp.Regexp
}

var (
	endpointNameInput   = input{"EndpointName", 63, regexp.MustCompile(`^[a-zA-Z0-9](-*[a-zA-Z0-9])*$`)}
	targetVariantInput  = input{"TargetVariant", 63, endpointNameInput.pattern}
	invocationPathInput = input{"ModelInvocationPath", 100, regexp.MustCompile(`^[A-Za-z0-9\-._]+(?:/[A-Za-z0-9\-._]+)*$`)}
	queryStringInput    = input{"ModelQueryString", 2048, regexp.MustCompile(
		`^[a-zA-Z0-9][A-Za-z0-9_-]*=(?:[A-Za-z0-9._~\-]|%[0-9A-Fa-f]{2})+(?:&[a-zA-Z0-9][A-Za-z0-9_-]*=(?:[A-Za-z0-9._~\-]|%[0-9A-Fa-f]{2})+)*$`)}
)

// check validates v without quoting it (a query string may carry tokens).
func (in input) check(v string) *Violation {
	if len(v) > in.maxLen {
		return violation(ruleInput, http.StatusBadRequest, validationErrorType,
			fmt.Sprintf("1 validation error detected: Value at '%s' failed to satisfy constraint: Member must have length less than or equal to %d", in.name, in.maxLen), nil)
	}
	if !in.pattern.MatchString(v) {
		return violation(ruleInput, http.StatusBadRequest, validationErrorType,
			fmt.Sprintf("1 validation error detected: Value at '%s' failed to satisfy constraint: Member must satisfy regular expression pattern: %s", in.name, in.pattern), nil)
	}
	return nil
}

// streamInputs are the operation's inputs read from a request.
type streamInputs struct {
	endpointName, targetVariant, invocationPath, queryString string
}

// checkOperation checks the transport, method and path of r and returns
// the endpoint name from the path.
func checkOperation(r *http.Request) (string, *Violation) {
	if r.ProtoMajor != 2 {
		return "", violation(ruleHTTP2, http.StatusHTTPVersionNotSupported, "HttpVersionNotSupportedException",
			fmt.Sprintf("the operation requires HTTP/2, got %s", r.Proto), nil)
	}
	path := r.URL.EscapedPath()
	seg, ok := strings.CutPrefix(path, pathPrefix)
	if ok {
		seg, ok = strings.CutSuffix(seg, pathSuffix)
	}
	if !ok || r.Method != http.MethodPost || seg == "" || strings.Contains(seg, "/") {
		return "", violation(ruleOperation, http.StatusNotFound, "UnknownOperationException",
			fmt.Sprintf("no operation for %s on this path; want POST %s{EndpointName}%s", r.Method, pathPrefix, pathSuffix), nil)
	}
	name, err := url.PathUnescape(seg)
	if err != nil {
		return "", violation(ruleOperation, http.StatusBadRequest, validationErrorType, "malformed percent-encoding in the EndpointName path label", err)
	}
	return name, nil
}

// checkProtocolHeaders checks the event-stream request headers.
func (s *Server) checkProtocolHeaders(r *http.Request) *Violation {
	ct := r.Header.Get("Content-Type")
	if mt, _, err := mime.ParseMediaType(ct); err != nil || mt != eventStreamContentType {
		return violation(ruleHeader, http.StatusBadRequest, validationErrorType,
			fmt.Sprintf("Content-Type must be %s, got %q", eventStreamContentType, ct), nil)
	}
	if s.SkipVerify {
		return nil
	}
	if got := r.Header.Get("X-Amz-Content-Sha256"); got != streamingPayloadHash {
		return violation(ruleHeader, http.StatusBadRequest, validationErrorType,
			fmt.Sprintf("X-Amz-Content-Sha256 must be %s, got %q", streamingPayloadHash, got), nil)
	}
	return nil
}

// checkInputs validates the endpoint name and the optional SageMaker
// headers against the model.
func checkInputs(r *http.Request, endpointName string) (streamInputs, *Violation) {
	in := streamInputs{endpointName: endpointName}
	if v := endpointNameInput.check(endpointName); v != nil {
		return in, v
	}
	for _, h := range []struct {
		header string
		input  input
		dst    *string
	}{
		{targetVariantHeader, targetVariantInput, &in.targetVariant},
		{invocationPathHeader, invocationPathInput, &in.invocationPath},
		{queryStringHeader, queryStringInput, &in.queryString},
	} {
		vals, ok := r.Header[h.header]
		if !ok {
			continue
		}
		if len(vals) != 1 {
			return in, violation(ruleInput, http.StatusBadRequest, validationErrorType,
				fmt.Sprintf("header %s appears %d times", h.header, len(vals)), nil)
		}
		if v := h.input.check(vals[0]); v != nil {
			return in, v
		}
		*h.dst = vals[0]
	}
	return in, nil
}
