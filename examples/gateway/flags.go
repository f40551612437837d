package main

import (
	"flag"
	"fmt"
	"io"
	"time"

	"github.com/sagemaker-bidi/sagemaker-bidi/examples/gateway/bridge"
)

// config holds the command line.
type config struct {
	addr, container             string
	h2c                         bool
	certOut                     string
	printCert                   bool
	tlsCert, tlsKey             string
	accessKey, secretKey, token string
	acceptAny                   bool
	region, variant             string
	pingInterval                time.Duration
	maxMissedPongs              int
	healthTimeout, dialTimeout  time.Duration
	healthInterval              time.Duration
	closeTimeout                time.Duration
	maxStreamAge, shutdownGrace time.Duration
	maxFrameSize                int
	quiet                       bool
	endpoint                    string
	handshakeTimeout            time.Duration
	idleTimeout                 time.Duration
	maxConnections, maxSessions int
	maxEventSize                int
	record                      recordFlags // record.go
}

// newFlagSet defines every flag on a new flag set writing to out.
func newFlagSet(c *config, out io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet("gateway", flag.ContinueOnError)
	fs.SetOutput(out)
	fs.StringVar(&c.addr, "addr", "localhost:8443", "listen `address` (host:port), e.g. -addr 127.0.0.1:9443; SageMaker's port is 8443")
	fs.StringVar(&c.container, "container", bridge.DefaultContainer, "model container base `URL` (ws:// or wss://, no path), e.g. -container ws://localhost:9090")
	fs.BoolVar(&c.h2c, "h2c", false, "serve unencrypted HTTP/2 (prior knowledge) instead of TLS; clients then use http://, e.g. -h2c")
	fs.StringVar(&c.certOut, "cert-out", "", "write the gateway's TLS certificate (PEM) to `file` for clients to trust, e.g. -cert-out /tmp/gateway.pem")
	fs.BoolVar(&c.printCert, "print-cert", false, "print the gateway's TLS certificate (PEM) on standard output, e.g. -print-cert > gateway.pem")
	fs.StringVar(&c.tlsCert, "tls-cert", "", "serve this certificate `file` (PEM) instead of a generated one (with -tls-key), e.g. -tls-cert cert.pem")
	fs.StringVar(&c.tlsKey, "tls-key", "", "private key `file` (PEM) of -tls-cert, e.g. -tls-key key.pem")
	fs.StringVar(&c.accessKey, "access-key", "", "access key `id` whose signatures are accepted (default $AWS_ACCESS_KEY_ID), e.g. -access-key AKIDLOCAL")
	fs.StringVar(&c.secretKey, "secret-key", "", "secret access `key` of -access-key (default $AWS_SECRET_ACCESS_KEY, which is safer: flags show in ps), e.g. -secret-key local-secret")
	fs.StringVar(&c.token, "session-token", "", "session `token` the requests must sign (default $AWS_SESSION_TOKEN when the keys come from the environment, which is safer: flags show in ps), e.g. -session-token TOKEN")
	fs.BoolVar(&c.acceptAny, "accept-any-signature", false, "accept requests whatever their SigV4 signatures (or none), e.g. -accept-any-signature")
	fs.StringVar(&c.region, "region", "", "signing `region` the requests must use (default $AWS_REGION, $AWS_DEFAULT_REGION, else us-west-2), e.g. -region eu-west-1")
	fs.StringVar(&c.variant, "variant", bridge.DefaultVariant, "production variant `name` answered in X-Amzn-Invoked-Production-Variant, e.g. -variant Blue")
	fs.DurationVar(&c.pingInterval, "ping-interval", bridge.DefaultPingInterval, "WebSocket ping `interval` towards the container (negative: no pings), e.g. -ping-interval 5s")
	fs.IntVar(&c.maxMissedPongs, "max-missed-pongs", bridge.DefaultMaxMissedPongs, "close the container's WebSocket after `n` ping intervals without a pong, e.g. -max-missed-pongs 3")
	fs.DurationVar(&c.healthTimeout, "health-timeout", bridge.DefaultHealthTimeout, "`timeout` of each GET /ping health check (negative: no checks), e.g. -health-timeout 500ms")
	fs.DurationVar(&c.healthInterval, "health-interval", bridge.DefaultHealthInterval, "`interval` of the GET /ping health checks, made on a schedule as SageMaker does, never per session, e.g. -health-interval 1s")
	fs.DurationVar(&c.dialTimeout, "dial-timeout", bridge.DefaultDialTimeout, "`time` the container has to accept the WebSocket; the default is SageMaker's limit, a longer one lets a slow container pass here that fails on SageMaker, e.g. -dial-timeout 2s")
	fs.DurationVar(&c.maxStreamAge, "max-stream-age", bridge.DefaultMaxStreamAge, "connection cap: streams older than this `duration` end with an InternalStreamFailure, as SageMaker ends long connections (negative: no cap), e.g. -max-stream-age 1m")
	fs.DurationVar(&c.shutdownGrace, "shutdown-grace", 10*time.Second, "on Ctrl-C or SIGTERM, `time` running sessions get to finish before they are aborted, e.g. -shutdown-grace 30s")
	fs.DurationVar(&c.closeTimeout, "close-timeout", bridge.DefaultCloseTimeout, "`time` to wait for the container's close frame after the gateway's, e.g. -close-timeout 1s")
	fs.IntVar(&c.maxFrameSize, "max-frame-size", bridge.DefaultMaxFrameSize, fmt.Sprintf("largest frame accepted from the container, in `bytes` (at most %d), e.g. -max-frame-size 1048576", bridge.MaxFrameSizeLimit))
	fs.BoolVar(&c.quiet, "q", false, "log only warnings and errors, e.g. -q")
	fs.StringVar(&c.endpoint, "endpoint", "", "the only endpoint `name` served; others get 400 as SageMaker answers an unknown endpoint (default: any name), e.g. -endpoint my-endpoint")
	fs.DurationVar(&c.handshakeTimeout, "handshake-timeout", bridge.DefaultHandshakeTimeout, "`time` a new connection has for its TLS handshake (h2c: its HTTP/2 preface) (negative: no limit), e.g. -handshake-timeout 5s")
	fs.DurationVar(&c.idleTimeout, "idle-timeout", bridge.DefaultIdleTimeout, "close a client connection with no stream open for this `time` (negative: never), e.g. -idle-timeout 2m")
	fs.IntVar(&c.maxConnections, "max-connections", bridge.DefaultMaxConnections, "client `connections` held at once; more are closed at once (negative: no cap), e.g. -max-connections 4096")
	fs.IntVar(&c.maxSessions, "max-sessions", bridge.DefaultMaxSessions, "`sessions` running at once; more get 503 ServiceUnavailableError (negative: no cap), e.g. -max-sessions 100")
	fs.IntVar(&c.maxEventSize, "max-event-size", bridge.DefaultMaxEventSize, "largest client event (a message part on its way to the container, with its headers) a session buffers, in `bytes`; a larger one fails the stream (negative: the format's 24 MiB), e.g. -max-event-size 4194304")
	c.record.define(fs)
	fs.Usage = func() { usage(fs) }
	return fs
}

