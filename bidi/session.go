package bidi

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/url"
	"sync/atomic"
	"time"

	"github.com/aws/smithy-go/logging"

	"github.com/sagemaker-bidi/sagemaker-bidi/bidi/internal/transport"
	"github.com/sagemaker-bidi/sagemaker-bidi/internal/backoff"
)

// ErrStreamEnded is returned (possibly wrapped) by Send once the service
// has ended the stream: the model will receive nothing more. Recv still
// returns the messages that came before the end, then io.EOF or the
// reason the stream ended, which Send reports too once it is known.
var ErrStreamEnded = errors.New("bidi: stream ended by the service")

// A Session is one bidirectional stream with a SageMaker endpoint, opened
// by [Client.Open]. Messages sent with Send reach the model in order;
// messages from the model are read with Recv.
//
// Concurrency: Send, SendPart and CloseSend may be called from any number
// of goroutines. One call has the send turn at a time, so a message's
// parts are never interleaved with another message's on the wire; callers
// that need an order between their messages must impose it themselves.
// Recv, RecvPart, Messages and Reader are meant for one receiving
// goroutine (concurrent calls are serialized, but which caller gets which
// message is then arbitrary). Sending and receiving may proceed
// concurrently, and Response, Context and Close may be called at any time
// from any goroutine.
//
// Flow and memory: Send copies each part into a send queue of at most 64
// KiB (or one larger part) from which the HTTP/2 transport takes parts as
// flow control allows, so a service that does not read makes Send block.
// Recv decodes the response on the caller's goroutine, straight from what
// the connection has buffered for the stream, and nothing else decodes it:
// what the service can send ahead of Recv is bounded by the stream's
// HTTP/2 receive window (1 MiB). A reassembled message is bounded by
// Options.MaxMessageSize, and so is every part kept in memory.
//
// The end of the stream without Recv: once the service has ended the
// stream (or it failed), Send returns at once, without waiting for Recv,
// an error saying so: [ErrStreamEnded] after an end of stream, the
// transport's error after a reset or a dead connection. Why the model
// ended it (a [*ModelStreamError], say) is in-band, after the messages not
// yet received: Recv returns those messages and then the reason, and from
// then on Send and CloseSend return the reason too. As with grpc, read
// with Recv until it fails to learn why a stream ended.
//
// Ending the request: CloseSend refuses, with an error, to
// end the request while a message begun with SendPart is incomplete, and
// sends nothing. Check its error: the request stays open, so a caller
// that ignores it and then reads until io.EOF would wait in Recv until its
// context ends.
//
// Lifetime: a session ends when the service ends the stream, when it
// fails, when the context given to Open is cancelled, or when Close is
// called. A session runs one goroutine of its own while it opens (it
// waits for the response and retries the open when allowed) and none once
// the model answered: its request body is written by its connection's
// shared writer and its response read by the connection's read loop, so
// an idle session costs no goroutine. Close or the cancellation unblocks
// every pending Send, Recv and Response, resets the HTTP/2 stream and
// makes the opening goroutine, if any, exit. After a failure, Send and
// Recv return the cause: a typed error such as [*ResponseError] or
// [*ModelStreamError], or an error wrapping io.ErrUnexpectedEOF or
// matching [ErrDeadPeer]; Recv returns io.EOF only when the service ended
// the stream cleanly.
type Session struct {
	// One lock, pipe.mu: the send queue's and the state's (state.mu).
	// Send calls and Recv calls are serialised by two turns (sendTurn,
	// recvTurn), which have no lock of their own: an atomic flag, and
	// waiters that wait on the pipe's broadcast under pipe.mu and give
	// up with their context. Order: a turn (held, not a lock) before
	// pipe.mu; pipe.mu before the engine's connection lock (a body's
	// ready callback); the receive turn before the engine stream's lock
	// (Read, Peek), which is never taken under pipe.mu. No callback of
	// the engine runs under an engine lock (see the transport's doc.go).
	// docs/design.md draws the whole picture.

	// Set by newSession, read-only after.
	c     *Client
	opts  *Options
	input OpenInput
	url   *url.URL  // shared with the client and its other sessions: read-only
	born  time.Time // when newSession made the session, with its monotonic clock reading (see lastRecv)

	// ctx is the session's lifetime, derived from Open's context; every
	// HTTP attempt's stream runs under it. It is cancelled, with the
	// terminal error as cause, when the session ends (end with endSession), and
	// with ErrStreamEnded once a clean end was delivered to the queue.
	ctx    context.Context
	cancel context.CancelCauseFunc

	// state is the one terminal-error slot (see end).
	state sessionState

	// Send side. The send turn (held by Send, SendPart, CloseSend) guards
	// the fields below it, except pipe, which has its own lock.
	sendTurn   turn
	sendClosed bool
	partOpen   bool       // a message begun with SendPart is not complete
	partType   DataType   // that message's type (its first part's)
	partText   utf8Stream // for a UTF8 one, the UTF-8 check across its parts
	maxPart    int
	partCut    int       // payload of PARTIAL parts (partialCut)
	stallMark  stallMark // what this Send saw of flow control when it first waited (flowStall)
	pad        []byte
	padh       *[]byte // pad's padPool handle, if it came from the pool
	padSrc     padSource
	pipe       sendPipe

	// Response head: set once by the run goroutine before respReady is
	// closed; resp stays nil when the session ended before it (the
	// terminal error then says why).
	respReady chan struct{}
	resp      *Response

	// Receive side: Recv decodes the answered attempt's response stream
	// itself, with that attempt's decoder (recv.go). The receive turn
	// (held by Recv, RecvPart) guards the fields below it, except
	// lastRecv and recvWake.
	// recvWake (cap 1) wakes the Recv waiting for bytes: the answered
	// stream's notify function signals it, and so does the session's end;
	// made by newSession, safe for concurrent use.
	recvTurn   turn
	recvWake   chan struct{}
	asm        reassembler  // in the session itself: Recv checks it for every message
	partBuf    []byte       // RecvPart's small parts, valid until the next call
	lastRecv   atomic.Int64 // when the last part was decoded: nanoseconds since born, on the monotonic clock; 0 before the first
	recvErr    error        // sticky terminal receive error
	midMessage bool         // the last part delivered was PARTIAL
	maxMessage int

	// cur is the current attempt (nil before the first), which Close
	// aborts; set by newAttempt on the run goroutine (and Open's).
	cur atomic.Pointer[attempt]

	// answeredOpen is the answered attempt that the run goroutine handed
	// to the session's end (watchEnd) and that is not ended yet: whoever
	// swaps it out (the session's end, or watchEnd when the session ended
	// first) aborts it and ends the telemetry, once.
	answeredOpen atomic.Pointer[attempt]

	// obs traces and measures the session (nil when unobserved); its
	// methods say which goroutine calls them.
	obs *sessionObs

	// Owned by the run goroutine.
	refusals     int               // attempts the server refused
	skewRetried  bool              // an attempt was retried after a clock-skew correction
	releaseRetry func(error) error // the retry token of the last retry, if any
}

