package bidi

import (
	"context"
	"errors"
	"fmt"
	"io"
	"iter"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"
)

// DefaultRotateAfter is the stream age at which a [RotatingSession] opens
// a successor when Rotation.After is 0: a minute under the 30 minutes
// SageMaker lets one stream last, which leaves the old stream time to
// finish its replies after its input ends (the cap is not documented, and
// the service counts from its side of the handshake).
const DefaultRotateAfter = 29 * time.Minute

// DefaultMaxReconnects is Rotation.MaxReconnects when it is 0.
const DefaultMaxReconnects = 3

// DefaultFinishQuiet is the default Rotation.FinishQuiet.
const DefaultFinishQuiet = 2 * time.Second

// Rotation configures a [RotatingSession]: when its streams are replaced
// and what the application sends at each boundary. The zero value rotates
// every DefaultRotateAfter, sends nothing at the boundaries and reconnects
// at most DefaultMaxReconnects times in a row.
type Rotation struct {
	// After is the age at which a stream is replaced, planned and
	// make-before-break: the successor is opened (with fresh credentials)
	// and given its Preamble while the old stream still carries the
	// application's messages. 0 means DefaultRotateAfter; a negative value
	// disables rotation by age (streams are then replaced only when they
	// end early). The age is measured from just before the stream's Open.
	After time.Duration

	// Preamble, if set, sends what a new stream needs before the
	// application's messages (a configuration message, say). It is called
	// for every stream, the first one included, before any message of
	// Send reaches it; send sends one message on that stream, bounded by
	// ctx, which ends when the stream or the RotatingSession ends. An
	// error fails the stream: OpenRotating returns it for the first
	// stream, and a successor's failure counts as a failed reconnect
	// (MaxReconnects) or, in a planned rotation, is retried while the old
	// stream lasts. It is called from OpenRotating for the first stream and
	// from the session's own goroutine for the others, concurrently with
	// Send and Recv on the current stream.
	Preamble func(ctx context.Context, send func(Message) error) error

	// Finish, if set, sends what an old stream needs to end well (a
	// "Finalize" or "CloseStream" message, say) after the application's
	// last message on it and before its end frame. It is called in a
	// planned rotation only, never for a stream that ended early, from
	// the session's own goroutine, concurrently with Send on the new
	// stream; ctx ends when the old stream or the RotatingSession ends.
	// Its error is not reported: the old stream's input ends either way.
	// CloseSend does not call it: send the last stream's finishing
	// messages before CloseSend.
	Finish func(ctx context.Context, send func(Message) error) error

	// FinishQuiet is how long, after Finish, the old stream's input stays
	// open while its model is still answering: it ends (see
	// [Session.Finish]) once the model has been quiet that long, so that
	// replies still on their way are not lost (SageMaker closes the
	// container's connection when the input ends). 0 means
	// DefaultFinishQuiet; a negative value ends the input at once.
	FinishQuiet time.Duration

	// OnRotate, if set, is called at each boundary seen by the receiver:
	// when every reply of the old stream has been returned by Recv and
	// before the first reply of its successor. It runs inside Recv, on the
	// receiving goroutine, so it needs no locking against it and must not
	// call Recv.
	OnRotate func(RotationEvent)

	// MaxReconnects bounds the reconnects in a row: a failed attempt to
	// open a successor counts as one, and so does a stream that ends early
	// within a tenth of After (of DefaultRotateAfter when rotation by age
	// is disabled); a stream that lasted longer, or was rotated by age,
	// starts the count again. Once it is exceeded, the session's terminal
	// error is a [*ReconnectError]. 0 means DefaultMaxReconnects; a
	// negative value means no reconnect.
	MaxReconnects int

	// Backoff returns how long to wait before reconnect n (1 for the
	// first in a row). Nil means the default: no wait for the first, then
	// a jittered wait growing from 100 ms up to 5 s.
	Backoff func(n int) time.Duration
}

// RotationReason says why a stream was replaced.
type RotationReason int

const (
	// RotationAge is a planned rotation: the stream reached
	// Rotation.After, its successor was opened first, sends moved to it at
	// a message boundary, and the old stream was finished and drained.
	RotationAge RotationReason = iota + 1
	// RotationEarlyEnd is a reconnect: the stream ended before it was due
	// (an InternalStreamFailure, a ModelStreamError, a dead connection, a
	// clean end the application did not ask for).
	RotationEarlyEnd
)

