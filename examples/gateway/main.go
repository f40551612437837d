// Command gateway is a local SageMaker gateway for real model containers:
// it listens like a SageMaker runtime endpoint for
// InvokeEndpointWithBidirectionalStream (HTTPS with a generated
// certificate on localhost:8443, or h2c), verifies SigV4 signatures, and
// joins each session to a new WebSocket on the model container
// (ws://localhost:8080 by default), mapping parts and frames one to one
// as SageMaker does. Package bridge holds the logic and documents the
// mapping.
//
// Run it with
//
//	go run ./examples/gateway -cert-out /tmp/gateway.pem
//
// and see go run ./examples/gateway -h for every flag.
package main

import (
	"context"
	"crypto/tls"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"os/signal"
	"syscall"

	"github.com/aws/aws-sdk-go-v2/aws"

	"github.com/sagemaker-bidi/sagemaker-bidi/examples/gateway/bridge"
)

func main() {
	// Signals are handled before the gateway listens, so that a supervisor
	// that signals as soon as it sees "listening" is heard.
	ctx, stop := notifySignals()
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr, os.Getenv)
	stop()
	os.Exit(code)
}

// Exit codes.
const (
	exitOK          = 0
	exitError       = 1   // the gateway could not start or failed
	exitUsage       = 2   // bad command line
	exitInterrupted = 130 // stopped by Ctrl-C (SIGINT), as shells report it
)

// The causes of run's context when a signal stops the gateway: Ctrl-C
// (exit code 130), or SIGTERM, the way supervisors and SageMaker stop a
// process (a requested stop: exit code 0).
var (
	errInterrupted = errors.New("interrupted")
	errTerminated  = errors.New("terminated")
)

// notifySignals returns a context cancelled, with cause errInterrupted or
// errTerminated, by the first SIGINT or SIGTERM. A second signal kills the
// program as usual, so a stuck shutdown still stops. stop releases the
// signals.
func notifySignals() (ctx context.Context, stop func()) {
	ctx, cancel := context.WithCancelCause(context.Background())
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, os.Interrupt, syscall.SIGTERM)
	go func() {
		select {
		case s := <-sig:
			signal.Stop(sig)
			if s == os.Interrupt {
				cancel(errInterrupted)
			} else {
				cancel(errTerminated)
			}
		case <-ctx.Done():
		}
	}()
	return ctx, func() {
		signal.Stop(sig)
		cancel(context.Canceled)
	}
}

