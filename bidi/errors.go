package bidi

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/aws/smithy-go"
)

// Sentinel errors. Each can be matched with [errors.Is]; the typed errors
// below wrap or match them where noted.
var (
	// ErrSessionClosed is returned by calls on a session after Close.
	ErrSessionClosed = errors.New("bidi: session closed")

	// ErrSendClosed is returned by Send after CloseSend.
	ErrSendClosed = errors.New("bidi: send side closed")

	// ErrMessageTooLarge reports a received message larger than
	// Options.MaxMessageSize. The concrete error is a
	// [*MessageTooLargeError], which matches it.
	ErrMessageTooLarge = errors.New("bidi: message too large")

	// ErrNotHTTP2 reports that the peer did not negotiate HTTP/2. The
	// operation requires HTTP/2 end to end.
	ErrNotHTTP2 = errors.New("bidi: peer did not negotiate HTTP/2")

	// ErrDeadPeer reports that the connection failed its HTTP/2 PING health
	// check (see Options.HealthCheckInterval).
	ErrDeadPeer = errors.New("bidi: peer did not answer health check")

	// ErrZeroClient is returned by Open on a Client that was not built by
	// NewFromConfig (a zero bidi.Client{} or a nil *Client).
	ErrZeroClient = errors.New("bidi: Client not built by NewFromConfig")

	// ErrNoCredentials reports that no credentials provider is configured.
	ErrNoCredentials = errors.New("bidi: no credentials configured")

	// ErrNoRegion reports that no region is configured. Requests are
	// signed for a region, so one is needed even with a custom endpoint.
	ErrNoRegion = errors.New("bidi: no region configured (set Options.Region, AWS_REGION or the profile's region)")
)

// Names of the modeled error shapes, as returned by ErrorCode.
const (
	codeModelStreamError        = "ModelStreamError"
	codeInternalStreamFailure   = "InternalStreamFailure"
	codeModelError              = "ModelError"
	codeInputValidationError    = "InputValidationError"
	codeInternalServerError     = "InternalServerError"
	codeServiceUnavailableError = "ServiceUnavailableError"
	codeUnknownError            = "UnknownError"
)

// maxErrorText bounds how much of a service-provided string an Error()
// string repeats. The struct fields keep the full value.
const maxErrorText = 512

// ModelStreamError is the modeled mid-stream error the service sends when
// the model container's stream fails, for example because the container
// closed its WebSocket. The stream ends with it.
type ModelStreamError struct {
	Message string
	// ErrorCode_ is the modeled ErrorCode member (for example
	// "ModelInvocationTimeExceeded"). It carries a trailing underscore
	// because ErrorCode is the [smithy.APIError] method.
	ErrorCode_ string
}

// Error implements the error interface.
func (e *ModelStreamError) Error() string { return e.format(0) }

func (e *ModelStreamError) format(status int) string {
	return formatAPIError(codeModelStreamError, status, e.Message, e.ErrorCode_, "")
}

// ErrorCode returns "ModelStreamError".
func (e *ModelStreamError) ErrorCode() string { return codeModelStreamError }

// ErrorMessage returns the service's message.
func (e *ModelStreamError) ErrorMessage() string { return e.Message }

// ErrorFault returns [smithy.FaultClient], as modeled.
func (e *ModelStreamError) ErrorFault() smithy.ErrorFault { return smithy.FaultClient }

// InternalStreamFailure is the modeled mid-stream error the service sends
// when the stream fails on its side. The stream ends with it.
type InternalStreamFailure struct {
	Message string
}

// Error implements the error interface.
func (e *InternalStreamFailure) Error() string { return e.format(0) }

func (e *InternalStreamFailure) format(status int) string {
	return formatAPIError(codeInternalStreamFailure, status, e.Message, "", "")
}

// ErrorCode returns "InternalStreamFailure".
func (e *InternalStreamFailure) ErrorCode() string { return codeInternalStreamFailure }