// String returns "age" or "early end".
func (r RotationReason) String() string {
	switch r {
	case RotationAge:
		return "age"
	case RotationEarlyEnd:
		return "early end"
	}
	return fmt.Sprintf("RotationReason(%d)", int(r))
}

// RotationEvent describes one boundary between two streams of a
// [RotatingSession], as Rotation.OnRotate receives it.
type RotationEvent struct {
	// From is the generation of the stream whose replies were all
	// returned; To is its successor's, whose replies come next.
	// Generations count the session's streams from 1.
	From, To int
	// Reason says why From was replaced.
	Reason RotationReason
	// Err is why From's replies ended, when that was not its clean end:
	// the typed error ([*InternalStreamFailure], [*ModelStreamError], an
	// error matching [ErrDeadPeer], ...), or [ErrStreamEnded] for a
	// stream the service ended cleanly before it was due. Replies the
	// model had not sent by then are lost, and so may be the messages
	// sent to it shortly before: a stream that ends early cannot tell
	// which of them the model processed.
	Err error
}

// ReconnectError is the terminal error of a [RotatingSession] whose
// stream ended early and could not be replaced: Rotation.MaxReconnects
// reconnects in a row failed, or the last attempt failed in a way a
// retry cannot fix (an [*InputValidationError], an HTTP 4xx other than
// 408, 424 and 429). Recv returns it after the last stream's replies, and
// Send once that stream is over.
type ReconnectError struct {
	// Reconnects is the number of reconnects made in a row.
	Reconnects int
	// Err is the last failure: the error that ended the last stream, or
	// the one that failed the last attempt to open its successor.
	Err error
}

// Error describes the failure.
func (e *ReconnectError) Error() string {
	return fmt.Sprintf("bidi: stream ended and was not replaced after %d reconnect(s): %v", e.Reconnects, e.Err)
}

// Unwrap returns Err.
func (e *ReconnectError) Unwrap() error { return e.Err }

// A RotatingSession is a conversation that outlives the streams carrying
// it, opened by [Client.OpenRotating]. It sends through one [Session] (a
// generation) at a time and replaces it with a successor when it reaches
// Rotation.After, or when it ends early.
//
// A planned rotation is make-before-break: the successor is opened (with
// fresh credentials), given its Preamble and answered by the service, and
// only then do sends move to it, at a message boundary (a Send in
// progress finishes on the old stream first); the old stream then gets
// its Finish and its end frame, and its remaining replies are still
// returned by Recv. No message and no reply is lost, provided the old
// stream finishes before the service's cap (hence the margin in
// DefaultRotateAfter).
//
// A stream that ends early (an InternalStreamFailure, a ModelStreamError,
// a dead connection, a clean end before CloseSend) is replaced by a
// reconnect with the same callbacks, bounded by Rotation.MaxReconnects
// with backoff. Its end is reported to OnRotate, not to Recv. The replies
// it delivered before the end are returned first; the replies the model
// had not sent are lost, and so may be the messages sent to it shortly
// before, since an ended stream cannot tell which of them the model
// processed: an application that must not lose them resends them from
// its Preamble after an event with Reason RotationEarlyEnd. A Send that
// fails on an ended stream waits for the successor and sends its message
// there. (Any error of the current stream's Send other than its context's
// is taken as the stream's end.)
//
// Recv returns every reply of one stream, in order, before any reply of
// its successor, and calls Rotation.OnRotate at the boundary.
//
// Concurrency: Send and CloseSend are meant for one sending goroutine
// (concurrent calls are serialized, in no particular order), Recv and
// Messages for one receiving goroutine; sending and receiving proceed
// concurrently, and Close and Generation may be called at any time from
// any goroutine. The session runs one goroutine of its own, which watches
// the current stream's age and end and opens successors; Preamble (except
// the first stream's) and Finish run on it, OnRotate on the receiving
// goroutine, inside Recv.
//
// Memory: an old stream is released once Recv has returned all its
// replies; until then it holds what a [Session] reads ahead. Read the
// replies: a session whose replies are not read keeps every stream it
// rotated away from until the service ends it.
//
// Lifetime: CloseSend ends the input; no stream is opened after it, and
// Recv returns the remaining replies, then io.EOF, or the error that ended
// the last stream. Close (or cancelling the context given to OpenRotating)
// ends every stream at once, unblocks every pending call, which then
// returns [ErrSessionClosed] (or the context's cause), and makes the
// session's goroutine exit, once a callback it is running returns.
type RotatingSession struct {
	// Set by OpenRotating, read-only after.
	c             *Client
	in            OpenInput
	after         time.Duration // < 0: no rotation by age
	finishQuiet   time.Duration // < 0: CloseSend at once
	stable        time.Duration // a stream that lasts this long resets the count of reconnects
	maxReconnects int           // < 0: none
	backoff       func(int) time.Duration
	preamble      func(context.Context, func(Message) error) error
	finish        func(context.Context, func(Message) error) error
	onRotate      func(RotationEvent)

	// ctx is the session's lifetime, the parent of every stream's; it is
	// cancelled by Close with ErrSessionClosed as cause.
	ctx    context.Context
	cancel context.CancelCauseFunc

	// inputDone is closed by CloseSend (under sendLock): the rotator
	// opens no stream after it.
	inputDone chan struct{}

	// sendLock is held by Send and CloseSend while they use cur, and by
	// the rotator while it replaces cur, so that sends switch streams
	// at a message boundary. It guards cur and sendClosed.
	sendLock   ctxLock
	cur        *generation
	sendClosed bool

	gen atomic.Int64 // cur.n, for Generation

	// mu guards the settling of generations (generation.settle) and
	// terminal.
	mu       sync.Mutex
	terminal error // a *ReconnectError once the rotator gave up

	// Receive side, guarded by recvLock: head is the stream Recv reads,
	// recvErr the sticky terminal error returned by Recv.
	recvLock ctxLock
	head     *generation
	recvErr  error
}

