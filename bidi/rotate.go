package bidi

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
)

// The defaults of the Rotation fields, documented on each field.
const (
	defaultRotateAfter   = 29 * time.Minute
	defaultMaxReconnects = 3
	defaultFinishQuiet   = 2 * time.Second
	defaultExpiryMargin  = 5 * time.Minute
	defaultReplayBytes   = 1 << 20
)

// Rotation configures a [RotatingSession]: when its streams are replaced,
// what the application sends at each boundary, and what is sent again
// after a fault. The zero value rotates every 29 minutes (and before
// temporary credentials expire), sends nothing at the boundaries, replays
// nothing and reconnects at most 3 times in a row.
type Rotation struct {
	// After is the age at which a stream is replaced, planned and
	// make-before-break: the successor is opened (with fresh credentials)
	// and given its Preamble while the old stream still carries the
	// application's messages. 0 means 29 minutes: a minute under the 30
	// minutes SageMaker lets one stream last, which leaves the old stream
	// time to finish its replies after its input ends (the cap is not
	// documented, and the service counts from its side of the handshake).
	// A negative value disables rotation by age (streams are then
	// replaced only when they end early, when their credentials expire,
	// or on Rotate). The age is measured from just before the stream's
	// Open.
	After time.Duration

	// ExpiryMargin is how long before its credentials expire a stream is
	// replaced, planned as by age, when the credentials it was signed with
	// can expire (aws.Credentials.CanExpire): the successor is signed
	// with credentials valid past the margin (a cached provider is
	// refreshed for it). A stream is never replaced by expiry earlier than
	// halfway between its open and its credentials' expiry. 0 means
	// 5 minutes; a negative value disables it.
	ExpiryMargin time.Duration

	// Preamble, if set, sends what a new stream needs before the
	// application's messages (a configuration message, say). It is called
	// for every stream, the first one included, once the service answered
	// the stream and before any message of Send (or of the replay window)
	// reaches it; send sends one message on
	// that stream, bounded by ctx, which ends when the stream or the
	// RotatingSession ends. An error fails the stream: OpenRotating
	// returns it for the first stream, and a successor's failure counts as
	// a failed reconnect (MaxReconnects) or, in a planned rotation, is
	// retried while the old stream lasts. It is called from OpenRotating
	// for the first stream and from the session's own goroutine for the
	// others, concurrently with Send and Recv on the current stream. It
	// does not know why its stream was opened: what a successor must
	// receive again after a fault is the replay window's job.
	Preamble func(ctx context.Context, send func(Message) error) error

	// Finish, if set, sends what an old stream needs to end well (a
	// "Finalize" or "CloseStream" message, say) after the application's
	// last message on it and before its end frame. It is called in a
	// planned rotation only, never for a stream that ended early, from
	// the session's own goroutine, concurrently with Send on the new
	// stream; ctx ends when the old stream or the RotatingSession ends.
	// Its error is not reported: the old stream's input ends either way.
	// [RotatingSession.Finish] and CloseSend do not call it: send the
	// last stream's finishing messages before them.
	Finish func(ctx context.Context, send func(Message) error) error

	// FinishQuiet is how long, after Finish, the old stream's input stays
	// open while its model is still answering: it ends (see
	// [Session.Finish]) once the model has been quiet that long, so that
	// replies still on their way are not lost (SageMaker closes the
	// container's connection when the input ends). Recv returns the
	// successor's replies meanwhile. 0 means 2 seconds; a
	// negative value ends the input at once.
	FinishQuiet time.Duration

	// ReplayWindow turns replay on: the session keeps a copy of the
	// messages Send sent in the last ReplayWindow (at most ReplayBytes of
	// Data), and after a stream ends early it sends those of them that
	// were sent within ReplayWindow before the end to the successor,
	// after its Preamble and before any new message. The
	// [RotationEvent] reports which ones (ReplayFrom, Replayed), so that
	// the application can drop the replies it has already seen. A planned
	// rotation replays nothing: the old stream finishes its messages, and
	// the window forgets them once it ended cleanly; if it fails while it
	// finishes, the current stream is replaced too, and the successor is
	// sent the window from the failed stream's messages on
	// (RotationOverlapFault), also when the input has ended meanwhile
	// (CloseSend or Finish): the successor is then finished in turn. So
	// is the stream that was current when Finish ended the input: if it
	// fails while it finishes, with messages of the window unanswered,
	// a successor is sent them (RotationOverlapFault) and finished in
	// turn, and Finish reports the successor's end instead of the failure.
	// Messages sent with SendPart are not kept. 0 with ReplayBytes 0
	// means no replay.
	ReplayWindow time.Duration

	// ReplayBytes bounds the replay window's Data, oldest messages
	// dropped first; a message larger than it is not kept. 0 means
	// 1 MiB when ReplayWindow is set; with ReplayWindow 0 a
	// positive ReplayBytes alone turns replay on, bounded by size only.
	ReplayBytes int

	// OnRotate, if set, is called once per rotation, inside Recv on the
	// receiving goroutine, before Recv returns the first message of the
	// successor (see [RotatingSession] for what may follow it). It needs
	// no locking against the receiver and must not call Recv.
	OnRotate func(RotationEvent)

	// OnStreamEnd, if set, is called inside Recv once every message of
	// stream gen has been returned, with nil for a clean end and the
	// error that ended it otherwise. It runs on the receiving goroutine
	// and must not call Recv.
	OnStreamEnd func(gen int, err error)

	// MaxReconnects bounds the reconnects in a row: a failed attempt to
	// open a successor counts as one, and so does a stream that ends early
	// within a tenth of After (of 29 minutes when rotation by age
	// is disabled); a stream that lasted longer, or was rotated as
	// planned, starts the count again. Once it is exceeded, the session's
	// terminal error is the last failure, wrapped with the number of
	// reconnects made. 0 means 3; a negative value means no reconnect.
	MaxReconnects int

	// Backoff returns how long to wait before reconnect n (1 for the
	// first in a row). Nil means the default: no wait for the first, then
	// a full-jitter wait, uniform between 0 and a bound that doubles from
	// 100 ms up to 5 s.
	Backoff func(n int) time.Duration
}

