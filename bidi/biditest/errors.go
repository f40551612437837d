package biditest

import (
	"errors"
	"fmt"
)

var (
	// ErrStreamDone is returned by the Send and Write methods of a
	// [Stream] whose response is over (the handler returned, called
	// [Stream.Reset], or answered with [Stream.Fail]), and by its Recv
	// methods once the handler has returned.
	ErrStreamDone = errors.New("biditest: stream done")

	// ErrMaxStreamAge is the cause of a stream's context, and matches the
	// errors of its Recv and Send methods, once the stream reached
	// [Server.MaxStreamAge].
	ErrMaxStreamAge = errors.New("biditest: stream reached the server's MaxStreamAge")

	// ErrServerClosed is the cause of every stream's context once
	// [Server.Close] was called.
	ErrServerClosed = errors.New("biditest: server closed")
)

// errAccepted is returned by Stream.Fail after the 200 response headers
// were written: an HTTP error can no longer be sent.
var errAccepted = errors.New("biditest: response already accepted: an HTTP error can no longer be sent")

// The rules the server checks (docs/wire.md §3–4): the values of
// Violation.Rule.
const (
	// ruleHTTP2: the request must use HTTP/2.
	ruleHTTP2 = "http2"
	// ruleOperation: POST /endpoints/{EndpointName}/invocations-bidirectional-stream.
	ruleOperation = "operation"
	// ruleHeader: Content-Type: application/vnd.amazon.eventstream and
	// X-Amz-Content-Sha256: STREAMING-AWS4-HMAC-SHA256-EVENTS.
	ruleHeader = "header"
	// ruleInput: EndpointName and the optional SageMaker headers match the
	// model's patterns and lengths.
	ruleInput = "input"
	// ruleSignature: a valid SigV4 Authorization header (seed signature,
	// credential scope, clock skew, session token).
	ruleSignature = "signature"
	// ruleChunkSignature: every envelope's :chunk-signature chains from the
	// seed.
	ruleChunkSignature = "chunk-signature"
	// ruleFraming: the request body is a well-formed sequence of
	// event-stream messages (lengths, CRCs, headers, no truncation; a
	// client that resets its stream ends it where it was, no violation).
	ruleFraming = "framing"
	// ruleEvent: every inner message is a PayloadPart event with valid
	// DataType and CompletionState values and no empty string or byte
	// array header value (an empty P, for example; docs/wire.md §2.2).
	ruleEvent = "event"
	// ruleEndFrame: the body ends with the signed empty end frame,
	// immediately followed by END_STREAM: nothing may follow the end
	// frame.
	ruleEndFrame = "end-frame"
)

// A Violation is a request that breaks the protocol. The server records
// every violation (see [Server.Violations] and [Server.OnViolation]) and
// fails loudly: with an HTTP error before the handler runs, or,
// mid-stream, by returning the violation from [Stream.RecvPart], sending
// an error message and resetting the stream. Match one with errors.As.
// Its text never contains credentials, signatures or payload bytes, and
// its Message is at most 512 bytes long.
type Violation struct {
	// Rule names the rule broken (docs/wire.md §3–4):
	//
	//	"http2"            the request must use HTTP/2
	//	"operation"        POST /endpoints/{EndpointName}/invocations-bidirectional-stream
	//	"header"           Content-Type and X-Amz-Content-Sha256 of the operation
	//	"input"            EndpointName and the SageMaker headers match the model's patterns
	//	"signature"        a valid SigV4 Authorization (seed signature, scope, clock skew, token)
	//	"chunk-signature"  every envelope's :chunk-signature chains from the seed
	//	"framing"          a well-formed sequence of event-stream messages
	//	"event"            PayloadPart events with valid DataType and CompletionState
	//	"end-frame"        the signed empty end frame, then nothing
	Rule string
	// Message says what was wrong.
	Message string
	// Err is the underlying cause, or nil.
	Err error
	// StatusCode is the HTTP status of the rejection (400, 403, 404 or
	// 505), or 0 for a violation found mid-stream.
	StatusCode int
	// ErrorType is the error type sent to the client: the
	// X-Amzn-ErrorType of an HTTP rejection (InputValidationError, for
	// example) or the :error-code of a mid-stream error message.
	ErrorType string
}

// Error describes the violation. Its text is bounded (a few hundred
// bytes), whatever the request held.
func (v *Violation) Error() string {
	if v.Err != nil {
		return fmt.Sprintf("biditest: %s violation: %s: %s", v.Rule, v.Message, truncateText(v.Err.Error(), maxTextLen))
	}
	return fmt.Sprintf("biditest: %s violation: %s", v.Rule, v.Message)
}

// Unwrap returns Err.
func (v *Violation) Unwrap() error { return v.Err }

// violation returns a Violation whose Message is msg cut to maxTextLen.
func violation(rule string, status int, errorType, msg string, err error) *Violation {
	return &Violation{Rule: rule, Message: truncateText(msg, maxTextLen), Err: err, StatusCode: status, ErrorType: errorType}
}