// A generation is one stream of a RotatingSession.
type generation struct {
	n      int
	sess   *Session
	opened time.Time

	// kicked is closed by a Send that failed on this stream, after
	// storing the error in kickErr: it tells the rotator the stream is
	// over before the session's context says so.
	kickOnce sync.Once
	kickErr  error
	kicked   chan struct{}

	// settled is closed, under RotatingSession.mu, once it is known
	// what follows this stream for the sender and the receiver: next
	// (with reason) or nothing (next nil: input ended, or the rotator
	// gave up). Written before settled is closed, read-only after.
	settled   chan struct{}
	isSettled bool // guarded by RotatingSession.mu
	next      *generation
	reason    RotationReason
}

// kick records that Send failed on the stream with err.
func (g *generation) kick(err error) {
	g.kickOnce.Do(func() {
		g.kickErr = err
		close(g.kicked)
	})
}

// over reports whether the stream has ended, as far as the rotator knows.
func (g *generation) over() bool {
	select {
	case <-g.sess.Context().Done():
		return true
	case <-g.kicked:
		return true
	default:
		return false
	}
}

// endErr returns why the stream ended; over is true.
func (g *generation) endErr() error {
	select {
	case <-g.kicked:
		return g.kickErr
	default:
		return context.Cause(g.sess.Context())
	}
}

// OpenRotating opens a [RotatingSession]: a conversation with the endpoint
// named by in that is carried by one stream after another, as r says (nil
// r means the zero Rotation). It opens the first stream as [Client.Open]
// does, runs r.Preamble on it, and, unlike Open, returns only once the
// service answered it: an HTTP error (a [*ResponseError]) or the
// Preamble's error is OpenRotating's. Every successor is opened the same
// way, with the same input.
//
// ctx governs the whole session, as for Open: use one without deadline,
// and call Close, for a long conversation.
func (c *Client) OpenRotating(ctx context.Context, in *OpenInput, r *Rotation) (*RotatingSession, error) {
	if in == nil {
		return nil, &InputValidationError{Field: "OpenInput", Message: "input is nil"}
	}
	if r == nil {
		r = &Rotation{}
	}
	rs := &RotatingSession{
		c:             c,
		in:            *in,
		after:         r.After,
		finishQuiet:   r.FinishQuiet,
		maxReconnects: r.MaxReconnects,
		backoff:       r.Backoff,
		preamble:      r.Preamble,
		finish:        r.Finish,
		onRotate:      r.OnRotate,
		inputDone:     make(chan struct{}),
	}
	if rs.finishQuiet == 0 {
		rs.finishQuiet = DefaultFinishQuiet
	}
	if rs.after == 0 {
		rs.after = DefaultRotateAfter
	}
	rs.stable = rs.after / 10
	if rs.after < 0 {
		rs.stable = DefaultRotateAfter / 10
	}
	if rs.maxReconnects == 0 {
		rs.maxReconnects = DefaultMaxReconnects
	}
	if rs.backoff == nil {
		rs.backoff = defaultReconnectBackoff
	}
	rs.ctx, rs.cancel = context.WithCancelCause(ctx)
	g, err := rs.open(1)
	if err != nil {
		rs.cancel(ErrSessionClosed)
		return nil, err
	}
	rs.cur, rs.head = g, g
	rs.gen.Store(1)
	go rs.rotate()
	return rs, nil
}

