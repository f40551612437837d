package bidi

import (
	"context"
	"errors"
	"sync/atomic"
	"time"

	"github.com/sagemaker-bidi/sagemaker-bidi/internal/backoff"
)

// rotate is the session's goroutine: it waits for the current stream to
// be due (by age or credentials), for a Rotate request or for the stream
// to end, opens its successor and installs it, until the session closes,
// its input ends, or reconnects are exhausted.
func (rs *RotatingSession) rotate() {
	defer rs.setStopped()
	failures := 0              // reconnects in a row, the one under way included
	var pending *rotateRequest // the Rotate being served
	var carried *generation    // a failed old stream not served when the input ended
	defer func() { rs.afterInput(carried) }()
	answer := func(err error) {
		if pending != nil {
			pending.done <- err
			pending = nil
		}
	}
	defer func() {
		if pending != nil {
			answer(rs.stopErr())
		}
	}()
	for {
		g := rs.cur // only this goroutine changes cur
		var (
			due   <-chan time.Time
			timer *time.Timer
		)
		if !g.due.IsZero() {
			timer = time.NewTimer(time.Until(g.due))
			due = timer.C
		}
		var reason RotationReason // of a planned rotation
		var failed *generation    // an older stream that failed while finishing
		select {
		case <-rs.ctx.Done():
		case <-rs.inputDone:
		case <-due:
			reason = g.dueWhy
		case m := <-rs.inbox:
			switch {
			case m.failed != nil && !rs.uncovered(m.failed):
				stopTimer(timer)
				continue
			case m.failed != nil:
				failed, reason = m.failed, RotationOverlapFault
			case m.rotate.gen < g.n: // rotated since Rotate was called
				m.rotate.done <- nil
				stopTimer(timer)
				continue
			default:
				pending, reason = m.rotate, RotationRequested
			}
		case <-g.sess.Context().Done():
		case <-g.sess.state.over: // its response stream is over
		case <-g.kicked:
		}
		stopTimer(timer)
		carried = failed // until it is served
		if rs.ctx.Err() != nil || rs.inputEnded() {
			return
		}
		next, planned, ok := rs.successor(g, reason != "", &failures)
		if !ok {
			return
		}
		if !planned {
			reason = RotationEarlyEnd
		}
		reason, ok = rs.install(g, next, reason, failed)
		if !ok {
			next.sess.Close()
			return
		}
		carried = nil
		answer(nil)
		if reason == RotationEarlyEnd {
			g.sess.CloseSend() // after a failed Send, the stream may still be open
			continue
		}
		failures = 0
		rs.retire(g)
	}
}

func stopTimer(t *time.Timer) {
	if t != nil {
		t.Stop()
	}
}

// stopErr is what a Rotate still waiting learns when the rotator exits.
func (rs *RotatingSession) stopErr() error {
	switch {
	case rs.ctx.Err() != nil:
		return rs.closedErr()
	case rs.terminalErr() != nil:
		return rs.terminalErr()
	}
	return errSendClosed
}

// retire finishes a stream that was rotated away from as planned: its
// Finish callback, then its end once its model is quiet, on a goroutine
// of its own so that the rotator watches the new stream meanwhile.
func (rs *RotatingSession) retire(g *generation) {
	rs.mu.Lock()
	olds := rs.olds[:0]
	for _, o := range rs.olds {
		if o.sess.Context().Err() == nil {
			olds = append(olds, o)
		}
	}
	clear(rs.olds[len(olds):])
	rs.olds = append(olds, g)
	rs.mu.Unlock()
	if rs.finish != nil {
		rs.finish(g.sess.Context(), sendOn(g.sess)) // its error changes nothing
	}
	// Keep the old input open while its model answers (unless
	// FinishQuiet < 0); its pump hands the replies to Recv meanwhile.
	// Finish ends when the old stream does, or with the session.
	rs.startFinisher(g)
}

// startFinisher runs finishOld(g) on a goroutine of its own, counted in
// finishers until it returns.
func (rs *RotatingSession) startFinisher(g *generation) {
	rs.mu.Lock()
	rs.finishers++
	rs.mu.Unlock()
	go func() {
		rs.finishOld(g)
		rs.mu.Lock()
		rs.finishers--
		rs.moved.wakeLocked() // for settleOlds
		rs.mu.Unlock()
	}()
}