// ErrorMessage returns the service's message.
func (e *InternalStreamFailure) ErrorMessage() string { return e.Message }

// ErrorFault returns [smithy.FaultServer], as modeled.
func (e *InternalStreamFailure) ErrorFault() smithy.ErrorFault { return smithy.FaultServer }

// ModelError is the modeled HTTP 424 error: the model container could not
// be reached or failed, for example "Failed to establish WebSocket
// connection". OriginalMessage comes from the container and may echo
// request content, so Error() leaves it (and LogStreamArn) out; read the
// fields directly.
type ModelError struct {
	Message string
	// OriginalStatusCode is the HTTP status the model container answered
	// with (not the service's 424), when it answered.
	OriginalStatusCode int
	// OriginalMessage is the container's own message; it may echo
	// request content.
	OriginalMessage string
	// LogStreamArn names the CloudWatch log stream of the container.
	LogStreamArn string
	// ErrorCode_ is the modeled ErrorCode member; see [ModelStreamError].
	ErrorCode_ string
}

// Error implements the error interface.
func (e *ModelError) Error() string { return e.format(424) }

func (e *ModelError) format(status int) string {
	var extra string
	if e.OriginalStatusCode != 0 {
		extra = "original status " + strconv.Itoa(e.OriginalStatusCode)
	}
	return formatAPIError(codeModelError, status, e.Message, e.ErrorCode_, extra)
}

// ErrorCode returns "ModelError".
func (e *ModelError) ErrorCode() string { return codeModelError }

// ErrorMessage returns the service's message.
func (e *ModelError) ErrorMessage() string { return e.Message }

// ErrorFault returns [smithy.FaultClient], as modeled.
func (e *ModelError) ErrorFault() smithy.ErrorFault { return smithy.FaultClient }

// InputValidationError is the modeled HTTP 400 error for input the service
// rejects. The client returns it too, before any I/O, for input that fails
// the model's constraints; then Field names the offending OpenInput field
// (for example "EndpointName") and ErrorCode_ is empty.
type InputValidationError struct {
	Message string
	// ErrorCode_ is the modeled ErrorCode member; see [ModelStreamError].
	ErrorCode_ string
	// Field is set only for client-side validation failures.
	Field string
}

// Error implements the error interface.
func (e *InputValidationError) Error() string { return e.format(400) }

func (e *InputValidationError) format(status int) string {
	if e.Field != "" {
		return "bidi: InputValidationError: " + e.Field + ": " + cleanText(e.Message)
	}
	return formatAPIError(codeInputValidationError, status, e.Message, e.ErrorCode_, "")
}

// ErrorCode returns "InputValidationError".
func (e *InputValidationError) ErrorCode() string { return codeInputValidationError }

// ErrorMessage returns the message.
func (e *InputValidationError) ErrorMessage() string { return e.Message }

// ErrorFault returns [smithy.FaultClient], as modeled.
func (e *InputValidationError) ErrorFault() smithy.ErrorFault { return smithy.FaultClient }

// InternalServerError is the modeled HTTP 500 error.
type InternalServerError struct {
	Message string
	// ErrorCode_ is the modeled ErrorCode member; see [ModelStreamError].
	ErrorCode_ string
}

// Error implements the error interface.
func (e *InternalServerError) Error() string { return e.format(500) }

func (e *InternalServerError) format(status int) string {
	return formatAPIError(codeInternalServerError, status, e.Message, e.ErrorCode_, "")
}

// ErrorCode returns "InternalServerError".
func (e *InternalServerError) ErrorCode() string { return codeInternalServerError }

// ErrorMessage returns the service's message.
func (e *InternalServerError) ErrorMessage() string { return e.Message }

// ErrorFault returns [smithy.FaultServer], as modeled.
func (e *InternalServerError) ErrorFault() smithy.ErrorFault { return smithy.FaultServer }

