package bidi

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/smithy-go/logging"
	"github.com/aws/smithy-go/metrics"
	"github.com/aws/smithy-go/tracing"

	"github.com/sagemaker-bidi/sagemaker-bidi/bidi/internal/transport"
)

// Defaults and limits for [Options].
const (
	// DefaultMaxPartSize is the largest payload Send puts in one PayloadPart
	// (64 KiB). Larger messages are split into PARTIAL…COMPLETE parts. It
	// is small enough that one session's large message does not hold the
	// shared HTTP/2 connection for long (other streams' frames interleave
	// between parts, and the model can start on the first part) and that
	// a part fits the common 64 KiB HTTP/2 stream window, yet large enough
	// that the ~250 bytes of envelope, headers and signature per part cost
	// under 0.4%.
	DefaultMaxPartSize = 64 << 10

	// MaxPartSizeLimit is the largest allowed MaxPartSize (16 MiB),
	// comfortably below the event-stream payload limit of 24 MiB once
	// envelope, headers and padding are added.
	MaxPartSizeLimit = 16 << 20

	// DefaultMaxMessageSize is the default bound on a reassembled received
	// message (16 MiB).
	DefaultMaxMessageSize = 16 << 20

	// DefaultRetryMaxAttempts is the default number of attempts to open a
	// session (the first try included).
	DefaultRetryMaxAttempts = 3

	// DefaultRetryMaxBackoff is the default upper bound of the jittered
	// delay between attempts to open a session.
	DefaultRetryMaxBackoff = 5 * time.Second

	// DefaultReplayLimit is the default number of bytes of messages sent
	// before the response headers arrived that a session keeps so that it
	// can replay them on a retried open (1 MiB).
	DefaultReplayLimit = 1 << 20

	// DefaultHealthCheckInterval is the default idle time after which an
	// HTTP/2 PING checks that the peer is alive.
	DefaultHealthCheckInterval = 15 * time.Second

	// DefaultHealthCheckTimeout is the default time to wait for the PING
	// acknowledgement before the connection is declared dead.
	DefaultHealthCheckTimeout = 10 * time.Second

	// DefaultMaxStreamsPerConnection is the default cap of sessions on one
	// HTTP/2 connection (the server's own limit applies too; SageMaker's
	// is not documented, biditest's default is 250). It was chosen by
	// measurement: more sessions per connection cost no less CPU and
	// queue behind the server's per-connection work.
	DefaultMaxStreamsPerConnection = transport.DefaultMaxStreamsPerConn

	// DefaultIdleConnTimeout is the default time after which a connection
	// without sessions is closed.
	DefaultIdleConnTimeout = transport.DefaultIdleTimeout

	// DefaultDialTimeout is the default bound on establishing a connection.
	DefaultDialTimeout = transport.DefaultDialTimeout
)

