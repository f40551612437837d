package bidi

import (
	"context"
	"errors"
	"time"
)

// Send sends one message to the model on the current stream, as
// [Session.Send] does, and numbers it (see Sent). A message is sent whole
// on one stream: the switch to a successor waits for a Send in progress.
// If the current stream has ended early, Send waits for its successor
// (bounded by ctx) and sends the message there, after the replay; it
// returns the session's terminal error (the last stream's failure, wrapped with the number of reconnects made) if there is
// none. An invalid message ([*InputValidationError]) is refused without
// harm to the stream. After CloseSend or Finish it returns
// an error, after Close [ErrSessionClosed], while a message begun
// with SendPart is incomplete, an error.
func (rs *RotatingSession) Send(ctx context.Context, m Message) error {
	return rs.send(ctx, sendOp{m: m})
}

// SendPart sends one raw part of a message on the current stream, as
// [Session.SendPart] does. The stream does not change inside a message:
// a rotation waits for its COMPLETE part. If the stream ends early before
// the message's first part, SendPart waits for the successor and sends
// it there, as Send does; if it ends inside the message, the message is
// lost and SendPart returns the stream's error (the next part, with or
// without Complete, starts a new message on the successor). Messages sent
// with SendPart are numbered when complete but not kept for replay.
func (rs *RotatingSession) SendPart(ctx context.Context, p Part) error {
	return rs.send(ctx, sendOp{p: p, isPart: true})
}

// A sendOp is what Send or SendPart sends: a message, or a part.
type sendOp struct {
	m      Message
	p      Part
	isPart bool
}

// on sends the operation on s.
func (op *sendOp) on(ctx context.Context, s *Session) error {
	if op.isPart {
		return s.SendPart(ctx, op.p)
	}
	return s.Send(ctx, op.m)
}

// sentOp records a successful operation: it numbers a message (a part
// message once complete), keeps it for replay, and tracks the message
// open with SendPart. The send turn is held.
func (rs *RotatingSession) sentOp(op *sendOp) {
	if !op.isPart {
		rs.record(op.m)
		return
	}
	rs.sentBytes += int64(len(op.p.Data))
	if op.p.Complete {
		rs.sent.Add(1)
	}
	if rs.partOpen == op.p.Complete {
		rs.setPartOpen(!op.p.Complete)
	}
}

// send runs op on the current stream, holding the send turn, and records
// it. A failure of the stream makes it wait for the successor and try
// again, unless part of a message is already on the failed stream.
func (rs *RotatingSession) send(ctx context.Context, op sendOp) error {
	for {
		if err := rs.lockSend(ctx); err != nil {
			return err
		}
		if rs.sendClosed {
			rs.unlockSend()
			return errSendClosed
		}
		if !op.isPart && rs.partOpen {
			rs.unlockSend()
			return errMessageInProgress
		}
		g := rs.cur
		err := op.on(ctx, g.sess)
		if err == nil {
			rs.sentOp(&op)
			rs.unlockSend()
			return nil
		}
		var ive *InputValidationError
		midMessage := rs.partOpen
		streamOver := rs.ctx.Err() == nil && ctx.Err() == nil && !errors.As(err, &ive) && !errors.Is(err, errMessageInProgress)
		if midMessage && streamOver {
			// The message cannot be completed on another stream.
			rs.setPartOpen(false)
		}
		if streamOver {
			// The stream is over (or broken). Tell the rotator before
			// letting go of the turn, so that a rotation taking it next
			// sees the stream as ended, not as one to finish cleanly.
			g.kick(err)
		}
		rs.unlockSend()
		switch {
		case rs.ctx.Err() != nil:
			return rs.closedErr()
		case ctx.Err() != nil, errors.As(err, &ive), errors.Is(err, errMessageInProgress):
			return err
		}
		// Wait for the successor.
		if midMessage {
			return err
		}
		if err := rs.waitUntil(ctx, &g.settled, rs.inputDone, rs.ctx.Done()); err != nil {
			switch {
			case err != errLockStopped:
				return err
			case rs.ctx.Err() != nil:
				return rs.closedErr()
			}
			return errSendClosed
		}
		if g.next == nil {
			if t := rs.terminalErr(); t != nil {
				return t
			}
			if rs.inputEnded() {
				return errSendClosed
			}
			return err
		}
	}
}

// record numbers a message that Send sent and keeps it for replay. The
// send turn is held.
func (rs *RotatingSession) record(m Message) {
	seq := rs.sent.Load()
	if rs.replay != nil {
		rs.replay.add(seq, rs.sentBytes, time.Now(), rs.cur.n, m)
	}
	rs.sentBytes += int64(len(m.Data))
	rs.sent.Store(seq + 1)
}

func (rs *RotatingSession) inputEnded() bool { return isClosed(rs.inputDone) }