// ServiceUnavailableError is the modeled HTTP 503 error. Opening a session
// is retried on it (see Options.RetryMaxAttempts).
type ServiceUnavailableError struct {
	Message string
	// ErrorCode_ is the modeled ErrorCode member; see [ModelStreamError].
	ErrorCode_ string
}

// Error implements the error interface.
func (e *ServiceUnavailableError) Error() string { return e.format(503) }

func (e *ServiceUnavailableError) format(status int) string {
	return formatAPIError(codeServiceUnavailableError, status, e.Message, e.ErrorCode_, "")
}

// ErrorCode returns "ServiceUnavailableError".
func (e *ServiceUnavailableError) ErrorCode() string { return codeServiceUnavailableError }

// ErrorMessage returns the service's message.
func (e *ServiceUnavailableError) ErrorMessage() string { return e.Message }

// ErrorFault returns [smithy.FaultServer], as modeled.
func (e *ServiceUnavailableError) ErrorFault() smithy.ErrorFault { return smithy.FaultServer }

// StreamError is an unmodeled error received in the middle of a stream: an
// "exception" message whose type the model does not define, or an "error"
// message (with its :error-code and :error-message headers). The stream
// ends with it.
type StreamError struct {
	// Code is the :exception-type of an exception message, or the
	// :error-code of an error message ("UnknownError" when absent).
	Code    string
	Message string
}

// Error implements the error interface.
func (e *StreamError) Error() string {
	return "bidi: stream error " + cleanText(e.Code) + ": " + cleanText(e.Message)
}

// ErrorCode returns the error code sent by the service.
func (e *StreamError) ErrorCode() string { return e.Code }

// ErrorMessage returns the message sent by the service.
func (e *StreamError) ErrorMessage() string { return e.Message }

// ErrorFault returns [smithy.FaultUnknown].
func (e *StreamError) ErrorFault() smithy.ErrorFault { return smithy.FaultUnknown }

// MessageTooLargeError reports a received message that exceeds the
// reassembly bound (Options.MaxMessageSize). It matches
// [ErrMessageTooLarge] with [errors.Is]. The oversized message is discarded;
// later messages on the stream are unaffected.
type MessageTooLargeError struct {
	// Limit is the configured maximum message size in bytes.
	Limit int64
}

// Error implements the error interface.
func (e *MessageTooLargeError) Error() string {
	return "bidi: message too large: exceeds limit of " + strconv.FormatInt(e.Limit, 10) + " bytes"
}

// Is reports whether target is [ErrMessageTooLarge].
func (e *MessageTooLargeError) Is(target error) bool { return target == ErrMessageTooLarge }

// errorFault returns the fault of a modeled error code.
func errorFault(code string) smithy.ErrorFault {
	switch code {
	case codeModelStreamError, codeModelError, codeInputValidationError:
		return smithy.FaultClient
	case codeInternalStreamFailure, codeInternalServerError, codeServiceUnavailableError:
		return smithy.FaultServer
	}
	return smithy.FaultUnknown
}

// formatAPIError builds "bidi: Code (status): message (extra, error code X)".
func formatAPIError(code string, status int, message, errorCode, extra string) string {
	var b strings.Builder
	b.WriteString("bidi: ")
	b.WriteString(code)
	if status != 0 {
		b.WriteString(" (")
		b.WriteString(strconv.Itoa(status))
		b.WriteByte(')')
	}
	b.WriteString(": ")
	if message == "" {
		b.WriteString("(no message)")
	} else {
		b.WriteString(cleanText(message))
	}
	var notes []string
	if extra != "" {
		notes = append(notes, extra)
	}
	if errorCode != "" {
		notes = append(notes, "error code "+cleanText(errorCode))
	}
	if len(notes) > 0 {
		b.WriteString(" (")
		b.WriteString(strings.Join(notes, ", "))
		b.WriteByte(')')
	}
	return b.String()
}

