package relay

import (
	"context"
	"net/http"
	"time"

	"github.com/aws/smithy-go/metrics"
	"github.com/aws/smithy-go/tracing"
	"github.com/coder/websocket"

	"github.com/sagemaker-bidi/sagemaker-bidi/bidi"
)

// Defaults of [Options]. Each applies where its field is zero.
const (
	// DefaultMaxMessageSize bounds one client message (the WebSocket read
	// limit): 64 KiB, two seconds of 16 kHz 16-bit audio or a long JSON
	// request. A larger message closes the connection with 1009.
	DefaultMaxMessageSize = 64 << 10

	// DefaultQueueBytes bounds a call's queue toward its client: 8 KiB, a
	// quarter of a second of 16 kHz 16-bit mono audio (12 frames of 20 ms
	// with the per-message charge). Audio held longer behind a client
	// that does not keep up is delay a listener hears, and the queue
	// comes after what the kernel's socket send buffer holds. At this
	// bound a thousand clients that stop reading hold 8 MiB of queued
	// replies. A queue takes a message while it holds less than its
	// bound, so it holds at most the bound plus one message.
	DefaultQueueBytes = 8 << 10

	// DefaultToModelQueueBytes bounds a call's queue toward the model:
	// 32 KiB, a second of that audio. It fills only while the model's
	// session does not take input: while a rotating session replaces a
	// stream that ended early (Send waits for the successor's open and
	// replay) or a burst from the client meets a planned rotation; a
	// second rides out a reconnect where a quarter of one would close
	// the call (1008, or drop audio, as Overflow says). It costs nothing
	// while empty.
	DefaultToModelQueueBytes = 32 << 10

	// DefaultMaxClients caps the calls one Handler relays at once.
	DefaultMaxClients = 4096

	// DefaultPingInterval is how often an idle-or-not client is pinged.
	DefaultPingInterval = 30 * time.Second

	// DefaultPingTimeout is how long a pong may take.
	DefaultPingTimeout = 15 * time.Second

	// DefaultIdleTimeout ends a call after this long without a data
	// message in either direction.
	DefaultIdleTimeout = 5 * time.Minute

	// DefaultOpenTimeout bounds opening the model session.
	DefaultOpenTimeout = 30 * time.Second

	// DefaultFinishQuiet is how long the model must have been quiet before
	// its input ends, when a call ends gracefully (see Finisher).
	DefaultFinishQuiet = 2 * time.Second

	// DefaultFinishTimeout bounds a graceful end: the model's last replies
	// and the WebSocket close handshake.
	DefaultFinishTimeout = 30 * time.Second

	// DefaultMaxPingsPerSecond is how many pings a client may send in one
	// second before its connection is closed with 1008.
	DefaultMaxPingsPerSecond = 50
)

// Overflow is what a call does when a message does not fit its queue:
// the client sends faster than the model takes, or (more often) the
// client reads slower than the model answers.
type Overflow int

const (
	// OverflowClose closes the connection with 1008 (policy violation),
	// reason "client too slow" or "model too slow". It is the default:
	// nothing is lost silently.
	OverflowClose Overflow = iota
	// OverflowTryAgainLater closes the connection with 1013 (try again
	// later), for clients that reconnect on it.
	OverflowTryAgainLater
	// OverflowDropOldest drops queued messages to make room, the oldest
	// binary (audio-sized) message first and the oldest text message
	// only when no binary one is left, and counts each drop
	// (MetricDrops). Live audio prefers a gap to a growing delay.
	OverflowDropOldest
)

// String returns "close", "try_again_later" or "drop_oldest".
func (o Overflow) String() string {
	switch o {
	case OverflowClose:
		return "close"
	case OverflowTryAgainLater:
		return "try_again_later"
	case OverflowDropOldest:
		return "drop_oldest"
	}
	return "overflow(?)"
}

// Hook inspects or transforms one message on its way through a call.
// It returns the message to forward (the same one, or another), or an
// error: [ErrSkip] drops the message, a [websocket.CloseError] closes the
// connection with its code and reason, and any other error closes it
// with 1011 (internal error, reason "internal error"; the error's text is
// never sent). A hook runs on the goroutine that reads its direction's
// side, one message at a time and in order; when the reading moves to
// another goroutine (a delivery blocked), it does so after the hook's
// previous call returned, so a hook needs no locking for state of its
// own call. It must not block for long: the direction waits for it.
//
// A client's message (ToModel) is read into a buffer the relay reuses once
// the message is sent, queued (queues copy) or dropped, and so is a
// model's (ToClient) when it came from [MessageBuffer]: a hook that keeps
// m.Data after it returns must copy it. The Data of the message a hook
// returns belongs to the relay from then on.
type Hook func(ctx context.Context, m bidi.Message) (bidi.Message, error)

