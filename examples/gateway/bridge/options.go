package bridge

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"net/url"
	"time"

	"github.com/sagemaker-bidi/sagemaker-bidi/eventstream"
)

// Defaults of the [Options] whose zero value means "default".
const (
	DefaultContainer      = "ws://localhost:8080"
	DefaultVariant        = "AllTraffic"
	DefaultInvocationPath = "invocations-bidirectional-stream"
	DefaultPingInterval   = 60 * time.Second
	DefaultMaxMissedPongs = 5
	DefaultHealthTimeout  = 2 * time.Second
	DefaultHealthInterval = 5 * time.Second
	DefaultDialTimeout    = SageMakerAcceptLimit
	DefaultCloseTimeout   = 5 * time.Second
	DefaultMaxFrameSize   = 16 << 20
)

// SageMakerAcceptLimit is the time SageMaker gives a model container to
// accept its WebSocket connection (AWS's container contract for
// bidirectional streaming). A container slower than this works locally
// with a longer [Options.DialTimeout] but fails on SageMaker.
const SageMakerAcceptLimit = 250 * time.Millisecond

// MaxFrameSizeLimit is the largest allowed [Options.MaxFrameSize]: the
// largest payload of an event-stream message (24 MiB), since each frame
// becomes one PayloadPart.
const MaxFrameSizeLimit = eventstream.DefaultMaxPayloadLen

// Options configure a [Handler]. The zero value of every field means its
// documented default.
type Options struct {
	// Container is the base URL of the model container: ws:// (or
	// http://) for plain TCP, wss:// (or https://) for TLS, with no path
	// beyond "/", no query and no fragment. Sessions open their WebSocket
	// on this host at "/" + ModelInvocationPath (default
	// DefaultInvocationPath) with ModelQueryString as the query, and the
	// health check is GET /ping on the same host over HTTP. "" means
	// DefaultContainer.
	Container string

	// EndpointName is the only endpoint name the handler serves: a
	// request naming another is answered 400 InputValidationError, as
	// SageMaker answers a name it does not know. "" serves any name (the
	// name is logged with each session, and the gateway says at start
	// that any name is accepted).
	EndpointName string

	// Variant is the production variant the gateway reports in
	// X-Amzn-Invoked-Production-Variant, and the only TargetVariant it
	// accepts. "" means DefaultVariant.
	Variant string

	// PingInterval is how often the gateway pings the container. 0 means
	// DefaultPingInterval; a negative value disables pings.
	PingInterval time.Duration

	// MaxMissedPongs is the number of consecutive ping intervals without
	// a pong after which the gateway gives up on the container. 0 means
	// DefaultMaxMissedPongs.
	MaxMissedPongs int

	// HealthTimeout bounds each health check, GET /ping. 0 means
	// DefaultHealthTimeout; a negative value disables health checks
	// (every container counts as healthy).
	HealthTimeout time.Duration

	// HealthInterval is how often the handler checks the container's
	// health, on its own schedule as SageMaker does, not per session:
	// sessions are refused (424 ModelError) while the last check failed.
	// 0 means DefaultHealthInterval.
	HealthInterval time.Duration

	// DialTimeout bounds the opening of the container's WebSocket (TCP
	// connection and handshake). 0 means DefaultDialTimeout, SageMaker's
	// limit (SageMakerAcceptLimit); a longer one lets a slow container
	// pass locally that SageMaker would refuse, and the log says so.
	DialTimeout time.Duration

	// DialContext dials the container's TCP connections, for its
	// WebSocket and its health checks. Nil means a net.Dialer. Tests set
	// it to run a gateway and its container over connections in memory.
	DialContext func(ctx context.Context, network, addr string) (net.Conn, error)

	// CloseTimeout is how long the gateway waits for the container's close
	// frame after sending its own, and for a close frame to be written.
	// 0 means DefaultCloseTimeout.
	CloseTimeout time.Duration

	// MaxFrameSize bounds the payload of a frame from the container, in
	// bytes; a larger frame fails the session (close code 1009). 0 means
	// DefaultMaxFrameSize; at most MaxFrameSizeLimit.
	MaxFrameSize int

	// Logger receives lifecycle events (sessions opened and ended,
	// refused upgrades, failed health checks). Payloads, query strings and
	// credentials are never logged. Nil discards the events.
	Logger *slog.Logger
}

// resolve fills in the defaults and checks the options.
func (o Options) resolve() (Options, *url.URL, error) {
	if o.Container == "" {
		o.Container = DefaultContainer
	}
	if o.Variant == "" {
		o.Variant = DefaultVariant
	}
	if o.PingInterval == 0 {
		o.PingInterval = DefaultPingInterval
	}
	if o.MaxMissedPongs <= 0 {
		o.MaxMissedPongs = DefaultMaxMissedPongs
	}
	if o.HealthTimeout == 0 {
		o.HealthTimeout = DefaultHealthTimeout
	}
	if o.HealthInterval <= 0 {
		o.HealthInterval = DefaultHealthInterval
	}
	if o.DialTimeout <= 0 {
		o.DialTimeout = DefaultDialTimeout
	}
	if o.CloseTimeout <= 0 {
		o.CloseTimeout = DefaultCloseTimeout
	}
	if o.MaxFrameSize == 0 {
		o.MaxFrameSize = DefaultMaxFrameSize
	}
	if o.MaxFrameSize < 0 || o.MaxFrameSize > MaxFrameSizeLimit {
		return o, nil, fmt.Errorf("bridge: MaxFrameSize %d is not in 1..%d", o.MaxFrameSize, MaxFrameSizeLimit)
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	u, err := parseContainer(o.Container)
	if err != nil {
		return o, nil, err
	}
	return o, u, nil
}

// parseContainer checks a container base URL.
func parseContainer(s string) (*url.URL, error) {
	u, err := url.Parse(s)
	if err != nil {
		return nil, fmt.Errorf("bridge: container URL: %w", err)
	}
	switch u.Scheme {
	case "ws", "wss", "http", "https":
	default:
		return nil, fmt.Errorf("bridge: container URL %q: scheme must be ws or wss", s)
	}
	if u.Host == "" {
		return nil, fmt.Errorf("bridge: container URL %q has no host", s)
	}
	if (u.Path != "" && u.Path != "/") || u.RawQuery != "" || u.Fragment != "" || u.User != nil {
		return nil, fmt.Errorf("bridge: container URL %q must be scheme://host:port only (the path comes from ModelInvocationPath)", s)
	}
	return u, nil
}
