package wsframe

import (
	"errors"
	"fmt"
)

// ErrFrameTooLarge is matched by a [*FrameTooLargeError] through
// errors.Is.
var ErrFrameTooLarge = errors.New("wsframe: frame too large")

// FrameTooLargeError reports a frame whose declared payload length
// exceeds the limit. Nothing of its payload was read.
type FrameTooLargeError struct {
	Length int64 // the declared payload length
	Limit  int64 // the limit in force
}

// Error describes the frame and the limit.
func (e *FrameTooLargeError) Error() string {
	return fmt.Sprintf("wsframe: frame of %d bytes exceeds the limit of %d bytes", e.Length, e.Limit)
}

// Is reports whether target is [ErrFrameTooLarge].
func (e *FrameTooLargeError) Is(target error) bool { return target == ErrFrameTooLarge }

// ProtocolError reports a frame that breaks RFC 6455. The connection
// cannot be read any further: its peer should get a close frame with
// [CloseProtocolError].
type ProtocolError struct {
	Reason string // what was wrong, without payload bytes
}

// Error returns the reason.
func (e *ProtocolError) Error() string { return "wsframe: protocol error: " + e.Reason }

// HandshakeError reports an opening handshake that did not end in a
// WebSocket connection although the server answered over HTTP: a status
// other than 101, or a 101 without the right headers.
type HandshakeError struct {
	StatusCode int    // the HTTP status the server answered
	Status     string // the status line's text, e.g. "503 Service Unavailable"
	// Body holds the first bytes of the response body (at most
	// [MaxErrorBody]), for the error the gateway returns.
	Body []byte
	// Reason says what was wrong with a 101 response; empty otherwise.
	Reason string
}

// MaxErrorBody bounds the response body a [HandshakeError] keeps.
const MaxErrorBody = 4 << 10

// Error describes the answer, without the body.
func (e *HandshakeError) Error() string {
	if e.Reason != "" {
		return fmt.Sprintf("wsframe: handshake failed: %s: %s", e.Status, e.Reason)
	}
	return fmt.Sprintf("wsframe: upgrade refused: %s", e.Status)
}
