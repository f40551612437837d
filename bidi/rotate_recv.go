package bidi

import (
	"context"
	"errors"
	"io"
	"iter"
)

// A rotItem is what a stream's pump hands to Recv: a message, a
// non-terminal error (an oversized message), or the stream's end (end
// set, err why).
type rotItem struct {
	g   *generation
	m   Message
	err error
	end bool
}

// startPump counts g among the streams Recv has to see end and starts
// its pump; after, if not nil, holds the pump back until it is closed
// (the predecessor's pump finished, after an early end).
func (rs *RotatingSession) startPump(g *generation, after <-chan struct{}) {
	rs.mu.Lock()
	rs.pumps++
	rs.mu.Unlock()
	go rs.pump(g, after)
}

// pump reads g's messages and hands them to Recv, in order, then its end.
// It exits once it handed over the end, or when the session closes.
func (rs *RotatingSession) pump(g *generation, after <-chan struct{}) {
	defer close(g.drained)
	if after != nil {
		select {
		case <-after:
		case <-rs.ctx.Done():
			return
		}
	}
	for {
		m, err := g.sess.Recv(rs.ctx)
		it := rotItem{g: g, m: m, err: err}
		it.end = err != nil && !isTooLarge(err)
		if it.end && rs.ctx.Err() == nil {
			// Tell the rotator now: the session's context may end
			// later than its Recv reports the end.
			if err == io.EOF {
				err = ErrStreamEnded
			}
			rs.setPumped(g, err)
			g.kick(err)
		}
		select {
		case rs.items <- it:
		case <-rs.ctx.Done():
			return
		}
		if it.end {
			return
		}
	}
}

// isTooLarge reports whether err is Recv's non-terminal error.
func isTooLarge(err error) bool {
	var tooLarge *MessageTooLargeError
	return errors.As(err, &tooLarge)
}

// Recv returns the next message from the model, as [Session.Recv] does,
// from whichever stream of the call delivered it (see [RotatingSession]
// for the order; RecvGeneration tells which). Rotation.OnRotate and
// OnStreamEnd are called inside it. The end of a stream that was replaced
// is not an error: it is reported to OnStreamEnd (and, after an early
// end, to OnRotate). Recv returns io.EOF after CloseSend or Finish once
// every stream ended and the last one cleanly; the error that ended the
// last stream if it did not; the last failure, wrapped with the number of reconnects made, if a stream that ended
// early could not be replaced; [ErrSessionClosed] after Close. These are
// terminal. A [*MessageTooLargeError] is not. ctx bounds only this call.
func (rs *RotatingSession) Recv(ctx context.Context) (Message, error) {
	if err := rs.recvTurn.take(ctx, rs, nil, nil); err != nil {
		return Message{}, err
	}
	defer rs.recvTurn.release(rs)
	for {
		if rs.recvErr != nil {
			return Message{}, rs.recvErr
		}
		if rs.ctx.Err() != nil {
			return Message{}, rs.closedErr()
		}
		// settled is closed when rs.ended may be settled: then look again.
		settled, err := rs.finalLocked()
		if err != nil {
			rs.recvErr = err
			return Message{}, err
		}
		select {
		case it := <-rs.items:
			rs.announce(it.g)
			if !it.end {
				rs.recvGen = it.g.n
				return it.m, it.err
			}
			rs.streamEnded(it)
		case <-settled:
		case <-ctx.Done():
			return Message{}, ctx.Err()
		case <-rs.ctx.Done():
			return Message{}, rs.closedErr()
		}
	}
}

// RecvGeneration returns the generation of the stream that delivered the
// message Recv returned last (0 before the first). Call it from the
// receiving goroutine, between calls of Recv.
func (rs *RotatingSession) RecvGeneration() int { return rs.recvGen }

// announce calls OnRotate for every rotation up to g not yet reported.
// The receive turn is held.
func (rs *RotatingSession) announce(g *generation) {
	for rs.announced.n < g.n {
		prev, next := rs.announced, rs.announced.next // settled: a newer stream exists
		rs.announced = next
		if next.event.Reason == RotationEarlyEnd && prev.pumped.Load() && prev.pumpErr != nil {
			// The reason the old stream ended, as its Recv returned it:
			// when the rotation was decided, its session knew only that
			// the stream was over (Recv decodes the reason).
			next.event.Err = prev.pumpErr
		}
		if rs.onRotate != nil {
			rs.onRotate(next.event)
		}
	}
}

// streamEnded takes the end of a stream: it releases it and reports it
// to OnStreamEnd. The receive turn is held.
func (rs *RotatingSession) streamEnded(it rotItem) {
	it.g.sess.Close()
	rs.mu.Lock()
	rs.pumps--
	rs.mu.Unlock()
	if rs.ended == nil || it.g.n > rs.ended.n {
		rs.ended = it.g
		it.g.recvEnd = it.err
	}
	if rs.onStreamEnd != nil {
		err := it.err
		if err == io.EOF {
			err = nil
		}
		rs.onStreamEnd(it.g.n, err)
	}
}

// finalLocked returns Recv's terminal error once the call is over: the
// newest stream ended, nothing follows it, and every older one ended too.
// While it is not known what follows the newest stream whose end Recv
// took, it returns instead the channel that closes when that may have
// changed; it looks and takes that channel under mu, which settling
// holds, so that a stream settled in between cannot leave Recv waiting
// for items that never come. Otherwise (no end taken yet, a successor
// follows, or a pump has not handed over its end) the next item wakes
// Recv, and it returns neither. The receive turn is held.
func (rs *RotatingSession) finalLocked() (settled <-chan struct{}, err error) {
	g := rs.ended
	if g == nil || g.settled.Load() && g.next != nil {
		return nil, nil // next is read-only once settled is set
	}
	rs.mu.Lock()
	defer rs.mu.Unlock()
	switch {
	case !g.settled.Load():
		return rs.moved.waitLocked(), nil
	case g.next != nil, rs.pumps > 0:
		return nil, nil
	case rs.terminal != nil:
		return nil, withEndReason(rs.terminal, g.recvEnd)
	}
	return nil, g.recvEnd
}

// Messages returns an iterator over the messages received with Recv(ctx),
// as [Session.Messages] does: it ends after the last message at a clean
// end; any other error is yielded once and ends it. It is single-use.
func (rs *RotatingSession) Messages(ctx context.Context) iter.Seq2[Message, error] {
	return seqOf(ctx, rs.Recv)
}

// withEndReason returns a *reconnectError whose cause is the stand-in for
// a stream's end (its session knew only that the stream was over when the
// rotator gave up) with the reason Recv decoded for that stream, end;
// any other err as it is.
func withEndReason(err, end error) error {
	var re *reconnectError
	if !errors.As(err, &re) || !errors.Is(re.Err, ErrStreamEnded) || end == nil || end == io.EOF {
		return err
	}
	return &reconnectError{Reconnects: re.Reconnects, Err: end}
}

// waitWhile returns the channel that the session's next broadcast (moved)
// closes if cond holds under rs.mu, else nil: a waiter for the state cond
// describes to change then looks again.
func (rs *RotatingSession) waitWhile(cond func() bool) <-chan struct{} {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	if !cond() {
		return nil
	}
	return rs.moved.waitLocked()
}