// RotationReason says why a stream was replaced. Its value prints as
// itself: "age", "early end", "requested", "expiry" or "overlap fault".
type RotationReason string

const (
	// RotationAge is a planned rotation: the stream reached
	// Rotation.After, its successor was opened first, sends moved to it at
	// a message boundary, and the old stream was finished and drained.
	RotationAge RotationReason = "age"
	// RotationEarlyEnd is a reconnect: the stream ended before it was due
	// (an InternalStreamFailure, a ModelStreamError, a reset, a dead
	// connection, a GOAWAY, a clean end the application did not ask for).
	RotationEarlyEnd RotationReason = "early end"
	// RotationRequested is a planned rotation asked for with
	// [RotatingSession.Rotate].
	RotationRequested RotationReason = "requested"
	// RotationExpiry is a planned rotation ahead of the expiry of the
	// credentials the old stream was signed with (Rotation.ExpiryMargin).
	RotationExpiry RotationReason = "expiry"
	// RotationOverlapFault replaces a stream that is still working
	// because an older one, still finishing after a planned rotation,
	// ended early (a TCP connection dropped under both, say) with replay
	// on: the successor is sent the messages of the replay window again
	// from the failed stream's last ones on, in order, so that what the
	// failed stream had not answered is answered. From finishes as after a
	// planned rotation; Err is the older stream's failure.
	RotationOverlapFault RotationReason = "overlap fault"
)

// RotationEvent describes one rotation of a [RotatingSession], as
// Rotation.OnRotate receives it.
type RotationEvent struct {
	// From is the generation of the stream replaced; To is its
	// successor's, whose messages come next. Generations count the
	// session's streams from 1.
	From, To int
	// Reason says why From was replaced.
	Reason RotationReason
	// Err is, for a stream that ended early (From, or with
	// RotationOverlapFault an older one), why: the typed error
	// ([*InternalStreamFailure], [*ModelStreamError], an error matching
	// [ErrDeadPeer], ...), or [ErrStreamEnded] for a stream the service
	// ended cleanly before it was due. It is nil for a planned rotation.
	// Replies the model had not sent by then are lost; the messages it
	// had not answered are lost too unless the replay window kept them.
	Err error
	// Start places To on the call's timeline.
	Start StreamStart
	// ReplayFrom and Replayed say which messages of the call (numbered
	// by Send from 0, see [RotatingSession.Sent]) the successor was sent
	// again from the replay window, before anything else but its
	// Preamble: Replayed messages from ReplayFrom on. Replayed is 0 when
	// nothing was replayed.
	ReplayFrom int64
	Replayed   int
}

