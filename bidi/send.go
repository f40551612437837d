package bidi

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"unicode/utf8"

	"github.com/sagemaker-bidi/sagemaker-bidi/bidi/internal/transport"
	"github.com/sagemaker-bidi/sagemaker-bidi/internal/wire"
)

// errMessageInProgress is returned by Send and CloseSend while a message
// begun with SendPart (a part with Complete unset) has not been completed:
// its parts and another message's must not interleave, and the request
// must not end inside a message. Complete the message with SendPart, or
// abandon the session with Close.
var errMessageInProgress = errors.New("bidi: a message begun with SendPart is not complete")

// sendInterruptedError is the terminal error of a session whose Send or
// SendPart stopped after some parts of its message had been queued: its
// context ended, or a later part could not be encoded (for example because
// Options.PaddingSource failed). A message cannot be withdrawn halfway, and
// the next message must not be joined to its first half, so the session is
// aborted. It unwraps to the cause (the context's error, or the encoding
// error).
//
// If the stream was already over when that happened (the service had
// ended it, or it had failed), nothing more of the message could reach the
// model anyway: Send then returns the reason the stream ended, as it does
// after any failure, and does not abort the session, so Recv still
// returns the messages received before the end, then that reason.
type sendInterruptedError struct {
	Err error
}

// Error describes the interruption and its cause.
func (e *sendInterruptedError) Error() string {
	return "bidi: Send interrupted after part of its message was sent; session aborted: " + e.Err.Error()
}

// Unwrap returns the error that interrupted Send.
func (e *sendInterruptedError) Unwrap() error { return e.Err }

// Send sends one message to the model and returns once it is queued:
// the queue is small (64 KiB, or one larger part), so Send blocks while
// the service is not reading; ctx bounds that wait. A model that answers
// while it reads (an echo, say) stops reading once its unread replies fill
// the response's flow-control window, so read with Recv while sending
// large messages: a Send whose ctx ends in that state says so. m.Data is
// copied.
// Messages larger than Options.MaxPartSize go out as one fragmented
// message (see [Session.SendPart]); every part is padded per
// Options.Padding.
//
// Errors: an invalid message ([*InputValidationError]) or a ctx that
// ends before the message is queued leaves the session usable. A failure
// after part of a fragmented message was queued cannot be undone: the
// session is aborted with an error matching [ErrSendInterrupted]. After the stream is
// over, Send returns why: [ErrStreamEnded] for a clean end, the typed
// cause after a failure (a [*ResponseError], a [*ModelStreamError], ...),
// an error after CloseSend, [ErrSessionClosed] after Close.
//
// Send may be called from several goroutines: calls are serialized, and
// one message's parts never interleave with another's.
func (s *Session) Send(ctx context.Context, m Message) error {
	if err := s.lockSendable(ctx); err != nil {
		return err
	}
	defer s.unlockSend()
	if s.partOpen {
		return errMessageInProgress
	}
	if err := checkType("Message.Type", m.Type); err != nil {
		return err
	}
	if m.Type == DataTypeUTF8 && !utf8.Valid(m.Data) {
		return invalidUTF8("Message.Data")
	}
	return s.sendSplit(ctx, m, true)
}

// SendPart sends one raw part: a fragment of a message, for callers that
// produce one large message piece by piece and need it to reach the model
// whole. The container sees the message only once it is complete, so live
// audio is sent as one message per frame with Send instead. Parts with
// Complete unset continue the current message; the part with Complete set
// ends it, and until then Send returns an error. A part
// larger than Options.MaxPartSize is split, its last piece keeping
// p.Complete. The DataType of the first part is the message's type.
// Blocking, context and error behaviour are those of Send: a call that
// fails before queuing any of p leaves the message as it was, and p may
// be sent again; one that fails after queuing a piece of p aborts the
// session with an error matching [ErrSendInterrupted]. CloseSend refuses to end the
// request inside a message (an error).
func (s *Session) SendPart(ctx context.Context, p Part) error {
	if err := s.lockSendable(ctx); err != nil {
		return err
	}
	defer s.unlockSend()
	if err := checkType("Part.Type", p.Type); err != nil {
		return err
	}
	if !s.partOpen {
		s.partType, s.partText = p.Type, utf8Stream{}
	}
	text := s.partText
	if s.partType == DataTypeUTF8 && !text.check(p.Data, p.Complete) {
		return invalidUTF8("Part.Data")
	}
	if err := s.sendSplit(ctx, Message{Data: p.Data, Type: p.Type}, p.Complete); err != nil {
		return err
	}
	s.partOpen, s.partText = !p.Complete, text
	return nil
}