// afterInput runs as the rotator exits. Once the input ended (not after
// Close), and with replay on, it stays until every stream rotated away
// from has finished (settleOlds), then settles the current stream:
// nothing follows it.
// carried is a failed stream the rotator received but did not serve.
func (rs *RotatingSession) afterInput(carried *generation) {
	if rs.replay == nil || rs.ctx.Err() != nil || !rs.inputEnded() || rs.terminalErr() != nil {
		return
	}
	rs.settleOlds(carried)
	rs.settle(rs.cur, nil) // no-op if the rotator gave up
}

// settleOlds waits, once the input ended, until no stream rotated away
// from is finishing. One that fails with messages of the replay window
// unanswered gets a successor all the same (RotationOverlapFault): it is
// sent those messages and the ones after them, then finished like the
// others, so that the end of the call loses nothing to an old stream's
// fault. Reconnects count against MaxReconnects as after an early end;
// beyond it, or on an error that a retry cannot fix, the rotator gives
// up (Recv and Finish report why).
func (rs *RotatingSession) settleOlds(failed *generation) {
	failures := 0
	for {
		if failed != nil && rs.uncovered(failed) && !rs.recoverOld(failed, &failures) {
			return
		}
		failed = nil
		// fewer is closed when a finisher returns.
		fewer := rs.waitWhile(func() bool { return rs.finishers > 0 })
		if fewer == nil {
			return
		}
		select {
		case m := <-rs.inbox:
			if m.rotate != nil {
				m.rotate.done <- rs.stopErr() // the input ended: no rotation
			}
			failed = m.failed
		case <-fewer:
		case <-rs.ctx.Done():
			return
		}
	}
}

// recoverOld opens a successor of the current stream once the input
// ended, sends it the replay window from the end of failed, and finishes
// it as a stream rotated away from. It reports false if it gave up or the
// session closed.
func (rs *RotatingSession) recoverOld(failed *generation, failures *int) bool {
	g := rs.cur
	var next *generation
	for {
		*failures++
		lastErr := failed.endErr()
		if *failures > rs.maxReconnects || permanent(lastErr) {
			rs.giveUp(g, &reconnectError{Reconnects: *failures - 1, Err: lastErr})
			return false
		}
		if *failures > 1 && !backoff.Sleep(rs.ctx, rs.backoff(*failures-1)) {
			return false
		}
		var err error
		if next, err = rs.open(g.n+1, time.Now()); err == nil {
			break
		}
		if rs.ctx.Err() != nil {
			return false
		}
		if permanent(err) {
			rs.giveUp(g, &reconnectError{Reconnects: *failures, Err: err})
			return false
		}
	}
	if rs.lockSend(rs.ctx) != nil {
		next.sess.Close()
		return false
	}
	ev := rs.rotationEvent(g, next, RotationOverlapFault)
	rs.replayFailed(next, failed, &ev)
	rs.makeCurrent(g, next, ev, nil)
	rs.unlockSend()
	rs.mu.Lock()
	rs.olds = append(rs.olds, next)
	rs.mu.Unlock()
	rs.startFinisher(next) // the input ended: no Rotation.Finish for it
	return true
}

// finishOld ends a stream rotated away from, once its model is quiet,
// and tells the replay window how it ended: the messages it received
// last are forgotten after a clean end, and replayed after a failure.
func (rs *RotatingSession) finishOld(g *generation) {
	if rs.finishQuiet > 0 {
		// Stop waiting for quiet once the pump saw the stream end: the
		// session may learn it later.
		ctx, cancel := context.WithCancel(rs.ctx)
		go func() {
			select {
			case <-g.kicked:
				cancel()
			case <-ctx.Done():
			}
		}()
		g.sess.Finish(ctx, rs.finishQuiet)
		cancel()
	} else {
		g.sess.CloseSend()
	}
	if rs.replay != nil {
		rs.reportEnd(rs.ctx, g)
	}
}

// finishedCurrent is Finish's part in settleOlds for the stream that was
// current when the input ended: its verdict, then its end as a finisher.
// If it failed, the rotator has recovered it (g.recovered) once
// rs.stopped is set. ctx bounds the wait for the verdict.
func (rs *RotatingSession) finishedCurrent(ctx context.Context, g *generation) {
	rs.reportEnd(ctx, g)
	rs.mu.Lock()
	rs.finishers--
	rs.moved.wakeLocked() // for settleOlds
	rs.mu.Unlock()
}

