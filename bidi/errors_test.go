package bidi

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/aws/smithy-go"
	"golang.org/x/net/http2"

	"github.com/sagemaker-bidi/sagemaker-bidi/bidi/internal/transport"
)

func TestErrorSentinels(t *testing.T) {
	for _, err := range []error{ErrSessionClosed, errSendClosed, ErrNotHTTP2, ErrDeadPeer, errNoCredentials, ErrInvalidConfig, ErrSendInterrupted} {
		if !strings.HasPrefix(err.Error(), "bidi: ") {
			t.Errorf("%q lacks the package prefix", err)
		}
	}
	if ErrSessionClosed.Error() != "bidi: session closed" || errSendClosed.Error() != "bidi: send side closed" {
		t.Errorf("sentinel texts changed: %q, %q", ErrSessionClosed, errSendClosed)
	}
	var err error = fmt.Errorf("wrapped: %w", &MessageTooLargeError{Limit: 1024})
	var mtl *MessageTooLargeError
	if !errors.As(err, &mtl) || mtl.Limit != 1024 {
		t.Error("errors.As does not reach a wrapped MessageTooLargeError")
	}
	if errors.Is(err, ErrSessionClosed) {
		t.Error("MessageTooLargeError matches ErrSessionClosed")
	}
	if got, want := mtl.Error(), "bidi: message too large: exceeds limit of 1024 bytes"; got != want {
		t.Errorf("Error() = %q, want %q", got, want)
	}
}

// TestFoldedErrors: the errors without an exported type match their
// sentinel through errors.Is and keep their cause in the chain.
func TestFoldedErrors(t *testing.T) {
	parse := errors.New("parse failure")
	for _, err := range []error{
		errNoCredentials, errExpiredCredentials, errNoRegion,
		regionError("us west"),
		&endpointError{Message: "BaseEndpoint is not a valid URL", Err: parse},
		fmt.Errorf("open: %w", &endpointError{Message: "Invalid Configuration: Missing Region"}),
	} {
		if !errors.Is(err, ErrInvalidConfig) {
			t.Errorf("%v does not match ErrInvalidConfig", err)
		}
		if errors.Is(err, ErrSendInterrupted) || errors.Is(err, ErrSessionClosed) {
			t.Errorf("%v matches another sentinel", err)
		}
	}
	if err := (&endpointError{Message: "m", Err: parse}); !errors.Is(err, parse) {
		t.Error("an endpoint error lost its cause")
	}

	si := fmt.Errorf("send: %w", &sendInterruptedError{Err: context.DeadlineExceeded})
	if !errors.Is(si, ErrSendInterrupted) || !errors.Is(si, context.DeadlineExceeded) || errors.Is(si, ErrInvalidConfig) {
		t.Errorf("interrupted Send %v: matches ErrSendInterrupted %v, its cause %v", si,
			errors.Is(si, ErrSendInterrupted), errors.Is(si, context.DeadlineExceeded))
	}
	if !strings.Contains(si.Error(), "Send interrupted") || !strings.Contains(si.Error(), "context deadline exceeded") {
		t.Errorf("interrupted Send text %q", si)
	}

	isf := &InternalStreamFailure{Message: "x"}
	re := &reconnectError{Reconnects: 3, Err: isf}
	var got *InternalStreamFailure
	if !errors.As(re, &got) || got != isf || !strings.Contains(re.Error(), "after 3 reconnect(s)") {
		t.Errorf("reconnect error %v: does not reach its last failure", re)
	}
}