// StreamStart places the start of one stream of a [RotatingSession] on
// the call's timeline, so that an application can rebase what the
// stream's model counts from its own start (timestamps, audio offsets).
type StreamStart struct {
	// Time is the wall-clock time at which the stream's response head
	// was seen (before its Preamble was sent): a model's clock, which
	// starts when the container accepts the connection, starts about
	// then.
	Time time.Time
	// Offset is Time on the call's timeline: the time since the first
	// stream's Time (0 for the first stream), on the monotonic clock.
	Offset time.Duration
	// Messages is the number of messages of the call sent with Send
	// before the stream's first one, replayed messages included: the
	// sequence number of the first message the stream received after its
	// Preamble. Bytes is the total Data of those messages.
	Messages, Bytes int64
}

// reconnectError is the terminal error of a [RotatingSession] whose
// stream ended early and could not be replaced: Rotation.MaxReconnects
// reconnects in a row failed, or the last attempt failed in a way a
// retry cannot fix (an [*InputValidationError], an HTTP 4xx other than
// 408, 424 and 429). Recv returns it after the last stream's replies, and
// Send once that stream is over.
type reconnectError struct {
	// Reconnects is the number of reconnects made in a row.
	Reconnects int
	// Err is the last failure: the error that ended the last stream, or
	// the one that failed the last attempt to open its successor.
	Err error
}

// Error describes the failure.
func (e *reconnectError) Error() string {
	return fmt.Sprintf("bidi: stream ended and was not replaced after %d reconnect(s): %v", e.Reconnects, e.Err)
}

// Unwrap returns Err.
func (e *reconnectError) Unwrap() error { return e.Err }