// open opens stream n, runs the preamble on it and waits until the service
// answered it.
func (rs *RotatingSession) open(n int) (*generation, error) {
	opened := time.Now()
	sess, err := rs.c.Open(rs.ctx, &rs.in)
	if err != nil {
		return nil, err
	}
	g := &generation{n: n, sess: sess, opened: opened, kicked: make(chan struct{}), settled: make(chan struct{})}
	if rs.preamble != nil {
		if err := rs.preamble(sess.Context(), sendOn(sess)); err != nil {
			sess.Close()
			return nil, err
		}
	}
	if _, err := sess.Response(rs.ctx); err != nil {
		sess.Close()
		return nil, err
	}
	return g, nil
}

// sendOn returns the send function given to Preamble and Finish.
func sendOn(s *Session) func(Message) error {
	return func(m Message) error { return s.Send(s.Context(), m) }
}

// Generation returns the generation of the stream that Send currently
// sends to: 1 for the first stream, one more for each successor.
func (rs *RotatingSession) Generation() int { return int(rs.gen.Load()) }

// Send sends one message to the model on the current stream, as
// [Session.Send] does. A message is sent whole on one stream: the switch
// to a successor waits for a Send in progress. If the current stream has
// ended early, Send waits for its successor (bounded by ctx) and sends
// the message there; it returns the session's terminal error (a
// [*ReconnectError]) if there is none. After CloseSend it returns
// [ErrSendClosed], after Close [ErrSessionClosed].
func (rs *RotatingSession) Send(ctx context.Context, m Message) error {
	for {
		if err := rs.sendLock.Lock(ctx, rs.ctx.Done(), nil); err != nil {
			if err == errLockStopped {
				return rs.closedErr()
			}
			return err
		}
		if rs.sendClosed {
			rs.sendLock.Unlock()
			return ErrSendClosed
		}
		g := rs.cur
		err := g.sess.Send(ctx, m)
		rs.sendLock.Unlock()
		switch {
		case err == nil:
			return nil
		case rs.ctx.Err() != nil:
			return rs.closedErr()
		case ctx.Err() != nil:
			return err
		}
		// The stream is over (or broken): wait for its successor.
		g.kick(err)
		select {
		case <-g.settled:
		case <-ctx.Done():
			return ctx.Err()
		case <-rs.ctx.Done():
			return rs.closedErr()
		}
		if g.next == nil {
			if t := rs.terminalErr(); t != nil {
				return t
			}
			return err
		}
	}
}

// CloseSend ends the input: the current stream gets its end frame (as
// [Session.CloseSend]), no successor is opened after it, and a rotation in
// progress is abandoned. Recv then returns the remaining replies and
// io.EOF, or the error that ended the last stream. It returns the current
// stream's CloseSend error, such as the reason the stream ended early.
// Calling it again does nothing.
func (rs *RotatingSession) CloseSend() error {
	if err := rs.sendLock.Lock(context.Background(), rs.ctx.Done(), nil); err != nil {
		return rs.closedErr()
	}
	defer rs.sendLock.Unlock()
	if rs.sendClosed {
		return nil
	}
	rs.sendClosed = true
	close(rs.inputDone)
	rs.settle(rs.cur, nil, 0)
	return rs.cur.sess.CloseSend()
}

// Close ends the session at once: every stream is aborted (use CloseSend
// and read to io.EOF for a graceful end), pending calls return
// [ErrSessionClosed], and the session's goroutine exits. It does not wait
// for it. Close is safe to call more than once and concurrently; it
// always returns nil.
func (rs *RotatingSession) Close() error {
	rs.cancel(ErrSessionClosed)
	return nil
}

