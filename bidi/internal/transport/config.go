package transport

import (
	"context"
	"crypto/tls"
	"net"
	"net/http"
	"net/url"
	"time"
)

// Defaults of the Config fields whose zero value means "default".
const (
	// DefaultMaxStreamsPerConn: 2,000 real-time audio sessions against
	// biditest on a 16-core host have a send-to-echo p99 of 5 ms at 250
	// streams per connection and 105 ms at 1,000, for the same client CPU
	// (a Go HTTP/2 server runs each connection's frames through one
	// goroutine); see BENCHMARKS.md.
	DefaultMaxStreamsPerConn   = 250
	DefaultDialTimeout         = 30 * time.Second
	DefaultHandshakeTimeout    = 10 * time.Second
	DefaultIdleTimeout         = 90 * time.Second
	DefaultPingTimeout         = 10 * time.Second
	DefaultMaxRefusals         = 5
	DefaultStreamWindow        = 1 << 20
	DefaultConnWindow          = 16 << 20
	DefaultMaxHeaderListSize   = 1 << 20
	defaultMaxFrameSize        = 16 << 10
	maxQueuedControlResponses  = 100
	refusalBackoffBase         = 50 * time.Millisecond
	refusalBackoffMax          = 5 * time.Second
	writeBufferSize            = 64 << 10
	readBufferSize             = 32 << 10
	maxDataFramePayloadWritten = 64<<10 + 512
	goAwayGrace                = 250 * time.Millisecond
	maxGoAwayReason            = 256
	initialWindow              = 65535
)

// Config configures a [Transport]. The zero value of every field means its
// documented default.
type Config struct {
	// TLSConfig is cloned for TLS connections; nil means the system roots.
	// NextProtos is replaced by "h2" and ServerName defaults to the host.
	TLSConfig *tls.Config

	// Proxy returns the proxy for a request's URL (nil means none), as
	// http.Transport.Proxy does. Only https endpoints use it, through an
	// HTTP CONNECT tunnel. Nil means no proxy.
	Proxy func(*http.Request) (*url.URL, error)

	// DialContext dials TCP; nil means a net.Dialer with TCP keep-alives.
	DialContext func(ctx context.Context, network, addr string) (net.Conn, error)

	// DialTimeout bounds the dial of a connection, TLS handshake and the
	// server's first SETTINGS included. 0 means DefaultDialTimeout.
	DialTimeout time.Duration

	// MaxStreamsPerConn caps the streams of one connection, below the
	// server's own limit. 0 means DefaultMaxStreamsPerConn.
	MaxStreamsPerConn int

	// IdleTimeout closes a connection that carried no stream for that
	// long. 0 means DefaultIdleTimeout; negative disables it.
	IdleTimeout time.Duration

	// PingInterval is how long a connection may go without reading any
	// frame before a PING checks the peer; negative or 0 disables health
	// checks. PingTimeout is how long to wait for its acknowledgement
	// before the connection is closed with ErrDeadPeer (0 means
	// DefaultPingTimeout).
	PingInterval time.Duration
	PingTimeout  time.Duration

	// StreamWindow and ConnWindow are the receive windows advertised for
	// each stream and for the connection. 0 means the defaults; a
	// ConnWindow below 65,535 (HTTP/2's initial window) means 65,535.
	StreamWindow int32
	ConnWindow   int32

	// Hooks, if set, are called by the engine at points tests need to
	// observe. Production code leaves it nil.
	Hooks *Hooks
}

// Hooks lets tests observe the engine. Every hook may be nil.
type Hooks struct {
	// Dialed is called after each successful or failed dial of a
	// connection (TLS handshake and SETTINGS exchange included).
	Dialed func(addr string, err error)
}

func (c *Config) dialTimeout() time.Duration { return positiveOr(c.DialTimeout, DefaultDialTimeout) }

func (c *Config) maxStreams() uint32 {
	return uint32(positiveOr(c.MaxStreamsPerConn, DefaultMaxStreamsPerConn))
}

func (c *Config) idleTimeout() time.Duration {
	if c.IdleTimeout == 0 {
		return DefaultIdleTimeout
	}
	return c.IdleTimeout
}

func (c *Config) pingTimeout() time.Duration { return positiveOr(c.PingTimeout, DefaultPingTimeout) }

func (c *Config) streamWindow() int32 { return positiveOr(c.StreamWindow, DefaultStreamWindow) }

func (c *Config) connWindow() int32 {
	if c.ConnWindow > 0 {
		// The connection window starts at 65,535 and can only be grown.
		return max(c.ConnWindow, initialWindow)
	}
	return DefaultConnWindow
}

// positiveOr returns v if it is positive, else def: a Config field whose
// zero (or negative) value means its default.
func positiveOr[T int | int32 | time.Duration](v, def T) T {
	if v > 0 {
		return v
	}
	return def
}