// A RotatingSession is a conversation that outlives the streams carrying
// it, opened by [Client.OpenRotating]. It sends through one [Session] (a
// generation) at a time and replaces it with a successor when it reaches
// Rotation.After, ahead of its credentials' expiry, on
// [RotatingSession.Rotate], or when it ends early.
//
// A planned rotation is make-before-break: the successor is opened (with
// fresh credentials), given its Preamble and answered by the service, and
// only then do sends move to it, at a message boundary (a Send in
// progress, or a message begun with SendPart, finishes on the old stream
// first); the old stream then gets its Finish and, once its model has
// been quiet for FinishQuiet, its end frame. No message and no reply is
// lost, provided the old stream finishes before the service's cap (hence
// the margin in Rotation.After's default).
//
// A stream that ends early (an InternalStreamFailure, a ModelStreamError,
// a reset, a dead connection, a GOAWAY, a clean end before CloseSend) is
// replaced by a reconnect with the same callbacks, bounded by
// Rotation.MaxReconnects with backoff. Its end is reported to OnRotate
// and OnStreamEnd, not to Recv. The replies it delivered before the end
// are returned first; the replies the model had not sent are lost. The
// messages it had not answered are lost too, unless Rotation.ReplayWindow
// is set: the successor then receives the messages of the window again,
// after its Preamble and before any new message, and the event says
// which. A Send that fails on an ended stream waits for the successor and
// sends its message there (after the replay).
//
// Order: Recv returns the messages of each stream in the order the
// stream delivered them, and tells which stream each came from
// ([RotatingSession.RecvGeneration]). After a planned rotation, the
// successor's messages are returned as they arrive, without waiting for
// the old stream's end: between OnRotate(From→To) and OnStreamEnd(From),
// messages of From and of To may interleave (From's are the replies to
// what was sent before the switch and to its Finish; To's those to its
// Preamble and what was sent after). After an early end nothing
// interleaves: every message of From, OnStreamEnd(From), OnRotate, then
// the messages of To. OnRotate for a stream always precedes its first
// message, and rotations are reported in generation order.
//
// Concurrency: Send, SendPart, CloseSend, Finish and Rotate are meant for
// one sending goroutine (concurrent calls are serialized, in no
// particular order), Recv, RecvGeneration and Messages for one receiving
// goroutine; sending and receiving proceed concurrently, and Close,
// Sent and Response may be called at any time from any
// goroutine. The session runs goroutines of its own: one that watches the
// current stream and opens successors (Preamble, except the first
// stream's, and Finish run on it), one per stream that reads its replies
// until Recv has taken them, and, while an old stream finishes, one that
// waits out its FinishQuiet. OnRotate and OnStreamEnd run on the
// receiving goroutine, inside Recv.
//
// Memory: an old stream is released once Recv has returned all its
// replies; until then it holds the replies its connection buffered (at
// most a stream's receive window) and one its pump holds. Read the
// replies: a session whose replies are not read keeps every stream it
// rotated away from until the service ends it. The replay window holds
// at most ReplayBytes of message data.
//
// Lifetime: Finish ends the call gracefully (every reply of every stream
// still returned by Recv); CloseSend ends the input at once. No stream is
// opened after either (but, with replay on, the successor of a stream
// that fails while it finishes: see Rotation.ReplayWindow), and Recv
// returns the remaining replies, then
// io.EOF, or the error that ended the last stream. Close (or cancelling
// the context given to OpenRotating) ends every stream at once, unblocks
// every pending call, which then returns [ErrSessionClosed] (or the
// context's cause), and makes the session's goroutines exit, once a
// callback they are running returns.
type RotatingSession struct {
	// Set by OpenRotating, read-only after.
	c             *Client
	in            OpenInput
	after         time.Duration // < 0: no rotation by age
	expiryMargin  time.Duration // < 0: no rotation by expiry
	finishQuiet   time.Duration // < 0: CloseSend at once
	stable        time.Duration // a stream that lasts this long resets the count of reconnects
	maxReconnects int           // < 0: none
	backoff       func(int) time.Duration
	preamble      func(context.Context, func(Message) error) error
	finish        func(context.Context, func(Message) error) error
	onRotate      func(RotationEvent)
	onStreamEnd   func(int, error)
	began         time.Time // the first stream's start: 0 on the call's timeline

	// ctx is the session's lifetime, the parent of every stream's; it is
	// cancelled by Close with ErrSessionClosed as cause.
	ctx    context.Context
	cancel context.CancelCauseFunc

	// inputDone is closed by CloseSend and Finish (holding the send
	// turn): the rotator opens no stream after it.
	inputDone chan struct{}

	// inbox carries to the rotator Rotate's requests and the streams
	// that failed while they finished after a planned rotation (with
	// replay on); see toRotator.
	inbox chan rotatorMsg

	// sendTurn serialises the send methods while they use cur, and the
	// rotator while it replaces cur, so that sends switch streams at a
	// message boundary. Its holder owns the fields below it; partOpen is
	// also guarded by mu.
	sendTurn   turn
	cur        *generation
	sendClosed bool
	partOpen   bool          // a message begun with SendPart is open on cur; written under mu too, moved broadcast when it completes
	sentBytes  int64         // Data sent with Send and SendPart
	replay     *replayWindow // nil: replay off

	gen  atomic.Int64 // cur.n, for generation
	sent atomic.Int64 // messages sent with Send and completed with SendPart

	// mu is the session's one lock. It guards the settling of
	// generations (generation.settle), terminal, pumps, olds, finishers
	// and moved; the turns wait under it (turnHost). Lock order: a turn,
	// then mu; no Session's lock is taken under mu.
	mu        sync.Mutex
	terminal  error         // a *reconnectError once the rotator gave up
	pumps     int           // generations whose end Recv has not taken yet
	olds      []*generation // streams rotated away from, finishing (pruned as they end)
	finishers int           // finishOld goroutines that have not returned

	// moved is the session's broadcast: closed when a turn with waiters
	// is released, a message begun with SendPart completes (partOpen:
	// the rotator waits for a message boundary), a finishOld goroutine
	// returns (finishers: the rotator waits for the last once the input
	// ended), a generation's pumped or settled is set, or the rotator
	// exits (stopped).
	moved broadcast

	// stopped is set, under mu and with moved broadcast, when the
	// rotator exits (setStopped).
	stopped atomic.Bool

	// items carries every stream's messages and ends from its pump to
	// Recv.
	items chan rotItem

	// recvTurn serialises Recv; its holder owns the fields below.
	recvTurn  turn
	announced *generation // the newest generation OnRotate was called for
	ended     *generation // the newest generation whose end Recv took
	recvGen   int         // generation of the message Recv returned last
	recvErr   error       // sticky terminal error
}