func usage(fs *flag.FlagSet) {
	out := fs.Output()
	fmt.Fprint(out, `Usage: gateway [flags]

A local SageMaker bidirectional-streaming endpoint for a real model container.
It serves InvokeEndpointWithBidirectionalStream (HTTP/2, SigV4, the service's
request checks) and joins each session to a new WebSocket on the container,
mapping each PayloadPart to one WebSocket frame and back, as SageMaker does.

Flags:
`)
	fs.PrintDefaults()
	fmt.Fprint(out, `
Examples:
  # the sample container, then the gateway with the environment's credentials
  go run ./examples/container &
  AWS_ACCESS_KEY_ID=AKIDLOCAL AWS_SECRET_ACCESS_KEY=local-secret \
    go run ./examples/gateway -cert-out /tmp/gateway.pem

  # quick tests: unencrypted HTTP/2, any signature, short pings
  go run ./examples/gateway -h2c -addr localhost:8081 -accept-any-signature -ping-interval 5s

Clients use the gateway's URL as their endpoint (BaseEndpoint, or
AWS_ENDPOINT_URL_SAGEMAKER_RUNTIME_HTTP2=https://localhost:8443) and trust the
certificate written with -cert-out (a new one each run unless -tls-cert is set).

Ctrl-C or SIGTERM stops the gateway gracefully: no new sessions, running ones
get -shutdown-grace to finish, then are aborted. Exit codes: 0 stopped (by
SIGTERM too), 1 failed, 2 usage, 130 interrupted (Ctrl-C).
`)
}