// Options configures a Client. Build it with [NewFromConfig] and adjust it
// with functional options; the zero value of every field means its
// documented default. A Client copies its Options; changing them afterwards
// has no effect.
type Options struct {
	// Region is the AWS Region used for the endpoint and for signing, for
	// example "us-west-2". The legacy FIPS pseudo-regions
	// ("fips-us-east-1", "us-east-1-fips") are accepted and turn on
	// UseFIPSEndpoint.
	Region string

	// BaseEndpoint overrides the resolved endpoint, for example
	// "https://127.0.0.1:8443". A path, if present, prefixes the operation
	// path. It cannot be combined with FIPS or dual-stack endpoints.
	// NewFromConfig fills it from aws.Config.BaseEndpoint and from the
	// service-specific setting (environment variable
	// AWS_ENDPOINT_URL_SAGEMAKER_RUNTIME_HTTP2, or endpoint_url in the
	// shared config file's sagemaker_runtime_http2 services section).
	BaseEndpoint *string

	// TLSConfig is the TLS configuration of the engine's connections,
	// cloned; nil means the system roots (or the aws.Config's CA bundle).
	// Only "h2" is offered through ALPN. When it has no RootCAs, the CA
	// bundle of the aws.Config (AWS_CA_BUNDLE, ca_bundle,
	// config.WithCustomCABundle) is trusted.
	TLSConfig *tls.Config

	// DialContext dials the engine's TCP connections. Nil means a
	// net.Dialer with TCP keep-alives; dials, TLS handshakes and the
	// server's first SETTINGS are bounded by DialTimeout.
	DialContext func(ctx context.Context, network, addr string) (net.Conn, error)

	// DialTimeout bounds establishing a connection (TCP, proxy tunnel, TLS,
	// HTTP/2 SETTINGS). 0 means DefaultDialTimeout.
	DialTimeout time.Duration

	// Proxy returns the HTTPS proxy for a request, as http.Transport.Proxy
	// does; the engine tunnels through it with CONNECT. Nil means the
	// proxy function of the aws.Config's HTTP client, if any, else
	// http.ProxyFromEnvironment (HTTPS_PROXY, NO_PROXY).
	Proxy func(*http.Request) (*url.URL, error)

	// MaxStreamsPerConnection caps the sessions that share one HTTP/2
	// connection (the server's own SETTINGS_MAX_CONCURRENT_STREAMS is
	// respected too, whichever is lower). Sessions beyond a full pool wait
	// for the one connection being dialed instead of dialing their own. 0
	// means DefaultMaxStreamsPerConnection; 1 gives every session its own
	// connection.
	MaxStreamsPerConnection int

	// IdleConnTimeout closes a connection that has carried no session for
	// that long. 0 means DefaultIdleConnTimeout; negative keeps idle
	// connections until Client.CloseIdleConnections.
	IdleConnTimeout time.Duration

	// Credentials signs requests. NewFromConfig takes aws.Config's
	// provider; any provider that is not already an aws.CredentialsCache
	// is wrapped in one.
	Credentials aws.CredentialsProvider

	// UseFIPSEndpoint selects the FIPS endpoint when set to
	// aws.FIPSEndpointStateEnabled.
	UseFIPSEndpoint aws.FIPSEndpointState

	// UseDualStackEndpoint selects the dual-stack (IPv4 and IPv6) endpoint
	// when set to aws.DualStackEndpointStateEnabled.
	UseDualStackEndpoint aws.DualStackEndpointState

	// Logger receives diagnostic messages. Nil discards them. Payloads,
	// credentials and signatures are never logged.
	Logger logging.Logger

	// ClientLogMode turns on the lifecycle log lines (session opened,
	// answered, retried, failed, closed): any non-zero mode, such as
	// aws.LogRequest|aws.LogRetries, enables them; zero, the default,
	// keeps the client silent, as AWS service clients are. Whatever the
	// mode, payloads, credentials and signatures are never logged.
	ClientLogMode aws.ClientLogMode

	// TracerProvider, if set, traces each session with one span from Open
	// to the stream's end (see SpanName and the Event* and Attr*
	// constants). Nil, the default, records nothing and costs nothing.
	TracerProvider tracing.TracerProvider

	// MeterProvider, if set, receives the client's metrics: the
	// operation-level client.call.duration, client.call.attempts and
	// client.call.errors, and the stream-level ones under
	// StreamMetricPrefix. Nil, the default, records nothing.
	MeterProvider metrics.MeterProvider

	// AppID is an application identifier added to the User-Agent header.
	AppID string

	// MaxPartSize is the largest payload sent in one PayloadPart; larger
	// messages are fragmented. 0 means DefaultMaxPartSize (see there for
	// why 64 KiB); at most MaxPartSizeLimit.
	MaxPartSize int

	// MaxMessageSize bounds a reassembled received message. A larger one
	// is discarded and Recv returns a *MessageTooLargeError. 0 means
	// DefaultMaxMessageSize.
	MaxMessageSize int

	// Padding decides how many padding bytes each sent part carries (the
	// P header) to hide payload sizes. Nil means BucketPadding;
	// NoPadding{} disables padding.
	Padding PaddingPolicy

	// PaddingSource supplies the random bytes of the padding (mapped to
	// printable ASCII), for reproducible tests. Nil means a
	// cryptographically strong generator of each session's own. The
	// client's sessions share the reader and never read it concurrently
	// (each read asks for at most 4 KiB), so it need not be safe for
	// concurrent use unless it is shared beyond this Client. A read that
	// blocks holds up the Sends that need padding; a read that fails
	// fails the Send that needed it.
	PaddingSource io.Reader

	// Now is the clock used for signing. Nil means time.Now. Set it for
	// reproducible signatures in tests.
	Now func() time.Time

	// Retryer decides whether and when a failed open is tried again, as it
	// does for aws-sdk-go-v2's clients: its IsErrorRetryable for errors
	// this package does not classify itself, MaxAttempts, RetryDelay, and
	// its retry token bucket, a budget shared by the client's sessions so
	// that many sessions failing together do not storm the endpoint.
	// Errors are classified first: a 424 whose container answered 4xx, and
	// other 4xx, are never retried; 503, throttling and a transient 424
	// always qualify (budget permitting). NewFromConfig takes
	// aws.Config.Retryer; nil means a standard retryer (adaptive with
	// RetryMode adaptive) with this package's backoff.
	Retryer aws.Retryer

	// RetryMode selects the default Retryer: aws.RetryModeStandard or
	// aws.RetryModeAdaptive (client-side rate limiting). NewFromConfig
	// takes aws.Config.RetryMode.
	RetryMode aws.RetryMode

	// AwaitResponse makes Open return only once the service answered: the
	// response head arrived (the model accepted the stream) or the typed
	// HTTP error did, which Open then returns. By default Open returns as
	// soon as the request is on its way, so that messages can be sent at
	// once. OpenInput.AwaitResponse sets it for one session.
	AwaitResponse bool

	// RetryMaxAttempts is the number of attempts to open a session, the
	// first included, when the service answers 503, throttles, or reports
	// a transient "Failed to establish WebSocket connection" (424). 0 means
	// DefaultRetryMaxAttempts; 1 disables retries. Only opening is
	// retried, never a stream the model has already answered.
	RetryMaxAttempts int

	// RetryMaxBackoff bounds the full-jitter exponential delay between
	// attempts. 0 means DefaultRetryMaxBackoff.
	RetryMaxBackoff time.Duration

	// ReplayLimit is how many bytes of messages sent before the response
	// headers arrive a session keeps for replay on a retried open. If more
	// was sent, the open is not retried. 0 means DefaultReplayLimit; a
	// negative value keeps nothing (a retry is then possible only if
	// nothing was sent yet).
	ReplayLimit int

	// HealthCheckInterval is how long a connection may stay silent before
	// an HTTP/2 PING checks the peer. 0 means DefaultHealthCheckInterval; a
	// negative value disables health checks. Applies to the client's own
	// HTTP/2 engine.
	HealthCheckInterval time.Duration

	// HealthCheckTimeout is how long to wait for the PING acknowledgement
	// before the connection is closed and its sessions fail with
	// ErrDeadPeer. 0 means DefaultHealthCheckTimeout.
	HealthCheckTimeout time.Duration

	// rootCAs are the certificate authorities of a custom CA bundle
	// (AWS_CA_BUNDLE, ca_bundle) found in the aws.Config's HTTP client,
	// trusted by the engine unless TLSConfig has RootCAs of its own.
	rootCAs *x509.CertPool

	// cfgProxy is the proxy function of the aws.Config's HTTP client.
	cfgProxy func(*http.Request) (*url.URL, error)

	// engineHooks lets tests observe the engine (dials).
	engineHooks *transport.Hooks
}