func TestErrorModeledTypes(t *testing.T) {
	cases := []struct {
		err   smithy.APIError
		code  string
		fault smithy.ErrorFault
		text  string
	}{
		{&ModelStreamError{Message: "container closed", ErrorCode_: "StreamBroken"}, "ModelStreamError", smithy.FaultClient,
			"bidi: ModelStreamError: container closed (error code StreamBroken)"},
		{&InternalStreamFailure{Message: "oops"}, "InternalStreamFailure", smithy.FaultServer,
			"bidi: InternalStreamFailure: oops"},
		{&ModelError{Message: "Failed to establish WebSocket connection", OriginalStatusCode: 502, OriginalMessage: "model said SECRET", LogStreamArn: "arn:aws:logs:x"}, "ModelError", smithy.FaultClient,
			"bidi: ModelError (424): Failed to establish WebSocket connection (original status 502)"},
		{&ModelError{Message: "m", ErrorCode_: "ModelErr"}, "ModelError", smithy.FaultClient,
			"bidi: ModelError (424): m (error code ModelErr)"},
		{&InputValidationError{Message: "bad input", ErrorCode_: "Validation"}, "InputValidationError", smithy.FaultClient,
			"bidi: InputValidationError (400): bad input (error code Validation)"},
		{&InputValidationError{Message: "required field is empty", Field: "EndpointName"}, "InputValidationError", smithy.FaultClient,
			"bidi: InputValidationError: EndpointName: required field is empty"},
		{&InternalServerError{Message: "boom"}, "InternalServerError", smithy.FaultServer,
			"bidi: InternalServerError (500): boom"},
		{&ServiceUnavailableError{}, "ServiceUnavailableError", smithy.FaultServer,
			"bidi: ServiceUnavailableError (503): (no message)"},
		{&StreamError{Code: "Weird", Message: "w"}, "Weird", smithy.FaultUnknown,
			"bidi: stream error Weird: w"},
	}
	for _, tc := range cases {
		if got := tc.err.ErrorCode(); got != tc.code {
			t.Errorf("%T.ErrorCode() = %q, want %q", tc.err, got, tc.code)
		}
		if got, want := tc.err.ErrorMessage(), messageField(tc.err); got != want {
			t.Errorf("%T.ErrorMessage() = %q, want %q", tc.err, got, want)
		}
		if got := tc.err.ErrorFault(); got != tc.fault {
			t.Errorf("%T.ErrorFault() = %v, want %v", tc.err, got, tc.fault)
		}
		if got := tc.err.Error(); got != tc.text {
			t.Errorf("%T.Error() = %q, want %q", tc.err, got, tc.text)
		}
		if strings.Contains(tc.err.Error(), "SECRET") || strings.Contains(tc.err.Error(), "arn:aws:logs") {
			t.Errorf("%T.Error() includes OriginalMessage or LogStreamArn: %q", tc.err, tc.err.Error())
		}
	}
}

// messageField returns the Message field of a modeled error.
func messageField(err error) string {
	switch e := err.(type) {
	case *ModelStreamError:
		return e.Message
	case *InternalStreamFailure:
		return e.Message
	case *ModelError:
		return e.Message
	case *InputValidationError:
		return e.Message
	case *InternalServerError:
		return e.Message
	case *ServiceUnavailableError:
		return e.Message
	case *StreamError:
		return e.Message
	}
	return "?"
}

// trackingBody records how much was read and whether it was closed.
type trackingBody struct {
	r      io.Reader
	read   int
	closed bool
}

func (b *trackingBody) Read(p []byte) (int, error) {
	n, err := b.r.Read(p)
	b.read += n
	return n, err
}

func (b *trackingBody) Close() error { b.closed = true; return nil }

func newResponse(status int, header map[string]string, body string) (*http.Response, *trackingBody) {
	h := http.Header{}
	for k, v := range header {
		h.Set(k, v)
	}
	tb := &trackingBody{r: strings.NewReader(body)}
	return &http.Response{StatusCode: status, Header: h, Body: tb}, tb
}

