package bidi

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/aws/smithy-go"
	"golang.org/x/net/http2"

	"github.com/sagemaker-bidi/sagemaker-bidi/bidi/internal/transport"
)

// Sentinel errors. Each can be matched with [errors.Is]; the typed errors
// below wrap or match them where noted.
var (
	// ErrSessionClosed is returned by calls on a session after Close.
	ErrSessionClosed = errors.New("bidi: session closed")

	// ErrNotHTTP2 reports that the peer did not negotiate HTTP/2. The
	// operation requires HTTP/2 end to end.
	ErrNotHTTP2 = transport.ErrNotHTTP2

	// ErrDeadPeer reports that the connection failed its HTTP/2 PING health
	// check (see Options.HealthCheckInterval).
	ErrDeadPeer = transport.ErrDeadPeer

	// ErrZeroClient is returned by Open on a Client that was not built by
	// NewFromConfig (a zero bidi.Client{} or a nil *Client).
	ErrZeroClient = errors.New("bidi: Client not built by NewFromConfig")

	// ErrInvalidConfig is matched by the error of Open, before any I/O,
	// when the client's configuration cannot work; the error's text says
	// what and how to fix it. That is: no credentials provider; a
	// provider that returned credentials already expired (CanExpire set,
	// Expires before the client's clock), which the service would refuse;
	// no region (requests are signed for a region, so one is needed even
	// with a custom endpoint); a region that is not a lower-case DNS label;
	// and an endpoint the service's endpoint rules reject (a custom
	// endpoint with FIPS or dual-stack, a partition without FIPS or
	// dual-stack support) or a BaseEndpoint that is not a usable URL.
	ErrInvalidConfig = errors.New("bidi: invalid configuration")

	// ErrSendInterrupted is matched by the error of a Send (or SendPart)
	// that failed after part of its message was queued: its context ended
	// while it waited to queue the rest, or a later part could not be
	// encoded (Options.PaddingSource failed). A message cannot be
	// withdrawn halfway, and the next message must not be joined to its
	// first half, so the session is aborted. The error wraps the cause
	// (the context's error, or the encoding error) as well. If the stream
	// was already over when that happened (the service had ended it, or
	// it had failed), nothing more of the message could reach the model
	// anyway: Send then returns the reason the stream ended, as it does
	// after any failure, and does not abort the session, so Recv still
	// returns the messages received before the end, then that reason.
	ErrSendInterrupted = errors.New("bidi: Send interrupted after part of its message was sent; session aborted")
)

// The errors of a configuration that cannot work, matching
// ErrInvalidConfig, and errSendClosed, which Send returns after CloseSend.
var (
	errNoCredentials      = fmt.Errorf("%w: no credentials configured", ErrInvalidConfig)
	errExpiredCredentials = fmt.Errorf("%w: credentials expired", ErrInvalidConfig)
	errNoRegion           = fmt.Errorf("%w: no region configured (set Options.Region, AWS_REGION or the profile's region)", ErrInvalidConfig)

	errSendClosed = errors.New("bidi: send side closed")
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

// ExceptionError is an unmodeled error received in band, in the middle
// of a stream: an "exception" message whose type the model does not
// define, or an "error" message (with its :error-code and :error-message
// headers). The stream ends with it. (An HTTP/2 RST_STREAM or GOAWAY is
// an [*HTTP2Error].)
type ExceptionError struct {
	// Code is the :exception-type of an exception message, or the
	// :error-code of an error message ("UnknownError" when absent).
	Code    string
	Message string
}

// Error implements the error interface.
func (e *ExceptionError) Error() string {
	return "bidi: stream error " + cleanText(e.Code) + ": " + cleanText(e.Message)
}

// ErrorCode returns the error code sent by the service.
func (e *ExceptionError) ErrorCode() string { return e.Code }

// ErrorMessage returns the message sent by the service.
func (e *ExceptionError) ErrorMessage() string { return e.Message }

// ErrorFault returns [smithy.FaultUnknown].
func (e *ExceptionError) ErrorFault() smithy.ErrorFault { return smithy.FaultUnknown }

// StreamError is the former name of [ExceptionError].
//
// Deprecated: HTTP/2 readers take it for RST_STREAM; use ExceptionError
// (and [HTTP2Error] for RST_STREAM and GOAWAY).
type StreamError = ExceptionError

// HTTP2Error reports the HTTP/2 error code that ended a stream or its
// connection: the server's RST_STREAM or GOAWAY (Remote), or the one this
// client sent after the server broke the protocol. [errors.As] reaches it
// in the errors of Open, Send and Recv; it wraps the engine's error, which
// says more.
type HTTP2Error struct {
	// Code is the HTTP/2 error code (RFC 9113 §7), for example
	// http2.ErrCodeCancel or http2.ErrCodeRefusedStream.
	Code http2.ErrCode
	// GoAway is set for a connection's GOAWAY, unset for a stream's
	// RST_STREAM.
	GoAway bool
	// Remote is set when the server sent the frame.
	Remote bool

	err error
}

// Error describes the frame and the engine's account of it.
func (e *HTTP2Error) Error() string { return "bidi: " + e.err.Error() }

// Unwrap returns the engine's error.
func (e *HTTP2Error) Unwrap() error { return e.err }

// http2ErrorOf returns err with an *HTTP2Error in front when an HTTP/2
// error code ended the stream (a RST_STREAM, a GOAWAY, either side's),
// else err as it is.
func http2ErrorOf(err error) error {
	var se *transport.StreamError
	if errors.As(err, &se) {
		return &HTTP2Error{Code: se.Code, Remote: se.Remote, err: err}
	}
	var ce *transport.ConnError
	if errors.As(err, &ce) && (ce.Remote || ce.Code != http2.ErrCodeNo) {
		return &HTTP2Error{Code: ce.Code, GoAway: true, Remote: ce.Remote, err: err}
	}
	return err
}

// MessageTooLargeError reports a received message that exceeds the
// reassembly bound (Options.MaxMessageSize); match it with [errors.As].
// The oversized message is discarded; later messages on the stream are
// unaffected.
type MessageTooLargeError struct {
	// Limit is the configured maximum message size in bytes.
	Limit int64
}

// Error implements the error interface.
func (e *MessageTooLargeError) Error() string {
	return "bidi: message too large: exceeds limit of " + strconv.FormatInt(e.Limit, 10) + " bytes"
}

// Is makes an endpoint configuration error match ErrInvalidConfig.
func (e *endpointError) Is(target error) bool { return target == ErrInvalidConfig }

// Is makes an interrupted Send match ErrSendInterrupted.
func (e *sendInterruptedError) Is(target error) bool { return target == ErrSendInterrupted }

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
// error: a modeled type when exceptionType names one, else an
// *ExceptionError.
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
	return &ExceptionError{Code: code, Message: msg}
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

// Compile-time checks that the error types not generated from the model
// implement smithy.APIError (modeled_gen.go checks the modeled ones).
var (
	_ smithy.APIError = (*StreamError)(nil)
	_ smithy.APIError = (*ResponseError)(nil)
)

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