// cleanText makes a service-provided string safe to embed in an error
// string: invalid UTF-8 and control characters become '?', and the result
// is cut at maxErrorText bytes.
func cleanText(s string) string {
	clean := len(s) <= maxErrorText && utf8.ValidString(s)
	if clean {
		for i := 0; i < len(s); i++ {
			if c := s[i]; c < 0x20 || c == 0x7f {
				clean = false
				break
			}
		}
	}
	if clean {
		return s
	}
	var b strings.Builder
	for _, r := range s {
		if b.Len() >= maxErrorText {
			b.WriteString("...")
			break
		}
		if r == utf8.RuneError || r < 0x20 || r == 0x7f || (r >= 0x80 && r < 0xa0) {
			r = '?'
		}
		b.WriteRune(r)
	}
	return b.String()
}

// modeledFields holds the members of any modeled error structure.
type modeledFields struct {
	Message            string
	ErrorCode          string
	OriginalStatusCode int
	OriginalMessage    string
	LogStreamArn       string
}

// modeledError returns the modeled error type for code, or nil when code
// names no modeled shape.
func modeledError(code string, f modeledFields) error {
	switch code {
	case codeModelStreamError:
		return &ModelStreamError{Message: f.Message, ErrorCode_: f.ErrorCode}
	case codeInternalStreamFailure:
		return &InternalStreamFailure{Message: f.Message}
	case codeModelError:
		return &ModelError{
			Message:            f.Message,
			OriginalStatusCode: f.OriginalStatusCode,
			OriginalMessage:    f.OriginalMessage,
			LogStreamArn:       f.LogStreamArn,
			ErrorCode_:         f.ErrorCode,
		}
	case codeInputValidationError:
		return &InputValidationError{Message: f.Message, ErrorCode_: f.ErrorCode}
	case codeInternalServerError:
		return &InternalServerError{Message: f.Message, ErrorCode_: f.ErrorCode}
	case codeServiceUnavailableError:
		return &ServiceUnavailableError{Message: f.Message, ErrorCode_: f.ErrorCode}
	}
	return nil
}

// exceptionError converts an event-stream "exception" message (header
// :exception-type, JSON payload {"Message": ..., "ErrorCode": ...}) into an
// error: a modeled type when exceptionType names one, else a *StreamError.
// A payload that is not JSON yields an empty message, never the raw bytes.
func exceptionError(exceptionType string, payload []byte) error {
	f, _ := parseErrorBody(payload)
	code := sanitizeErrorCode(exceptionType)
	if err := modeledError(code, f.modeledFields); err != nil {
		return err
	}
	if code == "" {
		code = codeUnknownError
	}
	msg := f.Message
	if msg == "" {
		msg = codeUnknownError
	}
	return &StreamError{Code: code, Message: msg}
}

// errorMessageError converts an event-stream "error" message (headers
// :error-code and :error-message) into a *StreamError. Missing values
// become "UnknownError".
func errorMessageError(code, message string) error {
	if code == "" {
		code = codeUnknownError
	}
	if message == "" {
		message = codeUnknownError
	}
	return &StreamError{Code: code, Message: message}
}

// sanitizeErrorCode strips a ":uri" suffix and a "namespace#" prefix from a
// wire error type, as restJson1 clients do.
func sanitizeErrorCode(code string) string {
	if i := strings.IndexByte(code, ':'); i >= 0 {
		code = code[:i]
	}
	if i := strings.IndexByte(code, '#'); i >= 0 {
		code = code[i+1:]
	}
	return strings.TrimSpace(code)
}