// closedErr returns why the session's context ended.
func (rs *RotatingSession) closedErr() error {
	if err := context.Cause(rs.ctx); err != nil {
		return err
	}
	return ErrSessionClosed
}

func (rs *RotatingSession) terminalErr() error {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	return rs.terminal
}

// settle records what follows g, once: next with its reason, or nothing.
func (rs *RotatingSession) settle(g, next *generation, reason RotationReason) bool {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	if g.isSettled {
		return false
	}
	g.isSettled, g.next, g.reason = true, next, reason
	close(g.settled)
	return true
}

// Recv returns the next message from the model, as [Session.Recv] does:
// every message of a stream, in order, then those of its successor, with
// Rotation.OnRotate called in between. The end of a stream that was
// replaced is not an error: it is reported to OnRotate. Recv returns
// io.EOF after CloseSend once the last stream ended cleanly; the error
// that ended the last stream if it did not; a [*ReconnectError] if a
// stream that ended early could not be replaced; [ErrSessionClosed]
// after Close. These are terminal. ctx bounds only this call.
func (rs *RotatingSession) Recv(ctx context.Context) (Message, error) {
	if err := rs.recvLock.Lock(ctx, nil, nil); err != nil {
		return Message{}, err
	}
	defer rs.recvLock.Unlock()
	for {
		if rs.recvErr != nil {
			return Message{}, rs.recvErr
		}
		h := rs.head
		m, err := h.sess.Recv(ctx)
		switch {
		case err == nil:
			return m, nil
		case rs.ctx.Err() != nil:
			return Message{}, rs.closedErr()
		case ctx.Err() != nil && errors.Is(err, ctx.Err()):
			return Message{}, err
		}
		var tooLarge *MessageTooLargeError
		if errors.As(err, &tooLarge) {
			return Message{}, err // not terminal
		}
		// h's replies are over: go on with its successor, if any.
		select {
		case <-h.settled:
		case <-ctx.Done():
			return Message{}, ctx.Err()
		case <-rs.ctx.Done():
			return Message{}, rs.closedErr()
		}
		if h.next == nil {
			if t := rs.terminalErr(); t != nil {
				err = t
			}
			rs.recvErr = err
			h.sess.Close()
			return Message{}, err
		}
		ev := RotationEvent{From: h.n, To: h.next.n, Reason: h.reason}
		if err != io.EOF {
			ev.Err = err
		} else if h.reason == RotationEarlyEnd {
			ev.Err = ErrStreamEnded
		}
		h.sess.Close()
		rs.head = h.next
		if rs.onRotate != nil {
			rs.onRotate(ev)
		}
	}
}

// Messages returns an iterator over the messages received with Recv(ctx),
// as [Session.Messages] does: it ends after the last message at a clean
// end; any other error is yielded once and ends it. It is single-use.
func (rs *RotatingSession) Messages(ctx context.Context) iter.Seq2[Message, error] {
	return func(yield func(Message, error) bool) {
		for {
			m, err := rs.Recv(ctx)
			if err == io.EOF {
				return
			}
			if !yield(m, err) || err != nil {
				return
			}
		}
	}
}

// rotate is the session's goroutine: it waits for the current stream to
// reach its age or to end, opens its successor and installs it, until the
// session closes, its input ends, or reconnects are exhausted.
func (rs *RotatingSession) rotate() {
	failures := 0 // reconnects in a row, the one under way included
	for {
		g := rs.cur // only this goroutine changes cur
		var (
			due   <-chan time.Time
			timer *time.Timer
		)
		if rs.after > 0 {
			timer = time.NewTimer(time.Until(g.opened.Add(rs.after)))
			due = timer.C
		}
		planned := false
		select {
		case <-rs.ctx.Done():
		case <-rs.inputDone:
		case <-due:
			planned = true
		case <-g.sess.Context().Done():
		case <-g.kicked:
		}
		if timer != nil {
			timer.Stop()
		}
		if rs.ctx.Err() != nil || isClosed(rs.inputDone) {
			return
		}
		next, reason, ok := rs.successor(g, planned, &failures)
		if !ok {
			return
		}
		if !rs.install(g, next, reason) {
			next.sess.Close()
			return
		}
		if reason == RotationAge {
			failures = 0
			if rs.finish != nil {
				rs.finish(g.sess.Context(), sendOn(g.sess)) // its error changes nothing
			}
			if rs.finishQuiet > 0 {
				// Keep the old input open while its model answers;
				// Recv drains it meanwhile. Finish ends when the old
				// stream does, or with the session.
				go g.sess.Finish(rs.ctx, rs.finishQuiet)
				continue
			}
		}
		g.sess.CloseSend()
	}
}

