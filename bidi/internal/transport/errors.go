package transport

import (
	"errors"
	"fmt"

	"golang.org/x/net/http2"
)

var (
	// ErrNotHTTP2 reports a peer that did not negotiate HTTP/2: no "h2"
	// through ALPN, or, over h2c, bytes that are not an HTTP/2 server
	// preface (an HTTP/1.1 server, or TLS spoken to a cleartext URL).
	// It is bidi.ErrNotHTTP2: the sentinel is declared once, here.
	ErrNotHTTP2 = errors.New("bidi: peer did not negotiate HTTP/2")

	// ErrDeadPeer reports a connection closed because a PING went
	// unanswered (see Config.PingInterval).
	// It is bidi.ErrDeadPeer.
	ErrDeadPeer = errors.New("bidi: peer did not answer health check")

	// ErrClosed reports a connection or transport closed by this side.
	ErrClosed = errors.New("connection closed")

	// ErrRefused is matched by the error of a stream the server did not
	// process (REFUSED_STREAM, or a GOAWAY whose last stream ID is below
	// it, or a server that allows no streams): it is safe to send again.
	ErrRefused = errors.New("stream refused by the server")
)

// StreamError is a stream ended by RST_STREAM, from the peer (Remote) or
// from this side after a protocol violation of the peer.
type StreamError struct {
	StreamID uint32
	Code     http2.ErrCode
	Remote   bool  // the peer reset the stream
	Cause    error // why this side reset it; nil if Remote
}

// Error says who reset the stream and why.
func (e *StreamError) Error() string {
	if e.Remote {
		return fmt.Sprintf("stream %d reset by the server: %v", e.StreamID, e.Code)
	}
	if e.Cause != nil {
		return fmt.Sprintf("stream %d reset: %v: %v", e.StreamID, e.Code, e.Cause)
	}
	return fmt.Sprintf("stream %d reset: %v", e.StreamID, e.Code)
}

// Unwrap returns ErrRefused for REFUSED_STREAM, else the cause.
func (e *StreamError) Unwrap() error {
	if e.Remote && e.Code == http2.ErrCodeRefusedStream {
		return ErrRefused
	}
	return e.Cause
}

// ConnError is a connection ended by an error: a protocol violation of the
// peer (Code set; this side sent GOAWAY), a GOAWAY from the peer (Remote),
// or an I/O error (Cause).
type ConnError struct {
	Code   http2.ErrCode
	Remote bool
	Reason string
	Cause  error
}

// Error says how the connection ended.
func (e *ConnError) Error() string {
	switch {
	case e.Remote && e.Reason != "":
		return fmt.Sprintf("connection closed by the server (GOAWAY %v: %q)", e.Code, e.Reason)
	case e.Remote:
		return fmt.Sprintf("connection closed by the server (GOAWAY %v)", e.Code)
	case e.Cause != nil && e.Reason != "":
		return fmt.Sprintf("connection failed: %s: %v", e.Reason, e.Cause)
	case e.Cause != nil:
		return fmt.Sprintf("connection failed: %v", e.Cause)
	}
	return fmt.Sprintf("connection error %v: %s", e.Code, e.Reason)
}

// Unwrap returns the I/O error or sentinel behind the failure, if any.
func (e *ConnError) Unwrap() error { return e.Cause }

// refusedError is the error of a stream that the server never processed.
type refusedError struct{ reason string }

func (e *refusedError) Error() string { return "stream refused by the server: " + e.reason }
func (e *refusedError) Unwrap() error { return ErrRefused }