// A generation is one stream of a RotatingSession.
type generation struct {
	n       int
	sess    *Session
	opened  time.Time      // just before Open
	started time.Time      // when the response head was seen: the model's clock starts about then
	due     time.Time      // planned rotation, zero for none
	dueWhy  RotationReason // RotationAge or RotationExpiry
	endAt   time.Time      // when the rotator saw it end early; owned by the rotator

	// event is the rotation that installed the stream (zero for the
	// first); written by the rotator before the stream's pump starts.
	event RotationEvent

	// drained is closed by the stream's pump once it handed its end to
	// Recv (or the session closed).
	drained chan struct{}

	// recvEnd is what ended the stream, as Recv took it (io.EOF for a
	// clean end); owned by the receiving goroutine.
	recvEnd error

	// kicked is closed by a Send that failed on this stream, or by its
	// pump at the stream's end, after storing the error in kickErr: it
	// tells the rotator the stream is over before the session's context
	// says so. A Send's error may be a stand-in (ErrStreamEnded while the
	// reason is not decoded yet), so it is no verdict on how the stream
	// ended: pumpErr is.
	kickDone atomic.Bool // kick ran: kickErr is set, kicked closing
	kickErr  error
	kicked   chan struct{}

	// pumped is set by the stream's pump once it saw the end, after
	// storing it in pumpErr (ErrStreamEnded for a clean end): the
	// verdict on how the stream ended. It is set under
	// RotatingSession.mu, and moved broadcast (setPumped).
	pumpErr error
	pumped  atomic.Bool

	// settled is set, under RotatingSession.mu and with moved broadcast,
	// once it is known what follows this stream for the sender and the
	// receiver: next (with reason) or nothing (next nil: input ended
	// and, with replay on, every older stream finished; or the rotator
	// gave up). next is written before settled is set, read-only after.
	settled atomic.Bool
	next    *generation

	// recovered is set by the rotator, holding the send turn, when the
	// stream failed while finishing and a successor was sent the
	// messages it left unanswered: its error is no longer the call's.
	// Read by Finish once the rotator stopped.
	recovered bool
}

// kick records that Send failed on the stream with err.
// Only the first call counts.
func (g *generation) kick(err error) {
	if g.kickDone.CompareAndSwap(false, true) {
		g.kickErr = err
		close(g.kicked)
	}
}

// over reports whether the stream has ended, as far as the rotator knows:
// its session ended, a Send failed on it, or its response stream is over
// (a reset, say), which the session knows before its reader got through
// the replies buffered ahead of the end.
func (g *generation) over() bool {
	if g.sess.state.sendOver() {
		return true
	}
	select {
	case <-g.sess.Context().Done():
		return true
	case <-g.kicked:
		return true
	default:
		return false
	}
}

// endErr returns why the stream ended; over is true. The reason its
// reader saw comes first: a session decodes the reason only in Recv, so
// until g's pump got there, the session knows only that the stream is
// over.
func (g *generation) endErr() error {
	if g.pumped.Load() {
		return g.pumpErr
	}
	select {
	case <-g.kicked:
		return g.kickErr
	default:
	}
	if err := context.Cause(g.sess.Context()); err != nil {
		return err
	}
	return g.sess.state.terminal()
}

// OpenRotating opens a [RotatingSession]: a conversation with the endpoint
// named by in that is carried by one stream after another, as r says (nil
// r means the zero Rotation). It opens the first stream as [Client.Open]
// does and, unlike Open, waits until the service answered it, then runs
// r.Preamble on it: an HTTP error (a [*ResponseError]) or the
// Preamble's error is OpenRotating's. Every successor is opened the same
// way, with the same input.
//
// ctx governs the whole session, as for Open: use one without deadline,
// and call Close (after Finish or CloseSend for a graceful end) for a long
// conversation.
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
		expiryMargin:  r.ExpiryMargin,
		finishQuiet:   r.FinishQuiet,
		maxReconnects: r.MaxReconnects,
		backoff:       r.Backoff,
		preamble:      r.Preamble,
		finish:        r.Finish,
		onRotate:      r.OnRotate,
		onStreamEnd:   r.OnStreamEnd,
		inputDone:     make(chan struct{}),
		inbox:         make(chan rotatorMsg),
		items:         make(chan rotItem),
		replay:        newReplayWindow(r.ReplayWindow, r.ReplayBytes),
	}
	if rs.finishQuiet == 0 {
		rs.finishQuiet = defaultFinishQuiet
	}
	if rs.after == 0 {
		rs.after = defaultRotateAfter
	}
	if rs.expiryMargin == 0 {
		rs.expiryMargin = defaultExpiryMargin
	}
	rs.stable = rs.after / 10
	if rs.after < 0 {
		rs.stable = defaultRotateAfter / 10
	}
	if rs.maxReconnects == 0 {
		rs.maxReconnects = defaultMaxReconnects
	}
	if rs.backoff == nil {
		rs.backoff = defaultReconnectBackoff
	}
	rs.ctx, rs.cancel = context.WithCancelCause(ctx)
	g, err := rs.open(1, time.Now())
	if err != nil {
		rs.cancel(ErrSessionClosed)
		return nil, err
	}
	rs.began = g.started
	g.event.Start = StreamStart{Time: g.started}
	rs.cur, rs.announced = g, g
	rs.gen.Store(1)
	rs.startPump(g, nil)
	go rs.rotate()
	return rs, nil
}