// CloseSend ends the request side of the stream: the signed end frame
// follows the queued parts, after which the transport ends the HTTP/2
// stream's request side (END_STREAM). Recv keeps working and returns the
// model's remaining messages, then io.EOF. On SageMaker the end of the
// input closes the container's WebSocket, so replies the model has not
// sent yet are lost: to end without losing them, use [Session.Finish]. CloseSend waits for a
// concurrent Send to return, but not for the end frame to be written.
// Calling it again does nothing.
//
// While a message begun with SendPart is incomplete, CloseSend returns
// an error and sends nothing: the model would receive a
// truncated message. After the session failed it returns the cause, as
// Send does, a typed error such as [*ModelStreamError]; it returns nil if
// the service had already ended the stream cleanly, or ended it with a
// reason that Recv has not reached yet (Recv then reports the reason, and
// later calls of CloseSend and Send return it; see [Session]).
func (s *Session) CloseSend() error {
	// No context bounds this wait: a pending Send returns promptly once the
	// session is over, and otherwise finishes its message first.
	s.pipe.takeTurn(context.Background(), &s.sendTurn, nil, nil) // cannot fail
	defer s.unlockSend()
	if s.sendClosed {
		return nil
	}
	if err := s.sendable(); err != nil {
		if errors.Is(err, ErrStreamEnded) {
			return nil
		}
		return err
	}
	if s.partOpen {
		return errMessageInProgress
	}
	s.sendClosed = true
	s.pipe.end()
	return nil
}

// lockSendable takes the send turn for Send and SendPart, waiting while
// ctx allows and the send side is not over, and keeps it only if the
// session can send (see sendable): on an error the turn is not held.
func (s *Session) lockSendable(ctx context.Context) error {
	if err := s.pipe.takeTurn(ctx, &s.sendTurn, s.state.over, s.ctx.Done()); err != nil {
		if err == errLockStopped {
			return s.sendCause()
		}
		return err
	}
	if err := s.sendable(); err != nil {
		s.unlockSend()
		return err
	}
	return nil
}

func (s *Session) unlockSend() { s.pipe.releaseTurn(&s.sendTurn) }

// sendable returns why Send cannot proceed, or nil: it decides from the
// session's phase (a send side over, in phaseSendOver or phaseEnded,
// reports why). The session's context counts as phaseEnded as soon as it
// is done: the hook that moves the phase when the context given to Open
// ends runs just after. The send turn is held.
func (s *Session) sendable() error {
	switch {
	case s.state.userClosed.Load():
		return ErrSessionClosed
	case s.sendClosed:
		return errSendClosed
	case s.state.sendOver(), s.ctx.Err() != nil:
		return s.sendCause()
	}
	return nil
}

// sendCause returns the error that ended the send side.
func (s *Session) sendCause() error {
	if s.state.userClosed.Load() {
		return ErrSessionClosed
	}
	err := s.state.terminal()
	if err == nil {
		err = s.sessionErr()
	}
	return err
}

// sendSplit sends m as parts of at most Options.MaxPartSize bytes (see
// splitter); its last part is Complete only if complete is set. The send
// turn is held. A message that fits one part (the usual one) goes
// straight to sendPart, so that the splitter is not on the stack under
// every signature (see "Stack depth" in docs/design.md).
func (s *Session) sendSplit(ctx context.Context, m Message, complete bool) error {
	s.stallMark = stallMark{}
	if len(m.Data) <= s.maxPart {
		return s.sendPart(ctx, Part{Data: m.Data, Type: m.Type, Complete: complete}, false)
	}
	return s.sendParts(ctx, m, complete)
}

