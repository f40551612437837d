package bridge

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"log"
	"log/slog"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"

	"github.com/sagemaker-bidi/sagemaker-bidi/bidi/biditest"
	"github.com/sagemaker-bidi/sagemaker-bidi/bidi/cassette"
	"github.com/sagemaker-bidi/sagemaker-bidi/internal/logthrottle"
)

// Config configures a [Gateway]: the SageMaker side (listener, TLS,
// signature checks) and, in Options, the container side.
type Config struct {
	// Options configure the [Handler] that talks to the container.
	Options

	// Listener accepts the clients' connections. Nil means a new
	// listener on a loopback port chosen by the system.
	Listener net.Listener

	// H2C serves unencrypted HTTP/2 (prior knowledge) instead of TLS.
	H2C bool

	// TLS is the TLS configuration; nil means a self-signed certificate
	// generated at Start for 127.0.0.1, ::1 and localhost, valid for a
	// week (see [Gateway.CertificatePEM]). A configuration without
	// certificates gets that certificate too.
	TLS *tls.Config

	// Credentials are the only credentials whose SigV4 signatures the
	// gateway accepts, on the request and on every event. Required unless
	// AcceptAnySignature is set.
	Credentials aws.Credentials

	// AcceptAnySignature accepts requests and events whatever their
	// signatures, and even unsigned ones. The other checks remain.
	AcceptAnySignature bool

	// Region is the signing region the gateway expects. "" means
	// us-west-2.
	Region string

	// MaxStreamAge is the connection cap: a stream older than this is
	// ended as SageMaker ends a connection at its cap (about 30 minutes,
	// as users report; the service documents neither the value nor the
	// way): the client gets an InternalStreamFailure, a platform fault
	// that tells it to open a new stream, and the container's WebSocket
	// is closed with 1001 "connection cap reached". 0 means
	// DefaultMaxStreamAge; a negative value means no cap.
	MaxStreamAge time.Duration

	// HandshakeTimeout bounds a new connection's TLS handshake (or, with
	// H2C, its HTTP/2 preface). 0 means DefaultHandshakeTimeout; a
	// negative value means no limit.
	HandshakeTimeout time.Duration

	// IdleTimeout closes a client connection that has had no stream open
	// for that long. 0 means DefaultIdleTimeout; a negative value means
	// no limit.
	IdleTimeout time.Duration

	// MaxConnections caps the client connections held at once; one over
	// the cap is closed at once. 0 means DefaultMaxConnections; a
	// negative value means no cap.
	MaxConnections int

	// MaxSessions caps the sessions running at once; a request over the
	// cap is answered 503 ServiceUnavailableError. 0 means
	// DefaultMaxSessions; a negative value means no cap.
	MaxSessions int

	// MaxEventSize caps the bytes a session buffers for one client event
	// (a PayloadPart with its headers, inside its signed envelope), that
	// is the size of a message part on its way to the container: a larger
	// event fails the stream from its length prefix, before its bytes are
	// held. 0 means DefaultMaxEventSize; a negative value means the
	// event-stream limit, 24 MiB.
	MaxEventSize int

	// Record, if set, records every session: it is called before the
	// session is served and returns the sink of its cassette events (see
	// biditest.Server.Record), or nil. The end event carries the close
	// code and reason of the container's WebSocket (or the code the
	// gateway closed it with), which a client that reads a clean end is
	// not told.
	Record func(st *biditest.Stream) cassette.Sink
}

// Defaults of the [Config] fields whose zero value means "default". With
// them, what clients can make the gateway hold is bounded: about
// MaxSessions × (MaxEventSize + the 1 MiB HTTP/2 window of a stream +
// MaxFrameSize of a container frame on its way) in the worst case, and
// far less in practice (see the package documentation).
const (
	DefaultMaxStreamAge     = 30 * time.Minute
	DefaultHandshakeTimeout = 10 * time.Second
	DefaultIdleTimeout      = 30 * time.Second
	DefaultMaxConnections   = 1024
	DefaultMaxSessions      = 1024
	DefaultMaxEventSize     = 1 << 20
)

// Gateway is a local SageMaker bidirectional-streaming endpoint in front
// of a model container: a [biditest.Server] (HTTP/2, SigV4, the service's
// request checks) running a [Handler]. It is safe for concurrent use.
type Gateway struct {
	srv     *biditest.Server
	handler *Handler
	log     *slog.Logger
	ln      *watchedListener
	vlog    logthrottle.Throttle // of the violation lines

	closeOnce sync.Once
}