func TestResponseError(t *testing.T) {
	type check func(t *testing.T, re *ResponseError)
	isModel := func(t *testing.T, re *ResponseError) {
		var me *ModelError
		if !errors.As(re, &me) {
			t.Fatalf("errors.As(*ModelError) failed for %v", re)
		}
		if me.OriginalStatusCode != 502 || me.OriginalMessage != "upstream said no" || me.LogStreamArn != "arn:aws:logs:us-east-1:1:log-group:/aws/sagemaker/Endpoints/e" || me.ErrorCode_ != "WS" {
			t.Fatalf("ModelError fields = %+v", me)
		}
	}
	cases := []struct {
		name     string
		status   int
		header   map[string]string
		body     string
		code     string
		message  string
		reqID    string
		modeled  error // zero value of the expected modeled type, nil for none
		fault    smithy.ErrorFault
		text     string
		extra    check
		retrying bool
	}{
		{
			name:   "424 from header with URI suffix",
			status: 424,
			header: map[string]string{"X-Amzn-ErrorType": "ModelError:http://internal.amazon.com/coral/", "x-amzn-RequestId": "req-1"},
			body:   `{"Message":"Failed to establish WebSocket connection","OriginalStatusCode":502,"OriginalMessage":"upstream said no","LogStreamArn":"arn:aws:logs:us-east-1:1:log-group:/aws/sagemaker/Endpoints/e","ErrorCode":"WS"}`,
			code:   "ModelError", message: "Failed to establish WebSocket connection", reqID: "req-1",
			modeled: &ModelError{}, fault: smithy.FaultClient,
			text:     "bidi: ModelError (424): Failed to establish WebSocket connection (original status 502, error code WS) (request id req-1)",
			extra:    isModel,
			retrying: true,
		},
		{
			name:   "503 from body __type with namespace",
			status: 503,
			body:   `{"__type":"com.amazonaws.sagemakerruntimehttp2#ServiceUnavailableError","message":"try later"}`,
			code:   "ServiceUnavailableError", message: "try later",
			modeled: &ServiceUnavailableError{}, fault: smithy.FaultServer,
			text:     "bidi: ServiceUnavailableError (503): try later",
			retrying: true,
		},
		{
			name:   "400 from body code",
			status: 400,
			body:   `{"code":"InputValidationError","Message":"bad name","ErrorCode":"E1"}`,
			code:   "InputValidationError", message: "bad name",
			modeled: &InputValidationError{}, fault: smithy.FaultClient,
		},
		{
			name:   "header beats body",
			status: 500,
			header: map[string]string{"X-Amzn-ErrorType": "InternalServerError"},
			body:   `{"__type":"ModelError","code":"ServiceUnavailableError","errorMessage":"internal"}`,
			code:   "InternalServerError", message: "internal",
			modeled: &InternalServerError{}, fault: smithy.FaultServer,
		},
		{
			name:    "__type beats code",
			status:  500,
			body:    `{"__type":"InternalServerError","code":"ServiceUnavailableError"}`,
			code:    "InternalServerError",
			modeled: &InternalServerError{}, fault: smithy.FaultServer,
		},
		{
			name:   "throttling is unmodeled but kept",
			status: 400,
			header: map[string]string{"X-Amzn-ErrorType": "ThrottlingException", "X-Amzn-RequestId": "r2", "Retry-After": "1"},
			body:   `{"message":"Rate exceeded"}`,
			code:   "ThrottlingException", message: "Rate exceeded", reqID: "r2",
			fault:    smithy.FaultClient,
			text:     "bidi: HTTP 400 Bad Request: ThrottlingException: Rate exceeded (request id r2)",
			extra:    func(t *testing.T, re *ResponseError) { checkHeader(t, re, "Retry-After", "1") },
			retrying: true,
		},
		{
			name:   "unknown 5xx with HTML body",
			status: 502,
			body:   "<html>Bad gateway SECRETBODY</html>",
			code:   "UnknownError",
			fault:  smithy.FaultServer,
			text:   "bidi: HTTP 502 Bad Gateway: UnknownError",
			extra: func(t *testing.T, re *ResponseError) {
				if string(re.Body) != "<html>Bad gateway SECRETBODY</html>" {
					t.Errorf("Body = %q", re.Body)
				}
			},
		},
		{
			name:   "429 without body",
			status: 429,
			code:   "UnknownError", fault: smithy.FaultClient,
			retrying: true,
		},
		{
			name:   "424 not retryable when the model answered",
			status: 424,
			body:   `{"__type":"ModelError","Message":"Received server error (500) from model","OriginalStatusCode":500}`,
			code:   "ModelError", message: "Received server error (500) from model",
			modeled: &ModelError{}, fault: smithy.FaultClient,
		},
		{
			name:    "wrong JSON types ignored",
			status:  424,
			body:    `{"__type":"ModelError","Message":7,"OriginalStatusCode":"x"}`,
			code:    "ModelError",
			modeled: &ModelError{}, fault: smithy.FaultClient,
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			resp, body := newResponse(tc.status, tc.header, tc.body)
			err := responseError(resp.StatusCode, resp.Header, resp.Body)
			if !body.closed {
				t.Error("body not closed")
			}
			var re *ResponseError
			if !errors.As(err, &re) {
				t.Fatalf("responseError = %T, want *ResponseError", err)
			}
			if re.StatusCode != tc.status || re.Code != tc.code || re.Message != tc.message || re.RequestID != tc.reqID {
				t.Errorf("got status=%d code=%q message=%q reqID=%q; want %d %q %q %q",
					re.StatusCode, re.Code, re.Message, re.RequestID, tc.status, tc.code, tc.message, tc.reqID)
			}
			if tc.modeled == nil {
				if re.Err != nil {
					t.Errorf("Err = %v, want nil", re.Err)
				}
			} else if re.Err == nil || errorTypeName(re.Err) != errorTypeName(tc.modeled) {
				t.Errorf("Err = %T, want %T", re.Err, tc.modeled)
			}
			var api smithy.APIError
			if !errors.As(err, &api) || api.ErrorCode() != tc.code || api.ErrorFault() != tc.fault {
				t.Errorf("APIError code/fault = %v/%v, want %q/%v", api.ErrorCode(), api.ErrorFault(), tc.code, tc.fault)
			}
			if api.ErrorMessage() != tc.message {
				t.Errorf("ErrorMessage() = %q, want %q", api.ErrorMessage(), tc.message)
			}
			if hs, ok := err.(interface{ HTTPStatusCode() int }); !ok || hs.HTTPStatusCode() != tc.status {
				t.Errorf("HTTPStatusCode() missing or wrong")
			}
			if tc.text != "" && err.Error() != tc.text {
				t.Errorf("Error() = %q, want %q", err.Error(), tc.text)
			}
			if strings.Contains(err.Error(), "SECRET") {
				t.Errorf("Error() leaks the body: %q", err)
			}
			if got := classifyOpenError(err) == classRetryable; got != tc.retrying {
				t.Errorf("classifyOpenError retryable = %v, want %v", got, tc.retrying)
			}
			if tc.extra != nil {
				tc.extra(t, re)
			}
		})
	}
}

