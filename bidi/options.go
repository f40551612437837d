package bidi

import (
	"cmp"
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

// Defaults and limits of the Options fields, documented on each field.
const (
	defaultMaxPartSize             = 64 << 10
	maxPartSizeLimit               = 16 << 20 // below the event-stream payload limit of 24 MiB with envelope, headers and padding
	defaultMaxMessageSize          = 16 << 20
	defaultRetryMaxAttempts        = 3
	defaultRetryMaxBackoff         = 5 * time.Second
	defaultReplayLimit             = 1 << 20
	defaultHealthCheckInterval     = 15 * time.Second
	defaultHealthCheckTimeout      = 10 * time.Second
	defaultMaxStreamsPerConnection = transport.DefaultMaxStreamsPerConn
	defaultIdleConnTimeout         = transport.DefaultIdleTimeout
	defaultDialTimeout             = transport.DefaultDialTimeout
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
	// HTTP/2 SETTINGS). 0 means 30 seconds.
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
	// means 250, chosen by measurement: more sessions per connection cost
	// no less CPU and queue behind the server's per-connection work
	// (SageMaker's own limit is not documented; biditest's is 250). 1
	// gives every session its own connection.
	MaxStreamsPerConnection int

	// IdleConnTimeout closes a connection that has carried no session for
	// that long. 0 means 90 seconds; negative keeps idle
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
	// to the stream's end, named
	// "SageMaker Runtime HTTP2.InvokeEndpointWithBidirectionalStream", of
	// kind client, from the tracer of scope
	// "github.com/sagemaker-bidi/sagemaker-bidi/bidi". Its attributes:
	// "rpc.service" ("SageMaker Runtime HTTP2"), "rpc.method"
	// ("InvokeEndpointWithBidirectionalStream"),
	// "aws.sagemaker.endpoint_name", "http.status_code" (the response
	// status), "end_reason" (below), and for a session that failed
	// "error.type" (the error code of an API error, else the Go type) and,
	// for a ModelStreamError, "close_code". Its events: "response" (the
	// response head arrived; http.status_code), "first_event" (the first
	// PayloadPart arrived) and "retry" (the open is tried again; "attempt",
	// the attempt that failed, 1 for the first, and error.type).
	//
	// The end_reason of a session, on its span and on the
	// sagemaker_bidi.stream.ends counter, is one of "completed" (the
	// service ended the stream cleanly, or with close code 1000), "closed"
	// (Close was called before the end), "context" (the context given to
	// Open ended), "http_error" (the service answered with an HTTP error),
	// "stream_error" (a mid-stream exception: ModelStreamError,
	// InternalStreamFailure, ...), "connection" (the connection failed:
	// dead peer, reset, refused), "send_aborted" (a Send was interrupted
	// halfway) or "client_failed" (credentials, signing or encoding
	// failed). No attribute ever holds a payload, a credential or a
	// signature. Nil, the default, records nothing and costs nothing.
	TracerProvider tracing.TracerProvider

	// MeterProvider, if set, receives the client's metrics, from the meter
	// of scope "github.com/sagemaker-bidi/sagemaker-bidi/bidi", each data
	// point with the attributes rpc.service and rpc.method (see
	// TracerProvider): the operation-level ones of aws-sdk-go-v2,
	// client.call.duration (s, Open to the response head or the open's
	// failure, retries included), client.call.attempts and
	// client.call.errors (with "exception.type"), and the stream-level
	// ones sagemaker_bidi.stream.time_to_first_event (s),
	// .events_sent, .events_received (PayloadParts), .bytes_sent,
	// .bytes_received (payload bytes), .duration (s, Open to end),
	// .active (open sessions), .retries and .ends (by end_reason). Nil,
	// the default, records nothing.
	MeterProvider metrics.MeterProvider

	// AppID is an application identifier added to the User-Agent header.
	AppID string

	// MaxPartSize is the largest payload sent in one PayloadPart; larger
	// messages are fragmented. 0 means 64 KiB: small enough that one
	// session's large message does not hold the shared HTTP/2 connection
	// for long (other streams' frames interleave between parts, and the
	// model can start on the first part) and that a part fits the common
	// 64 KiB HTTP/2 stream window, yet large enough that the ~250 bytes of
	// envelope, headers and signature per part cost under 0.4%. At most
	// 16 MiB, below the event-stream payload limit of 24 MiB once
	// envelope, headers and padding are added.
	MaxPartSize int

	// MaxMessageSize bounds a reassembled received message. A larger one
	// is discarded and Recv returns a *MessageTooLargeError. 0 means
	// 16 MiB.
	MaxMessageSize int

	// MessageBuffer, if set, allocates the memory of received messages:
	// the Data of a message that Recv or Messages returns (and of a part
	// over 4 KiB that RecvPart returns) is a buffer that MessageBuffer(n)
	// returned, cut to the message's length, and the session keeps no
	// reference to it. A program that receives large messages can take
	// buffers from a pool of its own here and put each back once done
	// with its message: a fresh 16 MiB buffer costs thousands of page
	// faults on its first touch, more than the copy into it. It is called
	// on the receiving goroutine, with n up to MaxMessageSize; a result
	// with a capacity under n is ignored. nil means make([]byte, n).
	MessageBuffer func(n int) []byte

	// Padding is the padding policy: it returns how many padding bytes a
	// sent part of payloadLen bytes carries in its P header, to hide the
	// exact payload size from an observer of the encrypted traffic (0
	// omits the P header; values above 32767, the most P can hold, count
	// as 32767). Nil means [BucketPadding]. Two others:
	//
	//	func(int) int { return 0 } // no padding: exact sizes are visible
	//	func(n int) int { return (n/size+1)*size - n } // payload+P a multiple of size (at most 32767)
	//
	// A policy must be deterministic in payloadLen: random-length padding
	// alone does not hide sizes, since repeated observations average it
	// out; pad so that payload+padding falls on a small set of sizes
	// instead. Small buckets leak more; a bucket at least as large as the
	// biggest payload hides sizes completely at the cost of bandwidth. A
	// policy must be safe for concurrent use.
	Padding func(payloadLen int) int

	// PaddingSource supplies the random bytes of the padding (mapped to
	// printable ASCII), for reproducible tests. Nil means cryptographically
	// strong generators (ChaCha8, each seeded from crypto/rand) that the
	// process's sessions share, one per processor at a time, so that a
	// Send never waits for another and an idle session holds none. The
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
	// 3; 1 disables retries. Only opening is
	// retried, never a stream the model has already answered.
	RetryMaxAttempts int

	// RetryMaxBackoff bounds the full-jitter exponential delay between
	// attempts. 0 means 5 seconds.
	RetryMaxBackoff time.Duration

	// ReplayLimit is how many bytes of messages sent before the response
	// headers arrive a session keeps for replay on a retried open. If more
	// was sent, the open is not retried. 0 means 1 MiB; a
	// negative value keeps nothing (a retry is then possible only if
	// nothing was sent yet).
	ReplayLimit int

	// HealthCheckInterval is how long a connection may stay silent before
	// an HTTP/2 PING checks the peer. 0 means 15 seconds; a
	// negative value disables health checks. Applies to the client's own
	// HTTP/2 engine.
	HealthCheckInterval time.Duration

	// HealthCheckTimeout is how long to wait for the PING acknowledgement
	// before the connection is closed and its sessions fail with
	// ErrDeadPeer. 0 means 10 seconds.
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

// clone returns a copy of o that shares no pointers the Client might
// modify.
func (o Options) clone() Options {
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
	defaultTo(&o.MaxPartSize, defaultMaxPartSize)
	defaultTo(&o.MaxMessageSize, defaultMaxMessageSize)
	if o.Padding == nil {
		o.Padding = BucketPadding
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	maxAttemptsSet := o.RetryMaxAttempts != 0
	defaultTo(&o.RetryMaxAttempts, defaultRetryMaxAttempts)
	defaultTo(&o.RetryMaxBackoff, defaultRetryMaxBackoff)
	defaultTo(&o.ReplayLimit, defaultReplayLimit)
	defaultTo(&o.HealthCheckInterval, defaultHealthCheckInterval)
	defaultTo(&o.HealthCheckTimeout, defaultHealthCheckTimeout)
	defaultTo(&o.MaxStreamsPerConnection, defaultMaxStreamsPerConnection)
	defaultTo(&o.IdleConnTimeout, defaultIdleConnTimeout)
	defaultTo(&o.DialTimeout, defaultDialTimeout)
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
	if o.MaxPartSize < 0 || o.MaxPartSize > maxPartSizeLimit {
		return fmt.Errorf("bidi: Options.MaxPartSize %d out of range [1, %d]", o.MaxPartSize, maxPartSizeLimit)
	}
	if err := cmp.Or(
		negative("MaxMessageSize", o.MaxMessageSize),
		negative("RetryMaxAttempts", o.RetryMaxAttempts),
		negative("RetryMaxBackoff", o.RetryMaxBackoff),
		negative("MaxStreamsPerConnection", o.MaxStreamsPerConnection),
		negative("DialTimeout", o.DialTimeout),
		negative("HealthCheckTimeout", o.HealthCheckTimeout),
	); err != nil {
		return err
	}
	switch {
	case o.Credentials == nil:
		return errNoCredentials
	case o.Region == "" && o.BaseEndpoint != nil:
		// Without a custom endpoint, endpoint resolution reports the
		// missing region in the rule set's words.
		return errNoRegion
	}
	return nil
}

// negative returns the error of the Options field name, which must not be
// negative, if v is; else nil.
func negative[T ~int | ~int64](name string, v T) error {
	if v < 0 {
		return fmt.Errorf("bidi: Options.%s %v is negative", name, v)
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