// reportEnd tells the replay window how g, which finished, ended: the
// messages it received last are forgotten after a clean end; after a
// failure the rotator is told (settleOlds), to replay them to a successor.
func (rs *RotatingSession) reportEnd(ctx context.Context, g *generation) {
	// The verdict is the end its pump saw, which Finish may not know yet
	// (a failed Send's error may only say that the stream is over).
	if rs.waitUntil(ctx, &g.pumped, rs.ctx.Done(), nil) != nil {
		return
	}
	err := finishError(g.pumpErr)
	if err == nil {
		if rs.lockSend(rs.ctx) == nil {
			rs.replay.answered(g.n)
			rs.unlockSend()
		}
		return
	}
	g.endAt = time.Now()
	rs.toRotator(ctx, rotatorMsg{failed: g}) // nobody to tell once the rotator exited or the session closed
}

// uncovered reports whether the window holds messages that old, which
// failed while finishing, received last: they are to be replayed.
func (rs *RotatingSession) uncovered(old *generation) bool {
	if rs.lockSend(rs.ctx) != nil {
		return false
	}
	defer rs.unlockSend()
	for _, k := range rs.replay.since(old.endAt) {
		if k.gen <= old.n {
			return true
		}
	}
	return false
}

// finishing returns the streams rotated away from before cur that have
// not ended yet.
func (rs *RotatingSession) finishing(cur *generation) []*generation {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	var out []*generation
	for _, o := range rs.olds {
		if o != cur && o.sess.Context().Err() == nil {
			out = append(out, o)
		}
	}
	return out
}

// successor opens the stream that follows g. In a planned rotation (g
// alive), failed attempts are retried with backoff as long as g lasts;
// once g is over, the rotation is a reconnect: each attempt counts in
// failures, and successor gives up (recording a *reconnectError) beyond
// MaxReconnects or on an error a retry cannot fix. It reports whether
// the rotation stayed planned, and false in ok when it gave up, or when
// the session closed or its input ended.
func (rs *RotatingSession) successor(g *generation, planned bool, failures *int) (next *generation, stillPlanned, ok bool) {
	var lastErr error
	sawEnd := false
	for attempt := 1; ; attempt++ {
		if planned && g.over() {
			planned = false
		}
		if !planned {
			if !sawEnd {
				sawEnd = true
				g.endAt = time.Now()
				lastErr = g.endErr()
				if g.endAt.Sub(g.opened) >= rs.stable {
					*failures = 0
				}
			}
			*failures++
			if *failures > rs.maxReconnects || permanent(lastErr) {
				rs.giveUp(g, &reconnectError{Reconnects: *failures - 1, Err: lastErr})
				return nil, false, false
			}
			if !rs.sleep(rs.backoff(*failures), nil) {
				return nil, false, false
			}
		} else if attempt > 1 && !rs.sleep(rs.backoff(attempt), g) {
			if rs.ctx.Err() != nil || rs.inputEnded() {
				return nil, false, false
			}
			planned = false // g ended while waiting: reconnect
			continue
		}
		next, err := rs.open(g.n+1, time.Now())
		if err == nil {
			return next, planned, true
		}
		if rs.ctx.Err() != nil || rs.inputEnded() {
			return nil, false, false
		}
		lastErr = err
	}
}

// sleep waits d; it reports false if the session closed, its input ended
// or (for a non-nil g) g ended first.
func (rs *RotatingSession) sleep(d time.Duration, g *generation) bool {
	if g == nil {
		return backoff.Sleep(rs.ctx, d, rs.inputDone)
	}
	// g's context is a child of rs.ctx.
	return backoff.Sleep(g.sess.Context(), d, rs.inputDone, g.kicked) && rs.ctx.Err() == nil
}

// install makes next the stream Send sends to, at a message boundary
// (holding the send turn, once a message begun with SendPart is complete),
// unless the input ended or the session closed. After an early end it
// first sends next the replay window. It records the rotation's event
// and starts next's pump: right away after a planned rotation, after the
// old stream's pump otherwise, so that nothing interleaves with a stream
// that ended early. A planned rotation whose old stream turns out to
// have ended meanwhile becomes an early end: the replay then covers what
// was sent to it. It returns the rotation's reason, and false if the
// successor was not installed.
func (rs *RotatingSession) install(g, next *generation, reason RotationReason, failed *generation) (RotationReason, bool) {
	if !rs.lockBoundary(g) {
		return "", false
	}
	defer rs.unlockSend()
	if rs.sendClosed {
		return "", false
	}
	if reason != RotationEarlyEnd && g.over() {
		reason, g.endAt = RotationEarlyEnd, time.Now()
	}
	ev := rs.rotationEvent(g, next, reason)
	var after <-chan struct{}
	switch reason {
	case RotationEarlyEnd:
		after = g.drained
		ev.Err = g.endErr()
		if ev.Err == nil {
			ev.Err = ErrStreamEnded
		}
		rs.replayTo(next, g.endAt, &ev)
	case RotationOverlapFault:
		rs.replayFailed(next, failed, &ev)
	}
	rs.makeCurrent(g, next, ev, after)
	return reason, true
}