func errorTypeName(err error) string {
	switch err.(type) {
	case *ModelError:
		return "ModelError"
	case *ServiceUnavailableError:
		return "ServiceUnavailableError"
	case *InternalServerError:
		return "InternalServerError"
	case *InputValidationError:
		return "InputValidationError"
	case *ModelStreamError:
		return "ModelStreamError"
	case *InternalStreamFailure:
		return "InternalStreamFailure"
	}
	return "other"
}

func checkHeader(t *testing.T, re *ResponseError, k, v string) {
	t.Helper()
	if got := re.Header.Get(k); got != v {
		t.Errorf("Header[%s] = %q, want %q", k, got, v)
	}
}

func TestResponseErrorBoundedBody(t *testing.T) {
	big := `{"message":"` + strings.Repeat("x", 200<<10) + `"}`
	resp, body := newResponse(500, nil, big)
	err := responseError(resp.StatusCode, resp.Header, resp.Body)
	if body.read > maxErrorBody {
		t.Errorf("read %d bytes, want at most %d", body.read, maxErrorBody)
	}
	if !body.closed {
		t.Error("body not closed")
	}
	var re *ResponseError
	if !errors.As(err, &re) || len(re.Body) != maxErrorBody || re.Code != "UnknownError" {
		t.Fatalf("got %v (body %d bytes)", err, len(re.Body))
	}
	if len(err.Error()) > 200 {
		t.Errorf("Error() is %d bytes long", len(err.Error()))
	}
}

func TestResponseErrorNilBody(t *testing.T) {
	err := responseError(503, http.Header{"X-Amzn-Errortype": {"ServiceUnavailableError"}}, nil)
	var su *ServiceUnavailableError
	if !errors.As(err, &su) {
		t.Fatalf("got %v", err)
	}
}

