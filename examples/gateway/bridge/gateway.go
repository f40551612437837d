package bridge

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"log"
	"log/slog"
	"net"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"

	"github.com/sagemaker-bidi/sagemaker-bidi/bidi/biditest"
	"github.com/sagemaker-bidi/sagemaker-bidi/bidi/cassette"
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

	// ViolationPollInterval is how often rejected requests are logged.
	// 0 means 200 ms.
	ViolationPollInterval time.Duration

	// MaxStreamAge is the connection cap: a stream older than this is
	// ended as SageMaker ends a connection at its cap (about 30 minutes,
	// as users report; the service documents neither the value nor the
	// way): the client gets an InternalStreamFailure, a platform fault
	// that tells it to open a new stream, and the container's WebSocket
	// is closed with 1001 "connection cap reached". 0 means
	// DefaultMaxStreamAge; a negative value means no cap.
	MaxStreamAge time.Duration

	// Record, if set, records every session: it is called before the
	// session is served and returns the sink of its cassette events (see
	// biditest.Server.Record), or nil.
	Record func(st *biditest.Stream) cassette.Sink
}

// DefaultMaxStreamAge is the default connection cap of a [Gateway].
const DefaultMaxStreamAge = 30 * time.Minute

// Gateway is a local SageMaker bidirectional-streaming endpoint in front
// of a model container: a [biditest.Server] (HTTP/2, SigV4, the service's
// request checks) running a [Handler]. It is safe for concurrent use.
type Gateway struct {
	srv     *biditest.Server
	handler *Handler
	log     *slog.Logger

	stop      chan struct{}
	done      chan struct{}
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
	g := &Gateway{handler: h, log: h.log, stop: make(chan struct{}), done: make(chan struct{})}
	srv := biditest.NewUnstartedServer(biditest.HandlerFunc(func(st *biditest.Stream) {
		defer g.srv.ForgetStream(st)
		h.ServeBidi(st)
	}))
	srv.Listener = cfg.Listener
	srv.H2C = cfg.H2C
	srv.TLS = cfg.TLS
	srv.SkipVerify = cfg.AcceptAnySignature
	if !cfg.AcceptAnySignature {
		srv.Credentials = cfg.Credentials
	}
	srv.Region = cfg.Region
	srv.Record = cfg.Record
	srv.MaxRecorded = -1 // keep no parts: the gateway makes no assertions
	srv.ProductionVariant = h.opts.Variant
	switch {
	case cfg.MaxStreamAge == 0:
		srv.MaxStreamAge = DefaultMaxStreamAge
	case cfg.MaxStreamAge > 0:
		srv.MaxStreamAge = cfg.MaxStreamAge
	}
	h.maxStreamAge = srv.MaxStreamAge
	srv.ErrorLog = log.New(logWriter{h.log}, "", 0)
	g.srv = srv
	srv.Start()

	interval := cfg.ViolationPollInterval
	if interval <= 0 {
		interval = 200 * time.Millisecond
	}
	go g.logViolations(interval)
	return g, nil
}

// URL returns the gateway's base URL, for example
// "https://127.0.0.1:8443": the BaseEndpoint of a client.
func (g *Gateway) URL() string { return g.srv.URL }

// Handler returns the gateway's handler.
func (g *Gateway) Handler() *Handler { return g.handler }

// Server returns the underlying test server, for its HTTPClient and
// AWSConfig helpers.
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
		close(g.stop)
		<-g.done
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

// logViolations logs the requests the server rejected, until Close.
func (g *Gateway) logViolations(interval time.Duration) {
	defer close(g.done)
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-t.C:
		case <-g.stop:
		}
		for _, err := range g.srv.TakeViolations() {
			var v *biditest.Violation
			if errors.As(err, &v) {
				g.log.Warn("request rejected", "rule", v.Rule, "status", v.StatusCode(), "error_type", v.ErrorType(), "reason", v.Message)
			}
		}
		select {
		case <-g.stop:
			return
		default:
		}
	}
}

// logWriter sends net/http's server errors (TLS handshake failures, for
// example from a client that does not trust the certificate) to the
// logger.
type logWriter struct{ log *slog.Logger }

// Write logs one line of the server's error log as a warning.
func (w logWriter) Write(p []byte) (int, error) {
	msg := string(p)
	for len(msg) > 0 && msg[len(msg)-1] == '\n' {
		msg = msg[:len(msg)-1]
	}
	w.log.Warn("http server", "err", msg)
	return len(p), nil
}