// rotationEvent returns the event of next replacing g for reason, next's
// start placed on the call's timeline. The send turn is held.
func (rs *RotatingSession) rotationEvent(g, next *generation, reason RotationReason) RotationEvent {
	return RotationEvent{
		From: g.n, To: next.n, Reason: reason,
		Start: StreamStart{
			Time:     next.started,
			Offset:   next.started.Sub(rs.began),
			Messages: rs.sent.Load(),
			Bytes:    rs.sentBytes,
		},
	}
}

// replayFailed sends next the replay window from the end of failed, a
// stream that failed while it finished, records it in ev and marks failed
// as replaced. The send turn is held.
func (rs *RotatingSession) replayFailed(next, failed *generation, ev *RotationEvent) {
	ev.Err = failed.endErr()
	rs.replayTo(next, failed.endAt, ev)
	failed.recovered = true
}

// makeCurrent makes next, with its event ev, the stream Send sends to and
// the one that follows g, and starts its pump (held back until after is
// closed, if not nil). The send turn is held.
func (rs *RotatingSession) makeCurrent(g, next *generation, ev RotationEvent, after <-chan struct{}) {
	next.event = ev
	rs.cur = next
	rs.gen.Store(int64(next.n))
	rs.settle(g, next)
	rs.startPump(next, after)
}

// lockBoundary takes the send turn outside a message begun with
// SendPart. It reports false if the session closed first.
func (rs *RotatingSession) lockBoundary(g *generation) bool {
	for {
		if rs.lockSend(rs.ctx) != nil {
			return false
		}
		if !rs.partOpen {
			return true
		}
		if g.over() { // the message is lost with its stream
			rs.setPartOpen(false)
			return true
		}
		rs.unlockSend()
		// Wait for the message's last part: partOpen is guarded by mu
		// too, so that its end cannot slip between the look and the
		// wait.
		rs.mu.Lock()
		var done <-chan struct{}
		if rs.partOpen {
			done = rs.moved.waitLocked()
		}
		rs.mu.Unlock()
		if done == nil {
			continue
		}
		if h := testHookAtBoundary.Load(); h != nil {
			(*h)(rs)
		}
		select {
		case <-done:
		case <-g.sess.Context().Done():
		case <-g.kicked:
		case <-rs.ctx.Done():
			return false
		}
	}
}

// testHookAtBoundary, if set (by tests), is called by the rotator when
// it waits for a message begun with SendPart to complete, with no lock
// held and without the send turn.
var testHookAtBoundary atomic.Pointer[func(*RotatingSession)]

// replayTo sends next the messages of the replay window sent since
// window before end, and records them in ev. The send turn is held. A
// failure of next is left to the rotator, which sees next end.
func (rs *RotatingSession) replayTo(next *generation, end time.Time, ev *RotationEvent) {
	if rs.replay == nil {
		return
	}
	kept := rs.replay.since(end)
	if len(kept) == 0 {
		return
	}
	ev.ReplayFrom = kept[0].seq
	ev.Start.Messages, ev.Start.Bytes = kept[0].seq, kept[0].off
	for i := range kept {
		k := &kept[i]
		if err := next.sess.Send(rs.ctx, k.m); err != nil {
			next.kick(err)
			return
		}
		k.gen = next.n
		ev.Replayed++
	}
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
// row, then the module's full-jitter backoff (backoff.Delay): a random
// time in [0, d], d doubling from 100 ms to 5 s.
func defaultReconnectBackoff(n int) time.Duration {
	if n <= 1 {
		return 0
	}
	return backoff.Delay(n-1, reconnectBackoffBase, reconnectBackoffMax)
}

// The bounds of defaultReconnectBackoff.
const (
	reconnectBackoffBase = 100 * time.Millisecond
	reconnectBackoffMax  = 5 * time.Second
)