// successor opens the stream that follows g. In a planned rotation (g
// alive), failed attempts are retried with backoff as long as g lasts;
// once g is over, the rotation is a reconnect: each attempt counts in
// failures, and successor gives up (recording a *ReconnectError) beyond
// MaxReconnects or on an error a retry cannot fix. It reports false when
// it gave up, or when the session closed or its input ended.
func (rs *RotatingSession) successor(g *generation, planned bool, failures *int) (*generation, RotationReason, bool) {
	var lastErr error
	sawEnd := false
	for attempt := 1; ; attempt++ {
		if planned && g.over() {
			planned = false
		}
		if !planned {
			if !sawEnd {
				sawEnd = true
				lastErr = g.endErr()
				if time.Since(g.opened) >= rs.stable {
					*failures = 0
				}
			}
			*failures++
			if *failures > rs.maxReconnects || permanent(lastErr) {
				rs.giveUp(g, &ReconnectError{Reconnects: *failures - 1, Err: lastErr})
				return nil, 0, false
			}
			if !rs.sleep(rs.backoff(*failures), nil) {
				return nil, 0, false
			}
		} else if attempt > 1 && !rs.sleep(rs.backoff(attempt), g) {
			if rs.ctx.Err() != nil || isClosed(rs.inputDone) {
				return nil, 0, false
			}
			planned = false // g ended while waiting: reconnect
			continue
		}
		next, err := rs.open(g.n + 1)
		if err == nil {
			if planned {
				return next, RotationAge, true
			}
			return next, RotationEarlyEnd, true
		}
		if rs.ctx.Err() != nil || isClosed(rs.inputDone) {
			return nil, 0, false
		}
		lastErr = err
	}
}

// sleep waits d; it reports false if the session closed, its input ended
// or (for a non-nil g) g ended first.
func (rs *RotatingSession) sleep(d time.Duration, g *generation) bool {
	var ctxDone, kicked <-chan struct{}
	if g != nil {
		ctxDone, kicked = g.sess.Context().Done(), g.kicked
	}
	if d <= 0 {
		return rs.ctx.Err() == nil && !isClosed(rs.inputDone) && (g == nil || !g.over())
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-rs.ctx.Done():
		return false
	case <-rs.inputDone:
		return false
	case <-ctxDone:
		return false
	case <-kicked:
		return false
	case <-t.C:
		return true
	}
}

// install makes next the stream Send sends to, at a message boundary
// (under the send lock), unless the input ended or the session closed.
func (rs *RotatingSession) install(g, next *generation, reason RotationReason) bool {
	if rs.sendLock.Lock(rs.ctx, nil, nil) != nil {
		return false
	}
	defer rs.sendLock.Unlock()
	if rs.sendClosed {
		return false
	}
	rs.cur = next
	rs.gen.Store(int64(next.n))
	rs.settle(g, next, reason)
	return true
}

// giveUp records the terminal error and that nothing follows g.
func (rs *RotatingSession) giveUp(g *generation, err error) {
	rs.mu.Lock()
	rs.terminal = err
	rs.mu.Unlock()
	rs.settle(g, nil, 0)
}

// permanent reports whether err is a failure that opening the stream again
// cannot fix.
func permanent(err error) bool {
	var (
		ive *InputValidationError
		re  *ResponseError
	)
	switch {
	case errors.As(err, &ive), errors.Is(err, ErrZeroClient):
		return true
	case errors.As(err, &re) && re.StatusCode == 408:
		return false
	}
	return classifyOpenError(err) == classTerminal
}

func isClosed(c <-chan struct{}) bool {
	select {
	case <-c:
		return true
	default:
		return false
	}
}

// defaultReconnectBackoff waits nothing before the first reconnect in a
// row, then a random time in [d/2, d], d doubling from 100 ms to 5 s.
func defaultReconnectBackoff(n int) time.Duration {
	if n <= 1 {
		return 0
	}
	d := 100 * time.Millisecond
	for i := 2; i < n && d < 5*time.Second; i++ {
		d *= 2
	}
	d = min(d, 5*time.Second)
	return d/2 + rand.N(d/2+1)
}