// Compile-time checks that every error type implements smithy.APIError.
var (
	_ smithy.APIError = (*ModelStreamError)(nil)
	_ smithy.APIError = (*InternalStreamFailure)(nil)
	_ smithy.APIError = (*ModelError)(nil)
	_ smithy.APIError = (*InputValidationError)(nil)
	_ smithy.APIError = (*InternalServerError)(nil)
	_ smithy.APIError = (*ServiceUnavailableError)(nil)
	_ smithy.APIError = (*StreamError)(nil)
	_ smithy.APIError = (*ResponseError)(nil)

	// ResponseError.Error formats every modeled error with the status it
	// came with.
	_ modeledFormatter = (*ModelStreamError)(nil)
	_ modeledFormatter = (*InternalStreamFailure)(nil)
	_ modeledFormatter = (*ModelError)(nil)
	_ modeledFormatter = (*InputValidationError)(nil)
	_ modeledFormatter = (*InternalServerError)(nil)
	_ modeledFormatter = (*ServiceUnavailableError)(nil)
)

// ResponseError is returned when the service answers the request with a
// non-2xx HTTP status. It keeps the status, headers, error code, message,
// request ID and a bounded copy of the body. When Code names a modeled
// error, Err holds it ([*ModelError], [*ServiceUnavailableError], ...) and
// [errors.As] reaches it through Unwrap; unmodeled errors such as
// ThrottlingException (HTTP 400) or an unknown 5xx leave Err nil.
type ResponseError struct {
	StatusCode int
	Header     http.Header
	// Code is the sanitised error type from the X-Amzn-ErrorType header or
	// the body's __type or code member; "UnknownError" when none is given.
	Code string
	// Message is the body's Message (or message, errorMessage) member.
	Message string
	// RequestID is the x-amzn-RequestId response header.
	RequestID string
	// Body holds the first bytes of the response body (at most
	// maxErrorBody). It is never part of Error().
	Body []byte
	// Err is the modeled error, if Code names one.
	Err error
}

// modeledFormatter is implemented by the modeled error types: format
// builds the Error string with the given HTTP status (0 for none).
type modeledFormatter interface{ format(status int) string }

// Error implements the error interface. A modeled error is described with
// the status the service actually sent, which need not be its modeled one.
func (e *ResponseError) Error() string {
	var s string
	if f, ok := e.Err.(modeledFormatter); ok {
		s = f.format(e.StatusCode)
	} else if e.Err != nil {
		s = e.Err.Error()
	} else {
		var b strings.Builder
		b.WriteString("bidi: HTTP ")
		b.WriteString(strconv.Itoa(e.StatusCode))
		if t := http.StatusText(e.StatusCode); t != "" {
			b.WriteByte(' ')
			b.WriteString(t)
		}
		b.WriteString(": ")
		b.WriteString(cleanText(e.Code))
		if e.Message != "" {
			b.WriteString(": ")
			b.WriteString(cleanText(e.Message))
		}
		s = b.String()
	}
	if e.RequestID != "" {
		s += " (request id " + cleanText(e.RequestID) + ")"
	}
	return s
}

// Unwrap returns the modeled error, or nil.
func (e *ResponseError) Unwrap() error { return e.Err }

// ErrorCode returns Code.
func (e *ResponseError) ErrorCode() string { return e.Code }

// ErrorMessage returns Message.
func (e *ResponseError) ErrorMessage() string { return e.Message }

// ErrorFault returns the modeled fault when Code names a modeled error,
// else client for 4xx and server for 5xx statuses.
func (e *ResponseError) ErrorFault() smithy.ErrorFault {
	if f := errorFault(e.Code); f != smithy.FaultUnknown {
		return f
	}
	switch {
	case e.StatusCode >= 400 && e.StatusCode < 500:
		return smithy.FaultClient
	case e.StatusCode >= 500:
		return smithy.FaultServer
	}
	return smithy.FaultUnknown
}

// HTTPStatusCode returns StatusCode. It lets callers that know the
// aws-sdk-go-v2 convention ask for the status through an interface.
func (e *ResponseError) HTTPStatusCode() int { return e.StatusCode }

// maxErrorBody bounds how much of an error response body is read.
const maxErrorBody = 64 << 10