// sendParts is sendSplit for a message larger than one part.
func (s *Session) sendParts(ctx context.Context, m Message, complete bool) error {
	sp := newSplitter(m, s.maxPart).withCut(s.partCut)
	first := true
	for p, ok := sp.next(); ok; p, ok = sp.next() {
		p.Complete = p.Complete && complete
		if err := s.sendPart(ctx, p, !first); err != nil {
			return err
		}
		first = false
	}
	return nil
}

// sendPart encodes one part and queues it for the transport, waiting for
// room in the queue. midMessage tells whether earlier parts of the same
// message were queued by this call. The send turn is held.
func (s *Session) sendPart(ctx context.Context, p Part, midMessage bool) error {
	if err := ctx.Err(); err != nil {
		// Between two parts of a stalled Send (the window opened for
		// a moment), the stall explains the end as it does in the wait.
		return s.interrupted(s.flowStall(err), midMessage)
	}
	if s.state.sendOver() {
		// The stream is over: nothing more reaches the model. Report why,
		// leaving the session, and the messages Recv has yet to return,
		// alone.
		return s.sendCause()
	}
	// encodePart fills part in place (a returned wire.Part would take
	// its size again in this frame) and the wait for room is apart
	// (sendPartWait): this frame is under every signature (see "Stack
	// depth" in docs/design.md).
	var part wire.Part
	if err := s.encodePart(ctx, p, &part); err != nil {
		if err == errSendOver {
			return s.sendCause()
		}
		return s.interrupted(err, midMessage)
	}
	full, err := s.pipe.enqueue(&part)
	if err != nil || full != nil {
		return s.sendPartWait(ctx, &part, full, err, midMessage)
	}
	s.partQueued(len(p.Data))
	return nil
}

// partQueued records a part of n bytes queued: the part is copied into
// the queue, so a large padding buffer can go back to the pool.
func (s *Session) partQueued(n int) {
	s.obs.sent(n)
	s.pad = s.pad[:0]
	padPool.Release(&s.pad, &s.padh)
}

// sendPartWait is sendPart once the queue refused part, with err or
// because it was full: it waits for room and queues it, or returns why
// it cannot. It is apart from sendPart so that the fast path, which
// goes on to sign (the deepest of Send), does not carry the frame of the
// wait.
func (s *Session) sendPartWait(ctx context.Context, part *wire.Part, full <-chan struct{}, err error, midMessage bool) error {
	n := len(part.Bytes)
	for {
		switch {
		case err != nil:
			select {
			case <-s.state.over:
				return s.sendCause()
			default:
				return s.interrupted(wrapEncodeError(err), midMessage)
			}
		case full == nil:
			s.partQueued(n)
			return nil
		}
		if !s.stallMark.waited {
			s.stallMark = s.markStalls()
		}
		if h := testHookSendWait.Load(); h != nil {
			(*h)(s)
		}
		select {
		case <-full:
		case <-ctx.Done():
			return s.interrupted(s.flowStall(ctx.Err()), midMessage)
		case <-s.state.over:
			return s.sendCause()
		case <-s.ctx.Done():
			return s.sendCause()
		}
		full, err = s.pipe.enqueue(part)
	}
}

// flowStall returns err, the end of a Send's wait for queue space,
// explained when the wait could not have ended: HTTP/2 flow control
// held the request back (the model took no more) while replies that
// nobody has read fill the response's window, as with a model that
// echoes and a caller that sends without calling Recv.
//
// The window may open for a moment (the model reads a little more, or a
// WINDOW_UPDATE comes late) just as the wait ends, so the stall is read
// from what the Send saw when it first waited for queue space (stallMark:
// the window used up then, or the engine's count of the stream's stalls
// moved since; all of them for a stream made after that, the open
// retried), from the window now, and from half a queue still waiting for
// the writer; replies must be unread now.
func (s *Session) flowStall(err error) error {
	a := s.cur.Load()
	if a == nil || a.st == nil {
		return err
	}
	st := a.st
	unread := st.Buffered()
	stalled := s.stallMark.since(st) || st.SendBlocked() || s.pipe.backlog() >= sendQueueBytes/2
	if unread == 0 || !stalled {
		return err
	}
	return fmt.Errorf("bidi: Send waited on HTTP/2 flow control: the model takes no more while %d bytes of its replies are unread (call Recv while sending): %w", unread, err)
}

