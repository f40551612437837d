package biditest

import (
	"log"
	"time"
	"unicode/utf8"

	"github.com/sagemaker-bidi/sagemaker-bidi/internal/logthrottle"
)

// The defaults of the Server fields that bound what a client can make the
// server hold: time, connections, streams and bytes. A hostile local
// client meets these before it meets the machine's limits.
const (
	defaultHandshakeTimeout = 10 * time.Second
	defaultIdleTimeout      = 30 * time.Second
	defaultMaxConnections   = 1024
	defaultMaxSessions      = 1024
	defaultMaxEventSize     = 16<<20 + 64<<10 // a part of 16 MiB (the largest bidi.Options.MaxPartSize), plus headers and padding
	defaultMaxRecordedBytes = 64 << 20
)

// resolved returns v, or def when v is 0, or 0 (no limit) when v is
// negative.
func resolved[T int | time.Duration](v, def T) T {
	switch {
	case v == 0:
		return def
	case v < 0:
		return 0
	}
	return v
}

func (s *Server) handshakeTimeout() time.Duration {
	return resolved(s.HandshakeTimeout, defaultHandshakeTimeout)
}

func (s *Server) idleTimeout() time.Duration { return resolved(s.IdleTimeout, defaultIdleTimeout) }

func (s *Server) maxConnections() int { return resolved(s.MaxConnections, defaultMaxConnections) }

func (s *Server) maxSessions() int { return resolved(s.MaxSessions, defaultMaxSessions) }

func (s *Server) maxEventSize() int { return resolved(s.MaxEventSize, defaultMaxEventSize) }

func (s *Server) maxRecordedBytes() int {
	return resolved(s.MaxRecordedBytes, defaultMaxRecordedBytes)
}

// A logThrottle bounds the lines a client can make the server log on
// purpose (connections over the cap, say) to a few a minute per kind.
type logThrottle struct{ logthrottle.Throttle }

// printf logs a line of kind to l unless the throttle drops it.
func (t *logThrottle) printf(l *log.Logger, kind, format string, args ...any) {
	ok, suppressed := t.Allow(kind, time.Now())
	if !ok {
		return
	}
	if suppressed > 0 {
		format += " (%d similar lines suppressed)"
		args = append(args, suppressed)
	}
	l.Printf(format, args...)
}

// maxTextLen bounds the text a client can put in a violation's message
// (through a header name, say), so that a 403 body and its log line stay
// short whatever the request holds.
const maxTextLen = 512

// truncateText returns s cut at a UTF-8 boundary to at most n bytes, the
// "…" that marks a cut included.
func truncateText(s string, n int) string {
	if len(s) <= n {
		return s
	}
	n = max(n-len("…"), 0)
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "…"
}