// endInput ends the call's input (holding the send turn): no stream is
// opened after it, and a rotation in progress is abandoned. It returns
// the current stream, also when the input had already ended. With
// finishing set (Finish) and replay on, the current stream counts among
// the streams finishing (rs.finishers) from the moment the input ends,
// so that the rotator stays for its verdict (settleOlds); ended reports
// whether this call ended the input, and the caller then owes
// finishedCurrent.
func (rs *RotatingSession) endInput(ctx context.Context, finishing bool) (g *generation, ended bool, err error) {
	if err := rs.lockSend(ctx); err != nil {
		return nil, false, err
	}
	defer rs.unlockSend()
	if rs.partOpen {
		return nil, false, errMessageInProgress
	}
	if rs.sendClosed {
		return rs.cur, false, nil
	}
	rs.sendClosed = true
	if finishing && rs.replay != nil {
		rs.mu.Lock()
		rs.finishers++
		rs.mu.Unlock()
	}
	close(rs.inputDone)
	if rs.replay == nil {
		// With replay on, the rotator settles the last stream once the
		// older ones finished: one of them may fail and need a successor
		// (settleOlds).
		rs.settle(rs.cur, nil)
	}
	return rs.cur, true, nil
}

// CloseSend ends the input at once: the current stream gets its end frame
// (as [Session.CloseSend]), no successor is opened after it, and a
// rotation in progress is abandoned; replies the model had not sent yet
// may be lost (use Finish to avoid that). Recv then returns the remaining
// replies and io.EOF, or the error that ended the last stream. It returns
// the current stream's CloseSend error, such as the reason the stream
// ended early, or an error inside a message begun with
// SendPart. Calling it again does nothing.
func (rs *RotatingSession) CloseSend() error {
	g, _, err := rs.endInput(context.Background(), false)
	if err != nil {
		return err
	}
	return g.sess.CloseSend()
}

// Finish ends the call without losing the model's last answers, with the
// promise of [Session.Finish], for every stream of the call: it ends the
// input (a rotation in progress is abandoned, and no stream is opened
// after it but to replace one that fails while it finishes), finishes
// the current stream as Session.Finish(ctx, quiet) does, and waits until
// every stream rotated away from has ended too (those finish on their
// own, Rotation.FinishQuiet after their model's last reply), and with
// replay on for the successor of one that failed meanwhile, the current
// one included (see Rotation.ReplayWindow). Another goroutine must keep
// reading with Recv meanwhile; once Finish returned, Recv returns the
// remaining replies and then io.EOF (or why the last stream ended).
//
// It returns nil when every stream ended cleanly or with a normal closure,
// else the current stream's error, or the first error that ended an older
// one that was not replaced; the error the rotator gave up with if a
// replacement failed; ctx's error if ctx ends first; an error inside a
// message begun with SendPart; the session's error after Close.
func (rs *RotatingSession) Finish(ctx context.Context, quiet time.Duration) error {
	g, ended, err := rs.endInput(ctx, true)
	if err != nil {
		return err
	}
	err = g.sess.Finish(ctx, quiet)
	if ended && rs.replay != nil {
		// The current stream finishes as the others do: one that failed
		// with messages unanswered gets a successor (settleOlds), which
		// finishes in turn.
		rs.finishedCurrent(ctx, g)
	}
	if rs.ctx.Err() != nil {
		return rs.closedErr()
	}
	if errors.Is(err, ErrSessionClosed) {
		// Recv took the stream's end and released it: its verdict is
		// why it ended.
		err = finishError(context.Cause(g.sess.Context()))
	}
	if ctx.Err() != nil {
		return err
	}
	// Older streams still finishing precede g in the chain from the one
	// Recv reads; wait for each. With replay on, the rotator stays until
	// they finished (settleOlds): one that failed with messages
	// unanswered got a successor, whose end counts instead of its own.
	if rs.replay != nil {
		switch err := rs.waitUntil(ctx, &rs.stopped, rs.ctx.Done(), nil); {
		case err == errLockStopped:
			return rs.closedErr()
		case err != nil:
			return err
		}
		if t := rs.terminalErr(); t != nil {
			return t
		}
		if g.recovered { // set by the rotator, which has stopped
			err = nil // its successor finished in its place
		}
	}
	for _, old := range rs.finishing(g) {
		select {
		case <-old.sess.Context().Done():
			if oe := finishError(context.Cause(old.sess.Context())); oe != nil && err == nil && !old.recovered {
				err = oe
			}
		case <-ctx.Done():
			return ctx.Err()
		case <-rs.ctx.Done():
			return rs.closedErr()
		}
	}
	return err
}

// Rotate replaces the current stream now, as a planned rotation at
// Rotation.After does (make-before-break, RotationRequested), for an
// application that knows a good moment (a pause in the audio, say). It
// returns once sends go to the successor; if a rotation happened since
// the call began, that one counts. The successor is due for its own
// rotation at its age, as any stream. It returns ctx's error if ctx ends
// first (the rotation may still happen), an error after CloseSend
// or Finish, the terminal error if the stream ended and could not be
// replaced, and the session's error after Close.
func (rs *RotatingSession) Rotate(ctx context.Context) error {
	req := &rotateRequest{gen: int(rs.gen.Load()), done: make(chan error, 1)}
	switch err := rs.toRotator(ctx, rotatorMsg{rotate: req}); {
	case err == errRotatorStopped:
		return rs.stopErr()
	case err != nil:
		return err
	}
	select {
	case err := <-req.done:
		return err
	case <-rs.ctx.Done():
		return rs.closedErr()
	case <-ctx.Done():
		return ctx.Err()
	}
}

// A rotateRequest is Rotate's request: rotate the stream of generation
// gen, and say how it went on done.
type rotateRequest struct {
	gen  int
	done chan error // buffered
}
