package eventstream

import (
	"errors"
	"fmt"
)

var (
	// ErrPayloadTooLarge reports a received message whose payload exceeds
	// the decoder's MaxPayloadLen, or a message to encode whose payload
	// exceeds DefaultMaxPayloadLen (for a signed envelope, whose payload is
	// the whole encoded inner message).
	ErrPayloadTooLarge = errors.New("eventstream: payload too large")

	// ErrHeadersTooLarge reports a header block longer than MaxHeadersLen.
	ErrHeadersTooLarge = errors.New("eventstream: headers too large")

	// ErrInvalidLength reports a prelude whose lengths are inconsistent:
	// a total length below the 16-byte minimum, or a header length that does
	// not fit in the total length.
	ErrInvalidLength = errors.New("eventstream: invalid message length")

	// ErrTooManyHeaders reports a message with more headers than the
	// decoder's MaxHeaders.
	ErrTooManyHeaders = errors.New("eventstream: too many headers")

	// ErrInvalidHeader reports a malformed header: an empty or over-long
	// name, an unknown value type, a value that runs past the header block,
	// or a value too long to encode.
	ErrInvalidHeader = errors.New("eventstream: invalid header")

	// ErrSignatureMismatch reports an envelope whose :chunk-signature does
	// not match the one computed by a [Verifier].
	ErrSignatureMismatch = errors.New("eventstream: signature mismatch")

	// ErrStreamEnded reports an envelope received after the end frame.
	ErrStreamEnded = errors.New("eventstream: message after end of stream")

	// ErrWouldBlock is returned by the reader of a [Decoder] that does not
	// wait for input (a non-blocking source) when none is ready. Decode
	// then returns ErrWouldBlock itself, unwrapped, and keeps what it had
	// read: a later Decode, once input is ready, resumes the same message.
	// Unlike other read errors it is not retained.
	ErrWouldBlock = errors.New("eventstream: no input ready")
)

// LengthError reports a length or count that breaks a limit. It matches
// one of [ErrPayloadTooLarge], [ErrHeadersTooLarge], [ErrInvalidLength] or
// [ErrTooManyHeaders] through errors.Is.
type LengthError struct {
	Err    error // the sentinel this error matches
	Length int64 // the length found in the prelude
	Limit  int64 // the limit it breaks
}

// Error reports the sentinel, the length and the limit.
func (e *LengthError) Error() string {
	return fmt.Sprintf("%v: %d (limit %d)", e.Err, e.Length, e.Limit)
}

// Unwrap returns the sentinel error.
func (e *LengthError) Unwrap() error { return e.Err }

// Checksum names one of the two CRC32 checksums of a message.
type Checksum uint8

const (
	// PreludeChecksum covers the 8 length bytes at the start of a message.
	PreludeChecksum Checksum = iota + 1
	// MessageChecksum covers every byte of a message before it.
	MessageChecksum
)

// String returns "prelude" or "message".
func (c Checksum) String() string {
	if c == PreludeChecksum {
		return "prelude"
	}
	return "message"
}

// ChecksumError reports a CRC32 mismatch.
type ChecksumError struct {
	Checksum Checksum // which checksum failed
	Want     uint32   // the value carried by the message
	Got      uint32   // the value computed over the received bytes
}

// Error names the checksum and gives both values.
func (e *ChecksumError) Error() string {
	return fmt.Sprintf("eventstream: %v checksum mismatch: message has %#08x, computed %#08x", e.Checksum, e.Want, e.Got)
}

// HeaderError reports a malformed header. It matches [ErrInvalidHeader].
type HeaderError struct {
	Offset int    // byte offset of the header within the header block
	Name   string // the header name, when it could be read
	Reason string // what is wrong, for people
}

// Error reports the offset, the name when known, and the reason.
func (e *HeaderError) Error() string {
	if e.Name != "" {
		return fmt.Sprintf("eventstream: invalid header %q at offset %d: %s", e.Name, e.Offset, e.Reason)
	}
	return fmt.Sprintf("eventstream: invalid header at offset %d: %s", e.Offset, e.Reason)
}

// Is reports whether target is [ErrInvalidHeader].
func (e *HeaderError) Is(target error) bool { return target == ErrInvalidHeader }

// SignatureError reports an envelope that failed verification. It matches
// [ErrSignatureMismatch] when the signature is wrong, and wraps the cause
// when the envelope is malformed (for example, a missing :date header).
// The signatures themselves are never included in the message.
type SignatureError struct {
	Index  int    // zero-based position of the envelope in the chain
	Reason string // what is wrong, for people
	Err    error  // ErrSignatureMismatch, ErrInvalidHeader or ErrStreamEnded
}

// Error reports the envelope index and the reason, never a signature.
func (e *SignatureError) Error() string {
	return fmt.Sprintf("eventstream: envelope %d: %s", e.Index, e.Reason)
}

// Unwrap returns the underlying cause.
func (e *SignatureError) Unwrap() error { return e.Err }