// open opens stream n, runs the preamble on it and waits until the service
// answered it. opened is the time taken just before.
func (rs *RotatingSession) open(n int, opened time.Time) (*generation, error) {
	rs.refreshCredentials(opened)
	sess, err := rs.c.Open(rs.ctx, &rs.in)
	if err != nil {
		return nil, err
	}
	g := &generation{
		n: n, sess: sess, opened: opened,
		drained: make(chan struct{}), kicked: make(chan struct{}),
	}
	if _, err := sess.Response(rs.ctx); err != nil {
		sess.Close()
		return nil, err
	}
	g.started = time.Now()
	if rs.preamble != nil {
		if err := rs.preamble(sess.Context(), sendOn(sess)); err != nil {
			sess.Close()
			return nil, err
		}
	}
	g.due, g.dueWhy = rs.plan(g)
	return g, nil
}

// plan returns when g is to be replaced, and why: at its age, or ahead of
// the expiry of the credentials it was signed with (which the client's
// cache returns until they expire), whichever comes first.
func (rs *RotatingSession) plan(g *generation) (time.Time, RotationReason) {
	var due time.Time
	why := RotationAge
	if rs.after > 0 {
		due = g.opened.Add(rs.after)
	}
	if rs.expiryMargin < 0 {
		return due, why
	}
	creds, err := retrieveFrom(rs.ctx, rs.c.options.Credentials)
	if err != nil || !creds.CanExpire {
		return due, why
	}
	at := creds.Expires.Add(-rs.expiryMargin)
	if half := g.opened.Add(creds.Expires.Sub(g.opened) / 2); at.Before(half) {
		at = half
	}
	if due.IsZero() || at.Before(due) {
		return at, RotationExpiry
	}
	return due, why
}

// refreshCredentials makes the client's credentials cache fetch new
// credentials if the cached ones expire within the margin (at its end
// included: a rotation planned by expiry runs exactly then on a
// testing/synctest clock), so that a successor is not signed with what
// its predecessor is rotating away from.
func (rs *RotatingSession) refreshCredentials(now time.Time) {
	cache, ok := rs.c.options.Credentials.(*aws.CredentialsCache)
	if !ok || rs.expiryMargin < 0 {
		return
	}
	creds, err := cache.Retrieve(rs.ctx)
	if err == nil && creds.CanExpire && !creds.Expires.After(now.Add(rs.expiryMargin)) {
		cache.Invalidate()
	}
}

// sendOn returns the send function given to Preamble and Finish.
func sendOn(s *Session) func(Message) error {
	return func(m Message) error { return s.Send(s.Context(), m) }
}

// generation returns the generation of the stream that Send currently
// sends to: 1 for the first stream, one more for each successor.
func (rs *RotatingSession) generation() int { return int(rs.gen.Load()) }

// Sent returns the number of messages of the call sent so far with Send
// (and completed with SendPart): the sequence number the next one gets.
// Preamble, Finish and replayed messages are not counted.
func (rs *RotatingSession) Sent() int64 { return rs.sent.Load() }

// Response returns the response head of the stream that Send currently
// sends to, as [Session.Response] does; every stream of a RotatingSession
// has been answered before it carries the application's messages, so it
// does not wait unless the stream is being replaced after an early end.
func (rs *RotatingSession) Response(ctx context.Context) (*Response, error) {
	if err := rs.lockSend(ctx); err != nil {
		return nil, err
	}
	s := rs.cur.sess
	rs.unlockSend()
	return s.Response(ctx)
}