// Options configure a [Handler]. The zero value of every field means its
// documented default; a nil *Options means all defaults.
type Options struct {
	// Open opens the model side of an authorised call. Nil means
	// [Rotating] on the Handler's client with a zero bidi.Rotation: a
	// call can outlast SageMaker's 30-minute stream cap without the client
	// noticing. Use [Sessions] for one plain session per call.
	Open OpenFunc

	// OriginPatterns lists the origins, besides the request's own host,
	// whose pages may connect, as host patterns for path.Match ("*.example.com")
	// or, with "://", scheme-and-host patterns ("https://app.example.com").
	// A request with an Origin header that matches neither is refused
	// with 403 before anything else. Requests without an Origin header
	// (non-browser clients) are not affected.
	OriginPatterns []string

	// InsecureSkipOriginCheck accepts every Origin, which lets any web
	// page connect with the browser's cookies: use it only when
	// Authorize does not rely on ambient credentials.
	InsecureSkipOriginCheck bool

	// RefuseWithHTTPStatus answers a refused open (the model's endpoint
	// answered 424, 400, 503, throttled, or the open failed) with an HTTP
	// status before the upgrade (see [HTTPStatusFor]). False, the default,
	// accepts the upgrade and closes at once with the code and reason of
	// [CloseFor]: a browser's WebSocket API shows neither the status nor
	// the body of a refused upgrade, but does show a close code and
	// reason.
	RefuseWithHTTPStatus bool

	// MaxMessageSize is the largest message a client may send, in bytes.
	// 0 means DefaultMaxMessageSize.
	MaxMessageSize int64

	// ToModelQueueBytes and ToClientQueueBytes bound a call's queues. 0
	// means DefaultToModelQueueBytes and DefaultQueueBytes. A queue counts each message as its length
	// plus a fixed overhead (64 bytes), so that empty messages are bounded
	// too, and is full once it holds its bound: it then holds at most the
	// bound plus one message. A queue's memory is one buffer, grown in
	// powers of two to what it held at its fullest, and none once it is
	// empty.
	ToModelQueueBytes, ToClientQueueBytes int

	// Overflow is the policy when a message does not fit its queue.
	Overflow Overflow

	// MaxClients caps the calls the Handler relays at once; a request
	// beyond it is answered 503 with Retry-After before anything is
	// opened. 0 means DefaultMaxClients.
	MaxClients int

	// PingInterval is how often the client is pinged, and PingTimeout how
	// long its pong may take; a missing pong ends the call (close reason
	// "ping_timeout" in MetricCloses). 0 means the defaults; a negative
	// PingInterval disables pings.
	PingInterval, PingTimeout time.Duration

	// MaxPingsPerSecond is how many pings a client may send within a
	// second before the connection is closed with 1008. 0 means
	// DefaultMaxPingsPerSecond; negative means no limit.
	MaxPingsPerSecond int

	// IdleTimeout ends a call, gracefully, after this long without a data
	// message either way. 0 means DefaultIdleTimeout; negative means none.
	IdleTimeout time.Duration

	// MaxLifetime ends a call, gracefully and with 1001, once it is this
	// old. 0 means no limit.
	MaxLifetime time.Duration

	// OpenTimeout bounds opening the model session (Open, the service's
	// answer included). 0 means DefaultOpenTimeout.
	OpenTimeout time.Duration

	// FinishQuiet is the quiet period given to [Finisher.Finish] when a
	// call ends gracefully; FinishTimeout bounds the whole graceful end.
	// 0 means the defaults.
	FinishQuiet, FinishTimeout time.Duration

	// EndOfInput, if set, recognises the client's "no more input"
	// message (for example a text message {"type":"end"}). That message is
	// not forwarded: the model's input ends gracefully (see [Finisher]),
	// every remaining reply is delivered, and the connection closes with
	// the model's end (1000 for a clean one). A WebSocket client cannot
	// do this with its own close frame: a close is answered at once and
	// a browser drops every message after it. m.Data is valid only
	// until it returns (see [Hook]).
	EndOfInput func(m bidi.Message) bool

	// ToModel and ToClient, if set, see every message of their direction
	// (see [Hook]).
	ToModel, ToClient Hook

	// TracerProvider and MeterProvider receive a span per call and the
	// relay's metrics (see SpanName and the Metric constants). Nil means
	// the providers of the Handler's client, so that the relay and the
	// client report to the same place; without a client, nothing is
	// recorded.
	TracerProvider tracing.TracerProvider
	MeterProvider  metrics.MeterProvider

	// ErrorLog receives one line per call that ends abnormally (the close
	// code and kind, never a payload or credential). Nil discards them.
	// For a call that was relayed, r is a copy of the request with its
	// context, Method, URL, Host, RemoteAddr and RequestURI, and an empty
	// Header: a running call keeps no more of its request.
	ErrorLog func(r *http.Request, code websocket.StatusCode, kind string)
}

// resolved returns a copy of o with defaults filled in.
func (o *Options) resolved() Options {
	var r Options
	if o != nil {
		r = *o
		r.OriginPatterns = append([]string(nil), o.OriginPatterns...)
	}
	def := func(d *time.Duration, v time.Duration) {
		if *d == 0 {
			*d = v
		}
	}
	if r.MaxMessageSize <= 0 {
		r.MaxMessageSize = DefaultMaxMessageSize
	}
	if r.ToModelQueueBytes <= 0 {
		r.ToModelQueueBytes = DefaultToModelQueueBytes
	}
	if r.ToClientQueueBytes <= 0 {
		r.ToClientQueueBytes = DefaultQueueBytes
	}
	if r.MaxClients <= 0 {
		r.MaxClients = DefaultMaxClients
	}
	def(&r.PingInterval, DefaultPingInterval)
	def(&r.PingTimeout, DefaultPingTimeout)
	if r.MaxPingsPerSecond == 0 {
		r.MaxPingsPerSecond = DefaultMaxPingsPerSecond
	}
	def(&r.IdleTimeout, DefaultIdleTimeout)
	def(&r.OpenTimeout, DefaultOpenTimeout)
	def(&r.FinishQuiet, DefaultFinishQuiet)
	def(&r.FinishTimeout, DefaultFinishTimeout)
	return r
}