// run runs the gateway until ctx ends and returns the exit code. Logs go
// to stderr; the certificate, with -print-cert, to stdout.
func run(ctx context.Context, args []string, stdout, stderr io.Writer, getenv func(string) string) int {
	var c config
	fs := newFlagSet(&c, stderr)
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return exitOK
		}
		return exitUsage
	}
	usageErr := func(format string, a ...any) int {
		fmt.Fprintf(stderr, "gateway: "+format+" (see gateway -h)\n", a...)
		return exitUsage
	}
	if fs.NArg() > 0 {
		return usageErr("unexpected arguments %q", fs.Args())
	}
	creds, err := verifyCredentials(&c, getenv)
	if err != nil {
		return usageErr("%v", err)
	}
	if c.h2c && (c.certOut != "" || c.printCert || c.tlsCert != "") {
		return usageErr("-h2c serves no certificate: drop -cert-out, -print-cert and -tls-cert")
	}
	if (c.tlsCert == "") != (c.tlsKey == "") {
		return usageErr("-tls-cert and -tls-key go together")
	}
	if c.region == "" {
		c.region = firstNonEmpty(getenv("AWS_REGION"), getenv("AWS_DEFAULT_REGION"), "us-west-2")
	}
	if c.maxFrameSize <= 0 || c.maxFrameSize > bridge.MaxFrameSizeLimit {
		return usageErr("-max-frame-size must be in 1..%d", bridge.MaxFrameSizeLimit)
	}
	for _, f := range []struct {
		name string
		zero bool
	}{
		{"-handshake-timeout", c.handshakeTimeout == 0}, {"-idle-timeout", c.idleTimeout == 0},
		{"-max-connections", c.maxConnections == 0}, {"-max-sessions", c.maxSessions == 0},
		{"-max-event-size", c.maxEventSize == 0},
	} {
		if f.zero {
			return usageErr("%s must not be 0 (a negative value lifts the limit)", f.name)
		}
	}
	if c.maxMissedPongs <= 0 {
		return usageErr("-max-missed-pongs must be at least 1")
	}
	if c.dialTimeout <= 0 {
		return usageErr("-dial-timeout must be positive (SageMaker's limit is %v)", bridge.SageMakerAcceptLimit)
	}
	if c.healthInterval <= 0 {
		return usageErr("-health-interval must be positive")
	}
	if c.shutdownGrace < 0 {
		return usageErr("-shutdown-grace must not be negative")
	}
	if err := c.record.check(); err != nil {
		return usageErr("%v", err)
	}

	level := slog.LevelInfo
	if c.quiet {
		level = slog.LevelWarn
	}
	logger := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: level}))

	var tlsConfig *tls.Config
	if c.tlsCert != "" {
		pair, err := tls.LoadX509KeyPair(c.tlsCert, c.tlsKey)
		if err != nil {
			logger.Error("loading the TLS certificate", "err", err)
			return exitError
		}
		tlsConfig = &tls.Config{Certificates: []tls.Certificate{pair}}
	}
	rec, err := startRecording(&c.record, logger)
	if err != nil {
		logger.Error("starting the recorder", "err", err)
		return exitError
	}
	defer rec.Close()
	ln, err := net.Listen("tcp", c.addr)
	if err != nil {
		logger.Error("listen", "err", err)
		return exitError
	}
	g, err := bridge.Start(bridge.Config{
		Options: bridge.Options{
			Container:      c.container,
			Variant:        c.variant,
			PingInterval:   c.pingInterval,
			MaxMissedPongs: c.maxMissedPongs,
			HealthTimeout:  c.healthTimeout,
			HealthInterval: c.healthInterval,
			DialTimeout:    c.dialTimeout,
			CloseTimeout:   c.closeTimeout,
			MaxFrameSize:   c.maxFrameSize,
			EndpointName:   c.endpoint,
			Logger:         logger,
		},
		Listener:           ln,
		H2C:                c.h2c,
		TLS:                tlsConfig,
		Credentials:        creds,
		AcceptAnySignature: c.acceptAny,
		Region:             c.region,
		MaxStreamAge:       c.maxStreamAge,
		HandshakeTimeout:   c.handshakeTimeout,
		IdleTimeout:        c.idleTimeout,
		MaxConnections:     c.maxConnections,
		MaxSessions:        c.maxSessions,
		MaxEventSize:       c.maxEventSize,
		Record:             rec.hook(),
	})
	if err != nil {
		logger.Error("starting the gateway", "err", err)
		return exitError
	}
	defer g.Close()

	if c.certOut != "" {
		if err := os.WriteFile(c.certOut, g.CertificatePEM(), 0o644); err != nil {
			logger.Error("writing the certificate", "err", err)
			return exitError
		}
		logger.Info("certificate written", "file", c.certOut)
	}
	if c.printCert {
		stdout.Write(g.CertificatePEM())
	}
	opts := g.Handler().Options()
	signatures := []any{"signatures", "verified", "access_key_id", creds.AccessKeyID, "region", c.region}
	if c.acceptAny {
		signatures = []any{"signatures", "any accepted"}
	}
	endpoint := opts.EndpointName
	if endpoint == "" {
		endpoint = "any (set -endpoint to refuse other names)"
	}
	logger.Info("listening", append([]any{"url", g.URL(), "container", opts.Container, "endpoint", endpoint, "variant", opts.Variant}, signatures...)...)
	if warning := exposureWarning(ln.Addr(), c.acceptAny, c.h2c); warning != "" {
		logger.Warn(warning, "addr", ln.Addr().String())
	}
	if opts.DialTimeout > bridge.SageMakerAcceptLimit {
		logger.Warn("-dial-timeout is over SageMaker's limit: a container that needs it works here and fails on SageMaker",
			"dial_timeout", opts.DialTimeout, "sagemaker_limit", bridge.SageMakerAcceptLimit)
	}
	if err := g.Handler().Health(ctx); err != nil && ctx.Err() == nil {
		logger.Warn("container not ready: sessions get 424 ModelError until GET /ping answers 200", "err", err)
	} else if err == nil {
		logger.Info("container ready")
	}

	select {
	case <-ctx.Done():
	case <-g.Done():
		logger.Error("the listener failed: no more connections can be accepted", "err", g.Err())
		g.Close()
		return exitError
	}
	logger.Info("shutting down: no new sessions; running ones may finish", "active_sessions", g.Handler().ActiveSessions(), "grace", c.shutdownGrace)
	sctx, cancel := context.WithTimeout(context.Background(), c.shutdownGrace)
	if err := g.Shutdown(sctx); err != nil {
		logger.Warn("sessions aborted at the end of the grace period", "grace", c.shutdownGrace)
	}
	cancel()
	logger.Info("stopped")
	if errors.Is(context.Cause(ctx), errInterrupted) {
		fmt.Fprintln(stderr, "gateway: interrupted")
		return exitInterrupted
	}
	return exitOK
}

// verifyCredentials returns the credentials to verify signatures with: the
// flags, else the environment's; none is an error unless any signature
// is accepted.
func verifyCredentials(c *config, getenv func(string) string) (aws.Credentials, error) {
	switch {
	case c.accessKey != "" || c.secretKey != "":
		if c.accessKey == "" || c.secretKey == "" {
			return aws.Credentials{}, errors.New("-access-key and -secret-key go together")
		}
		return aws.Credentials{AccessKeyID: c.accessKey, SecretAccessKey: c.secretKey, SessionToken: c.token, Source: "flags"}, nil
	case getenv("AWS_ACCESS_KEY_ID") != "" && getenv("AWS_SECRET_ACCESS_KEY") != "":
		return aws.Credentials{
			AccessKeyID:     getenv("AWS_ACCESS_KEY_ID"),
			SecretAccessKey: getenv("AWS_SECRET_ACCESS_KEY"),
			SessionToken:    firstNonEmpty(c.token, getenv("AWS_SESSION_TOKEN")),
			Source:          "environment",
		}, nil
	case c.acceptAny:
		return aws.Credentials{}, nil
	}
	return aws.Credentials{}, errors.New("no credentials: set -access-key and -secret-key, or AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, or pass -accept-any-signature")
}

// exposureWarning returns the warning to log when addr is not a loopback
// address (an unspecified address such as ":8443" listens on every
// interface), naming what -accept-any-signature and -h2c add to the
// risk, and "" on loopback.
func exposureWarning(addr net.Addr, acceptAny, h2c bool) string {
	if ta, ok := addr.(*net.TCPAddr); ok && ta.IP.IsLoopback() {
		return ""
	}
	risk := "other machines can reach the gateway"
	switch {
	case acceptAny:
		risk += ", and -accept-any-signature lets anyone use the container"
	case h2c:
		risk += ", and -h2c sends everything in clear text"
	}
	return "listening beyond loopback: " + risk + "; use -addr localhost:PORT unless that is intended"
}

func firstNonEmpty(vals ...string) string {
	for _, v := range vals {
		if v != "" {
			return v
		}
	}
	return ""
}
