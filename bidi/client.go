package bidi

import (
	"context"
	"net/url"
	"sync/atomic"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/smithy-go/logging"

	"github.com/sagemaker-bidi/sagemaker-bidi/bidi/internal/transport"
)

// Client opens bidirectional streaming sessions with SageMaker endpoints.
// A Client is safe for concurrent use by multiple goroutines. Its sessions
// share its HTTP/2 engine: a pool of connections per endpoint, each
// carrying up to Options.MaxStreamsPerConnection sessions (and never more
// than the server allows). When every connection is full, new sessions
// wait for the one connection being dialed rather than dialing their own.
// Connections without sessions close after Options.IdleConnTimeout, or at
// once with [Client.CloseIdleConnections].
type Client struct {
	options   Options
	engine    *transport.Transport // nil in a Client not built by NewFromConfig
	signer    *requestSigner
	endpoint  *url.URL // resolved service endpoint; nil when err is set
	err       error    // configuration error, returned by Open
	userAgent []string // the User-Agent header's value, shared by every request head
	logOn     bool     // a log mode is set and the logger is not logging.Nop

	// obs records traces and metrics; nil when no provider is set.
	obs *observer

	// skew is the clock skew (in nanoseconds) measured from the service's
	// Date header after a signature refused for its time; added to
	// Options.Now for signing.
	skew atomic.Int64

	// padLock serialises the reads of Options.PaddingSource, which the
	// client's sessions share. Unlike a mutex, waiting for it is bounded by
	// the sender's context and session.
	padLock ctxLock

	// lastURL is the invocation URL of the endpoint opened last, which
	// the sessions opened to that endpoint share: nothing modifies a
	// session's URL.
	lastURL atomic.Pointer[endpointURL]
}

// endpointURL is an endpoint's name and invocation URL.
type endpointURL struct {
	name string
	u    *url.URL
}

// invocationURL returns the URL that opens a stream with the endpoint
// named name: the one of the endpoint opened last if it is the same.
func (c *Client) invocationURL(name string) *url.URL {
	if last := c.lastURL.Load(); last != nil && last.name == name {
		return last.u
	}
	u := invocationURL(c.endpoint, name)
	c.lastURL.Store(&endpointURL{name: name, u: u})
	return u
}

// NewFromConfig returns a Client configured from cfg (region, credentials,
// endpoint settings, retry attempts, logger), then adjusted by optFns in
// order. The callbacks of cfg.ServiceOptions run first, with the service
// ID "SageMaker Runtime HTTP2" (the service's sdkId). Configuration
// errors, such as a missing region or a custom endpoint combined with
// FIPS, are reported by [Client.Open], matching [ErrInvalidConfig].
func NewFromConfig(cfg aws.Config, optFns ...func(*Options)) *Client {
	o := resolveOptions(cfg, optFns...)
	c := &Client{options: o, signer: newRequestSigner(o.Region, signingName), obs: newObserver(o.TracerProvider, o.MeterProvider)}
	_, nop := o.Logger.(logging.Nop)
	c.logOn = !nop && o.ClientLogMode != 0
	ua := userAgent
	if o.AppID != "" {
		ua += " app/" + o.AppID
	}
	c.userAgent = []string{ua}
	if err := o.validate(); err != nil {
		c.err = err
	} else if u, err := o.endpoint(); err != nil {
		c.err = err
	} else {
		c.endpoint = u
	}
	c.engine = transport.New(o.engineConfig())
	return c
}

// CloseIdleConnections closes the client's connections that carry no
// session, at once. Sessions still open are not affected. (Idle
// connections also close by themselves after Options.IdleConnTimeout.)
func (c *Client) CloseIdleConnections() {
	if c.engine != nil {
		c.engine.CloseIdleConnections()
	}
}

// Options returns a copy of the client's resolved options, defaults
// filled in.
func (c *Client) Options() Options { return c.options.clone() }

// Open starts a bidirectional stream with the endpoint named by in and
// returns its Session.
//
// The input is validated before any network I/O; a violation is an
// [*InputValidationError] naming the field. Open then retrieves
// credentials, signs the request and returns as soon as the transport has
// sent the request headers (so connection, TLS and HTTP/2 negotiation
// failures are Open's errors): it does not wait for the service to
// answer, so messages can be sent right away (with Options.AwaitResponse
// or OpenInput.AwaitResponse it does wait, and returns the typed HTTP
// error itself). An HTTP error response (for example
// a 424 [*ModelError]) reaches the caller as soon as it arrives, through
// any pending or later Send, Recv or [Session.Response].
// A stream the service answered is returned even if it has already ended,
// with an error or not, by the time Open returns: Recv then returns the
// messages that came before the end, then its reason.
//
// ctx governs the whole session, not only the call: when it is cancelled
// the session ends as if Close had been called, and later calls return an
// [*OpenContextError] wrapping ctx's error (its cause, if it has one). Do
// not pass a context that is cancelled when Open's caller returns. Use a context without deadline
// (and call Close) for a long-lived session. Every wait in Open is bounded
// by ctx, including credential retrieval from a provider that ignores it.
//
// The session must be closed with [Session.Close] (or by cancelling ctx)
// to release its resources.
func (c *Client) Open(ctx context.Context, in *OpenInput) (*Session, error) {
	if c == nil || (c.engine == nil && c.err == nil) {
		return nil, ErrZeroClient
	}
	if in == nil {
		return nil, &InputValidationError{Field: "OpenInput", Message: "input is nil"}
	}
	if err := in.validate(); err != nil {
		return nil, err
	}
	if c.err != nil {
		return nil, c.err
	}
	if err := ctx.Err(); err != nil {
		return nil, context.Cause(ctx)
	}
	s := newSession(ctx, c, in)
	s.obs = c.obs.startSession(ctx, in.EndpointName)
	a, err := s.newAttempt(1)
	if err != nil {
		s.end(err, endSession, endDefinite)
		s.obs.end(err)
		return nil, err
	}
	if s.c.logOn {
		s.logf(logging.Debug, "bidi: opening session with endpoint %q", in.EndpointName)
	}
	go s.run(a)
	if testHookOpenWait != nil {
		testHookOpenWait(s)
	}
	await := in.AwaitResponse || c.options.AwaitResponse
	for {
		var dispatched <-chan struct{} // nil, never ready, when awaiting the answer
		if !await {
			if dispatched = s.pipe.dispatchWait(); dispatched == nil {
				return s, nil
			}
		}
		select {
		case <-dispatched: // the writer may have read the body: look again
		case <-s.respReady:
			if s.resp == nil {
				err := s.sessionErr()
				s.Close()
				return nil, err
			}
			return s, nil
		case <-s.ctx.Done():
			// The session may have ended after the model answered (a
			// stream cut short, a mid-stream error): it is then the
			// caller's, with the messages received before the end and
			// its reason. Only a request that failed before the
			// response headers fails Open.
			select {
			case <-s.respReady:
				if s.resp != nil {
					return s, nil
				}
			default:
			}
			err := s.sessionErr()
			s.Close()
			return nil, err
		}
	}
}

// testHookOpenWait, if set (by tests), is called by Open after it started
// the session's goroutine and before it waits for the request to be on its
// way.
var testHookOpenWait func(*Session)

func (c *Client) logf(cl logging.Classification, format string, v ...any) {
	if !c.logOn {
		return
	}
	c.options.Logger.Logf(cl, format, v...)
}
