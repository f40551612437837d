package biditest

import (
	"errors"
	"fmt"
)

var (
	// ErrViolation matches every [*Violation] through errors.Is.
	ErrViolation = errors.New("biditest: protocol violation")

	// ErrStreamDone is returned by the Send and Write methods of a
	// [Stream] whose response is over (the handler returned, called
	// [Stream.Reset], or answered with [Stream.Fail]), and by its Recv
	// methods once the handler has returned.
	ErrStreamDone = errors.New("biditest: stream done")

	// ErrAccepted is returned by [Stream.Fail] after the 200 response
	// headers were written: an HTTP error can no longer be sent.
	ErrAccepted = errors.New("biditest: response already accepted")

	// ErrMessageTooLarge is returned by [Stream.Recv] (and, with
	// [Server.WholeMessages], by [Stream.RecvPart]) when a reassembled
	// message would exceed [Server.MaxRecvMessageSize]. A model
	// container behind SageMaker closes its WebSocket with 1009 (message
	// too big) then, which the client sees as a ModelStreamError with
	// ErrorCode "1009"; [Echo] and [DemoModel] answer the same way (see
	// [Stream.SendMessageTooLarge]).
	ErrMessageTooLarge = errors.New("biditest: message too large")

	// ErrMaxStreamAge is the cause of a stream's context, and matches the
	// errors of its Recv and Send methods, once the stream reached
	// [Server.MaxStreamAge].
	ErrMaxStreamAge = errors.New("biditest: stream reached the server's MaxStreamAge")

	// ErrServerClosed is the cause of every stream's context once
	// [Server.Close] was called.
	ErrServerClosed = errors.New("biditest: server closed")
)

// Rule names the protocol rule a [Violation] breaks.
type Rule string

// The rules the server checks (docs/wire.md §3–4).
const (
	// RuleHTTP2: the request must use HTTP/2.
	RuleHTTP2 Rule = "http2"
	// RuleOperation: POST /endpoints/{EndpointName}/invocations-bidirectional-stream.
	RuleOperation Rule = "operation"
	// RuleHeader: Content-Type: application/vnd.amazon.eventstream and
	// X-Amz-Content-Sha256: STREAMING-AWS4-HMAC-SHA256-EVENTS.
	RuleHeader Rule = "header"
	// RuleInput: EndpointName and the optional SageMaker headers match the
	// model's patterns and lengths.
	RuleInput Rule = "input"
	// RuleSignature: a valid SigV4 Authorization header (seed signature,
	// credential scope, clock skew, session token).
	RuleSignature Rule = "signature"
	// RuleChunkSignature: every envelope's :chunk-signature chains from the
	// seed.
	RuleChunkSignature Rule = "chunk-signature"
	// RuleFraming: the request body is a well-formed sequence of
	// event-stream messages (lengths, CRCs, headers, no truncation).
	RuleFraming Rule = "framing"
	// RuleEvent: every inner message is a PayloadPart event with valid
	// DataType and CompletionState values and no empty string or byte
	// array header value (an empty P, for example; docs/wire.md §2.2).
	RuleEvent Rule = "event"
	// RuleEndFrame: the body ends with the signed empty end frame,
	// immediately followed by END_STREAM: nothing may follow the end
	// frame.
	RuleEndFrame Rule = "end-frame"
)

// A Violation is a request that breaks the protocol. The server records
// every violation (see [Server.Violations]) and fails loudly: with an HTTP
// error before the handler runs, or, mid-stream, by returning the
// violation from [Stream.RecvPart], sending an error message and
// resetting the stream. Its text never contains credentials, signatures
// or payload bytes, and its Message is at most 512 bytes long.
type Violation struct {
	Rule    Rule   // the rule broken
	Message string // what was wrong
	Err     error  // the underlying cause, or nil

	status    int    // HTTP status of the rejection, before the handler runs
	errorType string // X-Amzn-ErrorType or :error-code sent to the client
}

// Error describes the violation. Its text is bounded (a few hundred
// bytes), whatever the request held.
func (v *Violation) Error() string {
	if v.Err != nil {
		return fmt.Sprintf("biditest: %s violation: %s: %s", v.Rule, v.Message, truncateText(v.Err.Error(), maxTextLen))
	}
	return fmt.Sprintf("biditest: %s violation: %s", v.Rule, v.Message)
}

// Unwrap returns the underlying cause.
func (v *Violation) Unwrap() error { return v.Err }

// Is reports whether target is [ErrViolation].
func (v *Violation) Is(target error) bool { return target == ErrViolation }

// ErrorType returns the error type sent to the client: the X-Amzn-ErrorType
// of an HTTP rejection or the :error-code of a mid-stream error message.
func (v *Violation) ErrorType() string { return v.errorType }

// StatusCode returns the HTTP status of the rejection, or 0 for a
// violation found mid-stream.
func (v *Violation) StatusCode() int { return v.status }

// violation returns a Violation whose Message is msg cut to maxTextLen.
func violation(rule Rule, status int, errorType, msg string, err error) *Violation {
	return &Violation{Rule: rule, Message: truncateText(msg, maxTextLen), Err: err, status: status, errorType: errorType}
}