// Start starts a gateway configured by cfg. On error, cfg.Listener is
// closed.
func Start(cfg Config) (*Gateway, error) {
	g, err := start(cfg)
	if err != nil && cfg.Listener != nil {
		cfg.Listener.Close()
	}
	return g, err
}

func start(cfg Config) (*Gateway, error) {
	if !cfg.AcceptAnySignature && (cfg.Credentials.AccessKeyID == "" || cfg.Credentials.SecretAccessKey == "") {
		return nil, errors.New("bridge: no credentials to verify signatures with (set Credentials, or AcceptAnySignature)")
	}
	h, err := NewHandler(cfg.Options)
	if err != nil {
		return nil, err
	}
	g := &Gateway{handler: h, log: h.log}
	srv := biditest.NewUnstartedServer(biditest.HandlerFunc(func(st *biditest.Stream) {
		defer g.srv.ForgetStream(st)
		h.ServeBidi(st)
	}))
	ln := cfg.Listener
	if ln == nil {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			h.Close()
			return nil, fmt.Errorf("bridge: listening on a loopback port: %w", err)
		}
		ln = l
	}
	g.ln = &watchedListener{Listener: ln, failed: make(chan struct{})}
	srv.Listener = g.ln
	srv.HandshakeTimeout = orDefault(cfg.HandshakeTimeout, DefaultHandshakeTimeout)
	srv.IdleTimeout = orDefault(cfg.IdleTimeout, DefaultIdleTimeout)
	srv.MaxConnections = orDefault(cfg.MaxConnections, DefaultMaxConnections)
	srv.MaxSessions = orDefault(cfg.MaxSessions, DefaultMaxSessions)
	srv.MaxEventSize = orDefault(cfg.MaxEventSize, DefaultMaxEventSize)
	srv.H2C = cfg.H2C
	srv.TLS = cfg.TLS
	srv.SkipVerify = cfg.AcceptAnySignature
	if !cfg.AcceptAnySignature {
		srv.Credentials = cfg.Credentials
	}
	srv.Region = cfg.Region
	if cfg.Record != nil {
		srv.Record = h.recordWith(cfg.Record)
	}
	srv.MaxRecorded = -1 // keep no parts: the gateway makes no assertions
	srv.ProductionVariant = h.opts.Variant
	switch {
	case cfg.MaxStreamAge == 0:
		srv.MaxStreamAge = DefaultMaxStreamAge
	case cfg.MaxStreamAge > 0:
		srv.MaxStreamAge = cfg.MaxStreamAge
	}
	h.maxStreamAge = srv.MaxStreamAge
	srv.ErrorLog = log.New(&logWriter{log: h.log}, "", 0)
	srv.OnViolation = g.logViolation
	g.srv = srv
	srv.Start()
	return g, nil
}

// orDefault returns v, def when v is 0, or -1 (no limit, for biditest)
// when v is negative.
func orDefault[T int | time.Duration](v, def T) T {
	switch {
	case v == 0:
		return def
	case v < 0:
		return -1
	}
	return v
}

// Done is closed when the gateway can accept no more connections: its
// listener failed with a permanent error (see [Gateway.Err]). Accepts
// that fail for a while (the descriptor limit reached, say) are retried
// with backoff and do not close it. A supervisor should restart a
// gateway whose Done is closed: it is no longer healthy, whatever its
// container's health.
func (g *Gateway) Done() <-chan struct{} { return g.ln.failed }

// Err returns the listener's permanent error once [Gateway.Done] is
// closed, and nil before.
func (g *Gateway) Err() error {
	select {
	case <-g.ln.failed:
		return g.ln.err
	default:
		return nil
	}
}

// URL returns the gateway's base URL, for example
// "https://127.0.0.1:8443": the BaseEndpoint of a client.
func (g *Gateway) URL() string { return g.srv.URL }

// Handler returns the gateway's handler.
func (g *Gateway) Handler() *Handler { return g.handler }

// Server returns the underlying test server, for its AWSConfig helper.
func (g *Gateway) Server() *biditest.Server { return g.srv }

// Certificate returns the certificate the gateway presents, or nil in
// H2C mode.
func (g *Gateway) Certificate() *x509.Certificate { return g.srv.Certificate() }