// Copy returns a copy of o that shares no pointers the Client might
// modify.
func (o Options) Copy() Options {
	if o.BaseEndpoint != nil {
		s := *o.BaseEndpoint
		o.BaseEndpoint = &s
	}
	return o
}

// setDefaults fills zero fields with their defaults, maps FIPS
// pseudo-regions, and wraps Credentials in a cache. Negative values that
// mean "disabled" are kept; validate rejects the rest.
func (o *Options) setDefaults() {
	if r, ok := normalizeFIPSRegion(o.Region); ok {
		o.Region = r
		o.UseFIPSEndpoint = aws.FIPSEndpointStateEnabled
	}
	o.Credentials = cacheCredentials(o.Credentials)
	if o.Logger == nil {
		o.Logger = logging.Nop{}
	}
	defaultTo(&o.MaxPartSize, DefaultMaxPartSize)
	defaultTo(&o.MaxMessageSize, DefaultMaxMessageSize)
	if o.Padding == nil {
		o.Padding = BucketPadding{}
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	maxAttemptsSet := o.RetryMaxAttempts != 0
	defaultTo(&o.RetryMaxAttempts, DefaultRetryMaxAttempts)
	defaultTo(&o.RetryMaxBackoff, DefaultRetryMaxBackoff)
	defaultTo(&o.ReplayLimit, DefaultReplayLimit)
	defaultTo(&o.HealthCheckInterval, DefaultHealthCheckInterval)
	defaultTo(&o.HealthCheckTimeout, DefaultHealthCheckTimeout)
	defaultTo(&o.MaxStreamsPerConnection, DefaultMaxStreamsPerConnection)
	defaultTo(&o.IdleConnTimeout, DefaultIdleConnTimeout)
	defaultTo(&o.DialTimeout, DefaultDialTimeout)
	o.resolveRetryer(maxAttemptsSet)
}

// engineConfig returns the configuration of the client's HTTP/2 engine.
func (o *Options) engineConfig() transport.Config {
	var tlsConfig *tls.Config
	if o.TLSConfig != nil {
		tlsConfig = o.TLSConfig.Clone()
	}
	if o.rootCAs != nil && (tlsConfig == nil || tlsConfig.RootCAs == nil) {
		if tlsConfig == nil {
			tlsConfig = &tls.Config{}
		}
		tlsConfig.RootCAs = o.rootCAs
	}
	proxy := o.Proxy
	if proxy == nil {
		proxy = o.cfgProxy
	}
	if proxy == nil {
		proxy = http.ProxyFromEnvironment
	}
	c := transport.Config{
		TLSConfig:         tlsConfig,
		Proxy:             proxy,
		DialContext:       o.DialContext,
		DialTimeout:       o.DialTimeout,
		MaxStreamsPerConn: o.MaxStreamsPerConnection,
		IdleTimeout:       o.IdleConnTimeout,
		PingTimeout:       o.HealthCheckTimeout,
		Hooks:             o.engineHooks,
	}
	if o.HealthCheckInterval > 0 {
		c.PingInterval = o.HealthCheckInterval
	}
	return c
}

// cacheCredentials wraps p in an aws.CredentialsCache unless it is nil,
// already a cache, or anonymous.
func cacheCredentials(p aws.CredentialsProvider) aws.CredentialsProvider {
	switch p.(type) {
	case nil, *aws.CredentialsCache, aws.AnonymousCredentials, *aws.AnonymousCredentials:
		return p
	}
	return aws.NewCredentialsCache(p)
}

// validate reports option values that cannot work. It does not resolve the
// endpoint; see endpoint.
func (o *Options) validate() error {
	switch {
	case o.MaxPartSize < 0 || o.MaxPartSize > MaxPartSizeLimit:
		return fmt.Errorf("bidi: Options.MaxPartSize %d out of range [1, %d]", o.MaxPartSize, MaxPartSizeLimit)
	case o.MaxMessageSize < 0:
		return fmt.Errorf("bidi: Options.MaxMessageSize %d is negative", o.MaxMessageSize)
	case o.RetryMaxAttempts < 0:
		return fmt.Errorf("bidi: Options.RetryMaxAttempts %d is negative", o.RetryMaxAttempts)
	case o.RetryMaxBackoff < 0:
		return fmt.Errorf("bidi: Options.RetryMaxBackoff %v is negative", o.RetryMaxBackoff)
	case o.MaxStreamsPerConnection < 0:
		return fmt.Errorf("bidi: Options.MaxStreamsPerConnection %d is negative", o.MaxStreamsPerConnection)
	case o.DialTimeout < 0:
		return fmt.Errorf("bidi: Options.DialTimeout %v is negative", o.DialTimeout)
	case o.HealthCheckTimeout < 0:
		return fmt.Errorf("bidi: Options.HealthCheckTimeout %v is negative", o.HealthCheckTimeout)
	case o.Credentials == nil:
		return ErrNoCredentials
	case o.Region == "" && o.BaseEndpoint != nil:
		// Without a custom endpoint, endpoint resolution reports the
		// missing region in the rule set's words.
		return ErrNoRegion
	}
	return nil
}

// endpoint resolves the service endpoint for o (see resolveEndpoint).
func (o *Options) endpoint() (*url.URL, error) {
	return resolveEndpoint(o.Region,
		o.UseFIPSEndpoint == aws.FIPSEndpointStateEnabled,
		o.UseDualStackEndpoint == aws.DualStackEndpointStateEnabled,
		o.BaseEndpoint)
}

// defaultTo sets *v to d if *v is the zero value.
func defaultTo[T comparable](v *T, d T) {
	var zero T
	if *v == zero {
		*v = d
	}
}