// stallMark is what a Send saw of flow control when it first waited for
// room in the send queue: the current attempt's stream (nil if it had
// none yet), whether its request was held back then, and the engine's
// count of its stalls. It is taken off Send's fast path: a Send whose
// parts never fill the queue looks at no engine state.
type stallMark struct {
	waited  bool
	st      *transport.Stream
	blocked bool
	n       uint32
}

// markStalls returns the stallMark of a Send that waits now.
func (s *Session) markStalls() stallMark {
	m := stallMark{waited: true}
	if a := s.cur.Load(); a != nil && a.st != nil {
		m.st, m.blocked, m.n = a.st, a.st.SendBlocked(), a.st.SendStalls()
	}
	return m
}

// since reports whether, by the mark, st's request was held back by flow
// control at some time since the Send first waited: blocked then, or a
// stall counted after (any of a stream made after the mark). A Send that
// never waited has no such time.
func (m stallMark) since(st *transport.Stream) bool {
	switch {
	case !m.waited:
		return false
	case m.st != st:
		return st.SendStalls() != 0
	}
	return m.blocked || st.SendStalls() != m.n
}

// testHookSendWait, if set (by tests), is called by Send when it begins
// to wait for room in the send queue.
var testHookSendWait atomic.Pointer[func(*Session)]

// interrupted handles a part that could not be queued because of err (ctx
// ended, or the part could not be encoded): the session survives unless
// earlier parts of the same message are already on their way, which would
// leave half a message on the wire for the next one to be joined to. If
// the send side has already failed (the stream is over), the half-sent
// message cannot reach the model: the reason is returned and the session
// is left alone, so that neither the reason nor the undelivered messages
// are lost.
func (s *Session) interrupted(err error, midMessage bool) error {
	if !midMessage {
		return err
	}
	ie := &sendInterruptedError{Err: err}
	// Atomic with the reader recording why the stream ended: if it did
	// first, that reason stands and the session is left alone.
	if !s.end(ie, endSession, endIfOpen) {
		return s.sendCause()
	}
	return ie
}

// errSendOver is returned by encodePart when it stopped waiting for the
// padding source because the session or its send side ended; sendPart
// then reports the cause.
var errSendOver = errors.New("bidi: send side over")

func wrapEncodeError(err error) error {
	if err == nil {
		return nil
	}
	return fmt.Errorf("bidi: encoding part: %w", err)
}

// encodePart sets *dst to the PayloadPart for p: DataType,
// CompletionState and padding (in s.pad), p.Data as payload. It
// allocates nothing once the session's padding buffer has grown. A wait
// for the client's shared padding source ends with ctx's error, or with
// errSendOver when the session or its send side ends first.
func (s *Session) encodePart(ctx context.Context, p Part, dst *wire.Part) error {
	dt, cs := wire.DataTypeBinary, wire.CompletionPartial
	if p.Type == DataTypeUTF8 {
		dt = wire.DataTypeUTF8
	}
	if p.Complete {
		cs = wire.CompletionComplete
	}
	var pad []byte
	if n := padLen(s.opts.Padding, len(p.Data)); n > 0 {
		if s.padSrc == nil {
			s.padSrc = s.c.paddingSource(s)
		}
		var err error
		if s.pad == nil {
			s.pad, s.padh = padPool.Get()
		}
		s.pad, err = fillPadding(ctx, s.pad[:0], n, s.padSrc)
		if err != nil {
			return err
		}
		pad = s.pad
	}
	*dst = wire.Part{Bytes: p.Data, DataType: dt, CompletionState: cs, Padding: pad}
	return nil
}

// paddingSource returns session s's source of padding bytes: for
// Options.PaddingSource, a [sharedPad] whose reads the client's sessions
// take turns at; or by default a [pooledPad], the shared ChaCha8
// generators (no system call per part, no turns, nothing held per
// session).
func (c *Client) paddingSource(s *Session) padSource {
	if src := c.options.PaddingSource; src != nil {
		return &sharedPad{lock: &c.padLock, r: src, s: s}
	}
	return pooledPad{}
}