func newSession(parent context.Context, c *Client, in *OpenInput) *Session {
	s := &Session{
		c:          c,
		opts:       &c.options,
		input:      *in,
		url:        c.invocationURL(in.EndpointName),
		maxPart:    c.options.MaxPartSize,
		respReady:  make(chan struct{}),
		asm:        *newReassembler(c.options.MaxMessageSize),
		maxMessage: c.options.MaxMessageSize,
		born:       time.Now(),
	}
	if s.maxPart <= 0 {
		s.maxPart = defaultMaxPartSize
	}
	s.partCut = partialCut(s.maxPart, c.options.Padding)
	if s.maxMessage <= 0 {
		s.maxMessage = defaultMaxMessageSize
	}
	s.asm.alloc = c.options.MessageBuffer
	s.state.init(&s.pipe.mu)
	s.ctx, s.cancel = context.WithCancelCause(parent)
	s.pipe.init(c.options.ReplayLimit)
	s.recvWake = make(chan struct{}, 1)
	// However the context ends (the one given to Open among the ways),
	// the session is ended, a waiting Recv woken, and the answered
	// attempt, if the run goroutine handed it over, released.
	context.AfterFunc(s.ctx, func() {
		s.end(s.sessionErr(), endSession, endDefinite)
		signal(s.recvWake)
		s.releaseAnswered()
	})
	return s
}