// lockSend takes the send turn. It returns ctx's error if ctx ends
// first, and the session's error (closedErr) if it is closed first.
func (rs *RotatingSession) lockSend(ctx context.Context) error {
	if err := rs.sendTurn.take(ctx, rs, rs.ctx.Done(), nil); err != nil {
		if err == errLockStopped {
			return rs.closedErr()
		}
		return err
	}
	return nil
}

// unlockSend releases the send turn.
func (rs *RotatingSession) unlockSend() { rs.sendTurn.release(rs) }

// hostMutex, waitLocked and broadcastLocked make rs the turnHost of its
// two turns.
func (rs *RotatingSession) hostMutex() *sync.Mutex      { return &rs.mu }
func (rs *RotatingSession) waitLocked() <-chan struct{} { return rs.moved.waitLocked() }
func (rs *RotatingSession) broadcastLocked()            { rs.moved.wakeLocked() }

// setPartOpen records whether a message begun with SendPart is open,
// waking the rotator waiting for a message boundary when it completes.
// The send turn is held.
func (rs *RotatingSession) setPartOpen(open bool) {
	rs.mu.Lock()
	rs.partOpen = open
	if !open {
		rs.moved.wakeLocked()
	}
	rs.mu.Unlock()
}

// Close ends the session at once: every stream is aborted (use Finish for
// a graceful end), pending calls return [ErrSessionClosed], and the
// session's goroutines exit. It does not wait for them. Close is safe to
// call more than once and concurrently; it always returns nil.
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

// settle records what follows g, once: next, or nothing.
func (rs *RotatingSession) settle(g, next *generation) bool {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	if g.settled.Load() {
		return false
	}
	g.next = next
	g.settled.Store(true)
	rs.moved.wakeLocked()
	return true
}

// setStopped records that the rotator exited.
func (rs *RotatingSession) setStopped() {
	rs.mu.Lock()
	rs.stopped.Store(true)
	rs.moved.wakeLocked()
	rs.mu.Unlock()
}

// A rotatorMsg is what the rotator's inbox carries: a Rotate call's
// request, or (failed set) a stream that failed while it finished.
type rotatorMsg struct {
	rotate *rotateRequest
	failed *generation
}

// errRotatorStopped is returned by toRotator when the rotator has exited.
var errRotatorStopped = errors.New("bidi: rotator stopped")

// toRotator hands m to the rotator. It returns nil once the rotator took
// it; errRotatorStopped if the rotator exited first; ctx's error, or the
// session's (closedErr) once it is closed, if those end first.
func (rs *RotatingSession) toRotator(ctx context.Context, m rotatorMsg) error {
	for {
		rs.mu.Lock()
		stopped := rs.stopped.Load()
		var moved <-chan struct{} // closed by setStopped, among others
		if !stopped {
			moved = rs.moved.waitLocked()
		}
		rs.mu.Unlock()
		if stopped {
			return errRotatorStopped
		}
		select {
		case rs.inbox <- m:
			return nil
		case <-moved:
		case <-rs.ctx.Done():
			return rs.closedErr()
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// setPumped records err, the end g's pump saw, as the verdict on g.
func (rs *RotatingSession) setPumped(g *generation, err error) {
	g.pumpErr = err
	rs.mu.Lock()
	g.pumped.Store(true)
	rs.moved.wakeLocked()
	rs.mu.Unlock()
}

// waitUntil waits until done reports true (a flag set under mu, with
// moved broadcast). It returns nil then; ctx's error if ctx ends first;
// errLockStopped if stop1 or stop2 (either may be nil) is closed first.
func (rs *RotatingSession) waitUntil(ctx context.Context, done *atomic.Bool, stop1, stop2 <-chan struct{}) error {
	for !done.Load() {
		rs.mu.Lock()
		if done.Load() {
			rs.mu.Unlock()
			break
		}
		wait := rs.moved.waitLocked()
		rs.mu.Unlock()
		if err := awaitWake(ctx, wait, stop1, stop2); err != nil {
			return err
		}
	}
	return nil
}

// giveUp records the terminal error and that nothing follows g.
func (rs *RotatingSession) giveUp(g *generation, err error) {
	rs.mu.Lock()
	rs.terminal = err
	rs.mu.Unlock()
	rs.settle(g, nil)
}