// CertificatePEM returns the certificate the gateway presents, PEM
// encoded, for clients to trust (it is its own root), or nil in H2C mode.
func (g *Gateway) CertificatePEM() []byte {
	c := g.srv.Certificate()
	if c == nil {
		return nil
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: c.Raw})
}

// Close stops the gateway at once: it stops listening, ends every session
// (each container WebSocket is closed with 1001 "gateway shutting down"
// and given CloseTimeout to answer; the clients' streams are cut) and
// waits for every goroutine. [Gateway.Shutdown] lets sessions finish
// first. It may be called more than once.
func (g *Gateway) Close() {
	g.closeOnce.Do(func() {
		g.srv.Close()
		g.handler.Wait()
		g.handler.Close()
	})
}

// Shutdown stops the gateway gracefully: it stops accepting connections
// and streams (HTTP/2 GOAWAY), lets the running sessions finish until ctx
// ends (the grace period), then aborts those still running, each client
// getting an InternalStreamFailure that says the gateway is shutting down
// and each container WebSocket a close frame with 1001, and finally
// closes the gateway. It returns nil if every session finished in time,
// else ctx's error.
func (g *Gateway) Shutdown(ctx context.Context) error {
	err := g.srv.Shutdown(ctx)
	if err != nil {
		reason := "The endpoint is shutting down: the stream did not finish within the shutdown grace period. Open a new stream."
		if n := g.handler.Abort(reason); n > 0 {
			g.log.Warn("shutdown grace period over: sessions aborted", "sessions", n)
		}
		// The aborted sessions end within CloseTimeout (the container's
		// close answer, or the timer that drops it).
		wait, cancel := context.WithTimeout(context.Background(), g.handler.opts.CloseTimeout+time.Second)
		g.handler.waitIdle(wait)
		cancel()
	}
	g.Close()
	return err
}

// logViolation logs a request the server rejected (a few lines per kind
// and interval at most); the server calls it as it rejects one.
func (g *Gateway) logViolation(v *biditest.Violation) {
	ok, suppressed := g.vlog.Allow(v.Rule+" "+v.ErrorType, time.Now())
	if !ok {
		return
	}
	attrs := []any{"rule", v.Rule, "status", v.StatusCode, "error_type", v.ErrorType, "reason", v.Message}
	if suppressed > 0 {
		attrs = append(attrs, "similar_suppressed", suppressed)
	}
	g.log.Warn("request rejected", attrs...)
}

// logWriter sends the server's error lines (TLS handshake failures, for
// example from a client that does not trust the certificate; failed
// accepts; connections over the cap) to the logger as warnings, a few of
// each kind a minute at most: a client can cause them at will.
type logWriter struct {
	log      *slog.Logger
	throttle logthrottle.Throttle
}

// Write logs one line of the server's error log as a warning.
func (w *logWriter) Write(p []byte) (int, error) {
	msg := strings.TrimRight(string(p), "\n")
	kind := "other"
	for _, k := range []string{"TLS handshake error", "accept", "MaxConnections", "MaxSessions"} {
		if strings.Contains(msg, k) {
			kind = k
			break
		}
	}
	ok, suppressed := w.throttle.Allow(kind, time.Now())
	if !ok {
		return len(p), nil
	}
	if len(msg) > 512 {
		msg = msg[:512] + "…"
	}
	attrs := []any{"err", msg}
	if suppressed > 0 {
		attrs = append(attrs, "similar_suppressed", suppressed)
	}
	w.log.Warn("http server", attrs...)
	return len(p), nil
}

// watchedListener is the gateway's listener as biditest sees it: it
// records the first permanent accept error (not a temporary one, which
// biditest retries, nor the one Close causes) and closes failed.
type watchedListener struct {
	net.Listener
	closed atomic.Bool
	once   sync.Once
	failed chan struct{}
	err    error // set before failed is closed
}

func (l *watchedListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil && !l.closed.Load() && !errors.Is(err, net.ErrClosed) {
		var te interface{ Temporary() bool }
		if !errors.As(err, &te) || !te.Temporary() {
			l.once.Do(func() {
				l.err = err
				close(l.failed)
			})
		}
	}
	return c, err
}

func (l *watchedListener) Close() error {
	l.closed.Store(true)
	return l.Listener.Close()
}
