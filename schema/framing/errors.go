package framing

import (
	"errors"
	"strconv"
)

var (
	// ErrEventTooLarge is matched (with errors.Is) by every
	// [*EventTooLargeError].
	ErrEventTooLarge = errors.New("framing: event too large")

	// ErrNeedInput is returned by [Decoder.Next] when the bytes written so
	// far hold no further complete event. It is not a failure: write the
	// next message and call Next again.
	ErrNeedInput = errors.New("framing: need more input")

	// ErrClosed is returned by [Decoder.Write] after [Decoder.Close].
	ErrClosed = errors.New("framing: decoder closed")
)

// SyntaxError reports malformed input: bytes that are neither framing nor
// part of a valid JSON value, or input that ends inside a value.
//
// When the input ended inside a value, Err is [io.ErrUnexpectedEOF], so
// errors.Is(err, io.ErrUnexpectedEOF) reports a cut-off stream.
type SyntaxError struct {
	// Offset is the position of the offending byte, counted in bytes from
	// the start of the stream (including any byte order mark).
	Offset int64
	// Msg describes the problem.
	Msg string
	// Err is the underlying cause, if any.
	Err error
}

// Error implements the error interface.
func (e *SyntaxError) Error() string {
	return "framing: syntax error at offset " + strconv.FormatInt(e.Offset, 10) + ": " + e.Msg
}

// Unwrap returns the underlying cause, such as [io.ErrUnexpectedEOF].
func (e *SyntaxError) Unwrap() error { return e.Err }

// EventTooLargeError reports an event (or a framing line) longer than
// [Options.MaxEventSize]. It matches [ErrEventTooLarge].
type EventTooLargeError struct {
	// Offset is the stream position where the event started.
	Offset int64
	// Limit is the configured maximum size in bytes.
	Limit int
}

// Error implements the error interface.
func (e *EventTooLargeError) Error() string {
	return "framing: event at offset " + strconv.FormatInt(e.Offset, 10) +
		" exceeds the limit of " + strconv.Itoa(e.Limit) + " bytes"
}

// Is reports whether target is [ErrEventTooLarge], so that errors.Is
// matches every EventTooLargeError with it.
func (e *EventTooLargeError) Is(target error) bool { return target == ErrEventTooLarge }