// responseError builds the error for a non-2xx response. It reads at most
// maxErrorBody bytes of the body and closes it. The error type comes from
// the X-Amzn-ErrorType header, else the body's __type, else its code
// member, sanitised (":uri" suffix and "namespace#" prefix dropped).
func responseError(resp *http.Response) error {
	e := &ResponseError{
		StatusCode: resp.StatusCode,
		Header:     resp.Header,
		RequestID:  resp.Header.Get("X-Amzn-Requestid"),
	}
	if resp.Body != nil {
		body, _ := io.ReadAll(io.LimitReader(resp.Body, maxErrorBody))
		resp.Body.Close()
		if len(body) > 0 {
			e.Body = body
		}
	}
	info, _ := parseErrorBody(e.Body)
	typ := resp.Header.Get("X-Amzn-Errortype")
	if typ == "" {
		typ = info.Type
	}
	if typ == "" {
		typ = info.Code
	}
	e.Code = sanitizeErrorCode(typ)
	if e.Code == "" {
		e.Code = codeUnknownError
	}
	e.Message = info.Message
	if e.RequestID == "" {
		e.RequestID = resp.Header.Get("X-Amz-Request-Id")
	}
	e.Err = modeledError(e.Code, info.modeledFields)
	return e
}

// errorBody is what parseErrorBody extracts from a JSON error document.
type errorBody struct {
	modeledFields
	Type string // __type
	Code string // code, when it is a string
}

// parseErrorBody decodes a JSON error document. Member names are matched
// exactly except for the message ("Message", "message", "errorMessage")
// and the error code ("ErrorCode", "errorCode"). Values of the wrong JSON
// type are ignored. The raw bytes never end up in the result except as
// decoded string members.
func parseErrorBody(body []byte) (errorBody, error) {
	var out errorBody
	if len(body) == 0 {
		return out, nil
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(body, &m); err != nil {
		return out, err
	}
	str := func(keys ...string) string {
		for _, k := range keys {
			var s string
			if raw, ok := m[k]; ok && json.Unmarshal(raw, &s) == nil && s != "" {
				return s
			}
		}
		return ""
	}
	out.Type = str("__type")
	out.Code = str("code", "Code")
	out.Message = str("Message", "message", "errorMessage")
	out.ErrorCode = str("ErrorCode", "errorCode")
	out.OriginalMessage = str("OriginalMessage")
	out.LogStreamArn = str("LogStreamArn")
	if raw, ok := m["OriginalStatusCode"]; ok {
		var n int
		if json.Unmarshal(raw, &n) == nil {
			out.OriginalStatusCode = n
		}
	}
	return out, nil
}

// StreamRefusedError is the error of a session whose stream the server
// refused every time it was asked, without processing it: REFUSED_STREAM,
// a GOAWAY that excluded it, or a server that allowed no concurrent
// streams. The session asks again, with jittered backoff, a bounded number
// of times (regardless of Options.RetryMaxAttempts, since a refused stream
// is always safe to send again) before it fails with this error.
type StreamRefusedError struct {
	// Attempts is the number of refused attempts.
	Attempts int
	// Err is the last refusal.
	Err error
}

// Error describes the refusals.
func (e *StreamRefusedError) Error() string {
	return fmt.Sprintf("bidi: the server refused the stream %d times: %v", e.Attempts, e.Err)
}

// Unwrap returns the last refusal.
func (e *StreamRefusedError) Unwrap() error { return e.Err }

// OpenContextError is the error of a session that ended because the
// context given to [Client.Open] ended: that context governs the whole
// session, not only the call, so a caller that cancels it when Open
// returns (a helper with defer cancel()) ends the session. It unwraps to
// the context's error (or cause), so errors.Is(err, context.Canceled)
// holds.
type OpenContextError struct {
	Err error
}

// Error says which context ended.
func (e *OpenContextError) Error() string {
	return "bidi: session ended because the context given to Open ended: " + e.Err.Error()
}

// Unwrap returns the context's error.
func (e *OpenContextError) Unwrap() error { return e.Err }