func TestExceptionError(t *testing.T) {
	cases := []struct {
		typ     string
		payload string
		check   func(error) bool
		text    string
	}{
		{"ModelStreamError", `{"Message":"container went away","ErrorCode":"ModelInvocationTimeExceeded"}`,
			func(err error) bool {
				var e *ModelStreamError
				return errors.As(err, &e) && e.Message == "container went away" && e.ErrorCode_ == "ModelInvocationTimeExceeded"
			}, "bidi: ModelStreamError: container went away (error code ModelInvocationTimeExceeded)"},
		{"ModelStreamError", `{"message":"lower case"}`,
			func(err error) bool {
				var e *ModelStreamError
				return errors.As(err, &e) && e.Message == "lower case" && e.ErrorCode_ == ""
			}, ""},
		{"InternalStreamFailure", `{"Message":"broken"}`,
			func(err error) bool {
				var e *InternalStreamFailure
				return errors.As(err, &e) && e.Message == "broken"
			}, "bidi: InternalStreamFailure: broken"},
		{"SomethingNew", `{"Message":"new"}`,
			func(err error) bool {
				var e *StreamError
				return errors.As(err, &e) && e.Code == "SomethingNew" && e.Message == "new"
			}, "bidi: stream error SomethingNew: new"},
		{"SomethingNew", `not json SECRETPAYLOAD`,
			func(err error) bool {
				var e *StreamError
				return errors.As(err, &e) && e.Code == "SomethingNew" && e.Message == "UnknownError"
			}, "bidi: stream error SomethingNew: UnknownError"},
		{"", ``,
			func(err error) bool {
				var e *StreamError
				return errors.As(err, &e) && e.Code == "UnknownError"
			}, ""},
		{"ModelStreamError", `not json SECRETPAYLOAD`,
			func(err error) bool {
				var e *ModelStreamError
				return errors.As(err, &e) && e.Message == ""
			}, "bidi: ModelStreamError: (no message)"},
	}
	for _, tc := range cases {
		err := exceptionError(tc.typ, []byte(tc.payload))
		if !tc.check(err) {
			t.Errorf("exceptionError(%q, %q) = %#v", tc.typ, tc.payload, err)
		}
		if tc.text != "" && err.Error() != tc.text {
			t.Errorf("exceptionError(%q).Error() = %q, want %q", tc.typ, err, tc.text)
		}
		if strings.Contains(err.Error(), "SECRETPAYLOAD") {
			t.Errorf("Error() leaks the payload: %q", err)
		}
	}
}

func TestErrorMessageError(t *testing.T) {
	cases := []struct{ code, msg, wantCode, wantMsg string }{
		{"AccessDenied", "no", "AccessDenied", "no"},
		{"", "", "UnknownError", "UnknownError"},
		{"X", "", "X", "UnknownError"},
	}
	for _, tc := range cases {
		var e *StreamError
		if err := errorMessageError(tc.code, tc.msg); !errors.As(err, &e) || e.Code != tc.wantCode || e.Message != tc.wantMsg {
			t.Errorf("errorMessageError(%q, %q) = %#v", tc.code, tc.msg, err)
		}
	}
}