// Response waits for the response headers of the stream and returns them,
// or returns the error that ended the session before they arrived: the
// typed HTTP error ([*ResponseError], which unwraps to [*ModelError],
// [*ServiceUnavailableError], ...), a transport error, [ErrNotHTTP2],
// [ErrSessionClosed] or ctx's error. With retries (see
// Options.RetryMaxAttempts) it reports the attempt that was not retried.
func (s *Session) Response(ctx context.Context) (*Response, error) {
	select {
	case <-s.respReady:
		return s.answer()
	default:
	}
	select {
	case <-s.respReady:
		return s.answer()
	case <-s.ctx.Done():
		select {
		case <-s.respReady:
			return s.answer()
		default:
		}
		return nil, s.sessionErr()
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// answer returns the response head, or why there is none; respReady is
// closed.
func (s *Session) answer() (*Response, error) {
	if s.resp != nil {
		return s.resp, nil
	}
	return nil, s.sessionErr()
}

// Close ends the session at once: it aborts the HTTP/2 stream (no end
// frame is sent; use CloseSend first for a graceful end), discards
// undelivered messages, unblocks every pending call, which then returns
// [ErrSessionClosed], and makes the session's goroutines exit. It does not
// wait for them. Close is safe to call more than once and concurrently;
// it always returns nil.
func (s *Session) Close() error {
	if s.state.userClosed.CompareAndSwap(false, true) {
		if s.c.logOn {
			s.logf(logging.Debug, "bidi: closing session with endpoint %q", s.input.EndpointName)
		}
	}
	s.end(ErrSessionClosed, endSession, endDefinite)
	if a := s.cur.Load(); a != nil {
		a.abort() // now, not when the context's watchers run
	}
	return nil
}

// Context returns the session's context. It is derived from the context
// given to Open and is cancelled when the session ends, whatever the
// reason; context.Cause then tells why: [ErrSessionClosed] after Close,
// [ErrStreamEnded] after a clean end, or the error that ended it. The end
// of the response stream ends the session once Recv has returned it (the
// session does not decode ahead of Recv: see [Session]).
func (s *Session) Context() context.Context { return s.ctx }

// sessionErr returns the terminal error of a cancelled session, or of
// one that is ending: end records its cause under the state's lock, and
// cancels the context after it.
func (s *Session) sessionErr() error {
	if s.state.userClosed.Load() {
		return ErrSessionClosed
	}
	err := context.Cause(s.ctx)
	if err == nil {
		err = s.state.endCause()
	}
	if err != nil {
		// When nothing but the context given to Open ended the session
		// (often a caller's defer cancel()), say so, whether or not the
		// session's goroutine has recorded it yet.
		var oce *OpenContextError
		switch t := s.state.terminal(); {
		case t == nil:
			return &OpenContextError{Err: err}
		case errors.As(t, &oce):
			return t
		}
		return err
	}
	return ErrSessionClosed
}

// errCannotReplay is the error of an attempt that cannot be made because
// what earlier attempts sent is no longer fully recorded.
var errCannotReplay = errors.New("bidi: cannot resend the request: more than ReplayLimit bytes were sent")

// run sends the request, retries the open on transient errors, publishes
// the response headers and the stream Recv reads, and leaves the answered
// attempt to watchEnd. It is the session's own goroutine while it opens;
// it exits once the model answered or the session ended.
func (s *Session) run(a *attempt) {
	handed := false // watchEnd took a: the session's end ends it
	defer func() {
		if handed {
			return
		}
		if a != nil { // nil when nextAttempt failed the session
			a.abort()
		}
		if s.obs != nil {
			s.obs.end(s.endCause())
		}
	}()
	for {
		s.obs.attempt()
		resp, err := a.roundTrip(s)
		if err != nil {
			if !s.retryRefused(err) {
				s.fail(s.refusalError(s.transportError(err)))
				return
			}
			s.pipe.detach()
			if a = s.nextAttempt(a, retryBackoff(s.refusals, s.opts.RetryMaxBackoff)); a == nil {
				return
			}
			continue
		}
		if resp.StatusCode/100 != 2 {
			body, _ := a.st.ReadAll(maxErrorBody)
			a.abort()
			err := responseError(resp.StatusCode, resp.Header, io.NopCloser(bytes.NewReader(body)))
			s.pipe.detach() // this attempt's body takes no more parts
			delay, ok := s.retry(a, err)
			if !ok {
				s.fail(err)
				return
			}
			s.obs.retry(a.n, err)
			if a = s.nextAttempt(a, delay); a == nil {
				return
			}
			continue
		}
		if !isEventStream(resp.Header) {
			// A 200 that is not an event stream (a proxy's page, a
			// misrouted request) is not the model's answer, even when
			// its body is empty.
			a.abort()
			s.fail(fmt.Errorf("%w: HTTP %d with Content-Type %q, want %q", ErrMalformedResponse, resp.StatusCode, cleanText(resp.Header.Get("Content-Type")), contentTypeEventStream))
			return
		}
		if s.releaseRetry != nil {
			s.releaseRetry(nil) // a successful retry refills the budget
		}
		// The model has answered: never retry from here on.
		s.pipe.stopReplay()
		if h := testHookAnswered.Load(); h != nil {
			(*h)(s)
		}
		a.startReceiving(s.maxMessage, s.recvWake)
		s.resp = resp
		s.obs.response(resp.StatusCode)
		s.answered()
		close(s.respReady)
		if s.c.logOn {
			s.logf(logging.Debug, "bidi: session with endpoint %q answered: HTTP %d after %d attempt(s)", s.input.EndpointName, resp.StatusCode, a.n)
		}
		s.watchEnd(a)
		handed = true
		return
	}
}

// testHookAnswered, if set (by tests), is called by the session's
// goroutine when the model has answered, before Recv can read the stream.
var testHookAnswered atomic.Pointer[func(*Session)]

// nextAttempt ends attempt a, waits delay and makes the next attempt; it
// returns nil after failing the session if the wait or the new attempt
// failed.
func (s *Session) nextAttempt(a *attempt, delay time.Duration) *attempt {
	a.abort()
	if !backoff.Sleep(s.ctx, delay) {
		s.fail(s.sessionErr())
		return nil
	}
	next, err := s.newAttempt(a.n + 1)
	if err != nil {
		s.fail(err)
		return nil
	}
	return next
}

// maxRefusals bounds how many times a session asks again for a stream
// the server did not process (REFUSED_STREAM, a GOAWAY that excludes it, a
// server that allows no streams) before Open's session fails with a
// [*StreamRefusedError]. Refusals are not counted against
// Options.RetryMaxAttempts: a refused stream is always safe to send again.
const maxRefusals = 5

// retryRefused reports whether the attempt that failed with err was
// refused by the server and may be sent again; it counts the refusal.
func (s *Session) retryRefused(err error) bool {
	if !errors.Is(err, transport.ErrRefused) || s.ctx.Err() != nil {
		return false
	}
	if s.refusals+1 >= maxRefusals || !s.pipe.canReplay() {
		s.refusals++
		return false
	}
	s.refusals++
	s.logf(logging.Debug, "bidi: stream to endpoint %q refused by the server (%d); trying again", s.input.EndpointName, s.refusals)
	return true
}

// refusalError wraps the error of a refused stream that is not retried.
func (s *Session) refusalError(err error) error {
	if s.refusals == 0 || !errors.Is(err, transport.ErrRefused) {
		return err
	}
	return &StreamRefusedError{Attempts: s.refusals, Err: err}
}

// retry reports whether a failed attempt a may be retried after err,
// takes a retry token from the client's retryer (its budget is shared by
// the client's sessions) and returns the delay before the next attempt.
// A clock-skew refusal is corrected (see Client.correctSkew) and retried
// once at once, outside the attempt count. It logs the decision.
func (s *Session) retry(a *attempt, err error) (time.Duration, bool) {
	if s.ctx.Err() != nil {
		return 0, false
	}
	if !s.pipe.canReplay() {
		s.logf(logging.Debug, "bidi: not retrying open of endpoint %q: more than ReplayLimit bytes already sent", s.input.EndpointName)
		return 0, false
	}
	class := classifyOpenError(err)
	if class == classSkew {
		if s.skewRetried || !s.c.correctSkew(err) {
			return 0, false
		}
		s.skewRetried = true
		s.logf(logging.Debug, "bidi: clock skew corrected; retrying open of endpoint %q", s.input.EndpointName)
		return 0, true
	}
	r := s.opts.Retryer
	switch {
	case class == classTerminal:
		return 0, false
	case class == classUnknown && !r.IsErrorRetryable(err):
		return 0, false
	case a.n-s.skewAttempts() >= r.MaxAttempts():
		s.logf(logging.Debug, "bidi: not retrying open of endpoint %q: %d attempt(s) made", s.input.EndpointName, a.n)
		return 0, false
	}
	release, terr := r.GetRetryToken(s.ctx, err)
	if terr != nil {
		s.logf(logging.Debug, "bidi: not retrying open of endpoint %q: retry budget exhausted", s.input.EndpointName)
		return 0, false
	}
	s.releaseRetry = release
	delay, derr := r.RetryDelay(a.n, err)
	if derr != nil {
		return 0, false
	}
	cl := logging.Debug
	if s.opts.ClientLogMode.IsRetries() {
		cl = logging.Warn
	}
	s.logf(cl, "bidi: retrying open of endpoint %q after attempt %d: %s", s.input.EndpointName, a.n, errorCode(err))
	return delay, true
}

// skewAttempts is the number of attempts that were skew retries (0 or 1).
func (s *Session) skewAttempts() int {
	if s.skewRetried {
		return 1
	}
	return 0
}

// fail ends a session whose response head never came (or was an error):
// the error becomes the terminal error, which Response then returns.
func (s *Session) fail(err error) {
	if s.ctx.Err() != nil {
		err = s.sessionErr()
	}
	s.end(err, endSession, endDefinite)
	close(s.respReady)
	s.logf(logging.Debug, "bidi: session with endpoint %q failed before the model answered: %s", s.input.EndpointName, errorCode(err))
}

// transportError maps an error of the HTTP client to the session's terms:
// the session's own cancellation cause, ErrDeadPeer or ErrNotHTTP2 where
// recognised, else the error itself.
func (s *Session) transportError(err error) error {
	if s.ctx.Err() != nil {
		return s.sessionErr()
	}
	return classifyTransportError(err)
}

// errorCode returns a log-safe description of err: the error code of an
// API error or the type of other errors. Messages are left out, since the
// service may echo request content in them.
func errorCode(err error) string {
	var api interface{ ErrorCode() string }
	if errors.As(err, &api) {
		return "error code " + cleanText(api.ErrorCode())
	}
	switch {
	case errors.Is(err, io.EOF):
		return "end of stream"
	case errors.Is(err, io.ErrUnexpectedEOF):
		return "stream cut mid-message"
	case errors.Is(err, ErrDeadPeer):
		return "dead peer"
	case errors.Is(err, ErrSessionClosed):
		return "session closed"
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return "context done"
	}
	return fmt.Sprintf("%T", err)
}

func (s *Session) logf(cl logging.Classification, format string, v ...any) {
	s.c.logf(cl, format, v...)
}

// isEventStream reports whether h declares an event-stream body.
func isEventStream(h http.Header) bool {
	mt, _, err := mime.ParseMediaType(h.Get("Content-Type"))
	return err == nil && mt == contentTypeEventStream
}

// endCause is why the session ended, for its span: the terminal error,
// else the context's cause.
func (s *Session) endCause() error {
	if err := s.state.terminal(); err != nil {
		return err
	}
	if s.ctx.Err() != nil {
		return s.sessionErr()
	}
	return nil
}