func TestErrorSanitizeCode(t *testing.T) {
	cases := map[string]string{
		"FooError": "FooError",
		"FooError:http://internal.amazon.com/coral/com.amazon.coral.validate/": "FooError",
		"aws.protocoltests.restjson#FooError":                                  "FooError",
		"aws.protocoltests.restjson#FooError:http://internal.amazon.com/":      "FooError",
		"": "",
	}
	for in, want := range cases {
		if got := sanitizeErrorCode(in); got != want {
			t.Errorf("sanitizeErrorCode(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestErrorCleanText(t *testing.T) {
	if got := cleanText("a\nb\x00c\x7f"); got != "a?b?c?" {
		t.Errorf("cleanText control chars = %q", got)
	}
	if got := cleanText("ok ü"); got != "ok ü" {
		t.Errorf("cleanText changed clean text: %q", got)
	}
	if got := cleanText("\xff"); got != "?" {
		t.Errorf("cleanText invalid UTF-8 = %q", got)
	}
	long := cleanText(strings.Repeat("y", 5000))
	if len(long) > maxErrorText+3 || !strings.HasSuffix(long, "...") {
		t.Errorf("cleanText did not truncate: %d bytes", len(long))
	}
	e := &ModelStreamError{Message: "line1\r\nline2"}
	if strings.ContainsAny(e.Error(), "\r\n") {
		t.Errorf("Error() contains control characters: %q", e.Error())
	}
}

func TestErrorRetryableOpen(t *testing.T) {
	cases := []struct {
		err  error
		want retryClass
	}{
		{&ServiceUnavailableError{}, classRetryable},
		{&ModelError{Message: "Failed to establish WebSocket connection"}, classRetryable},
		{&ModelError{Message: "Failed to establish WebSocket connection", OriginalStatusCode: 404}, classTerminal},
		{&ModelError{Message: "Failed to establish WebSocket connection", OriginalStatusCode: 403}, classTerminal},
		{&ModelError{Message: "Failed to establish WebSocket connection", OriginalStatusCode: 503}, classRetryable},
		{&ModelError{Message: "Received client error (400) from model"}, classTerminal},
		{&InternalServerError{}, classUnknown},
		{&ResponseError{StatusCode: 400, Code: "ThrottlingException"}, classRetryable},
		{&ResponseError{StatusCode: 400, Code: "AccessDeniedException"}, classTerminal},
		{&ResponseError{StatusCode: 403, Code: "InvalidSignatureException"}, classTerminal},
		{&ResponseError{StatusCode: 403, Code: "InvalidSignatureException", Message: "Signature expired: 20260101T000000Z is now earlier than ..."}, classSkew},
		{&ResponseError{StatusCode: 400, Code: "RequestTimeTooSkewed"}, classSkew},
		{&ResponseError{StatusCode: 500, Code: "InternalServerError"}, classUnknown},
		{&ModelStreamError{}, classUnknown},
		{ErrSessionClosed, classUnknown},
		{nil, classUnknown},
	}
	for _, tc := range cases {
		if got := classifyOpenError(tc.err); got != tc.want {
			t.Errorf("classifyOpenError(%v) = %v, want %v", tc.err, got, tc.want)
		}
	}
}

// TestHTTP2ErrorOf: the engine's RST_STREAM and GOAWAY errors get an
// *HTTP2Error in front, with the code and who sent it, and keep their
// chain; I/O failures and refusals do not.
func TestHTTP2ErrorOf(t *testing.T) {
	cases := []struct {
		name string
		err  error
		want *HTTP2Error // nil: not an HTTP/2 error code
	}{
		{"server's RST_STREAM", &transport.StreamError{StreamID: 1, Code: http2.ErrCodeCancel, Remote: true}, &HTTP2Error{Code: http2.ErrCodeCancel, Remote: true}},
		{"client's RST_STREAM", &transport.StreamError{StreamID: 3, Code: http2.ErrCodeProtocol, Cause: errors.New("bad frame")}, &HTTP2Error{Code: http2.ErrCodeProtocol}},
		{"server's GOAWAY", &transport.ConnError{Code: http2.ErrCodeEnhanceYourCalm, Remote: true, Reason: "calm"}, &HTTP2Error{Code: http2.ErrCodeEnhanceYourCalm, GoAway: true, Remote: true}},
		{"client's GOAWAY", &transport.ConnError{Code: http2.ErrCodeFlowControl, Reason: "window"}, &HTTP2Error{Code: http2.ErrCodeFlowControl, GoAway: true}},
		{"I/O", &transport.ConnError{Cause: io.ErrUnexpectedEOF}, nil},
		{"dead peer", &transport.ConnError{Reason: "health check", Cause: transport.ErrDeadPeer}, nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			err := classifyTransportError(fmt.Errorf("wrapped: %w", tc.err))
			if !errors.Is(err, tc.err) {
				t.Fatalf("%v lost the engine's error", err)
			}
			var h *HTTP2Error
			got := errors.As(err, &h)
			if tc.want == nil {
				if got {
					t.Fatalf("%v holds an *HTTP2Error", err)
				}
				return
			}
			if !got || h.Code != tc.want.Code || h.GoAway != tc.want.GoAway || h.Remote != tc.want.Remote {
				t.Fatalf("%v: HTTP2Error %+v, want %+v", err, h, tc.want)
			}
		})
	}
	if !errors.Is(classifyTransportError(&transport.ConnError{Cause: transport.ErrDeadPeer}), ErrDeadPeer) {
		t.Error("the engine's dead peer does not match ErrDeadPeer")
	}
}
