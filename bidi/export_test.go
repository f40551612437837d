package bidi

import (
	"context"
	"fmt"
	"strings"
)

// SetOpenHook makes Open call f after starting a session's goroutine and
// before waiting for its request to be on its way, so that tests can
// order events around that wait. It returns a function that removes f.
func SetOpenHook(f func(*Session)) (restore func()) {
	testHookOpenWait = f
	return func() { testHookOpenWait = nil }
}

// SetAnsweredHook makes the session's goroutine call f once the model has
// answered, before the response stream is made readable. It returns a
// function that removes f. Tests that set it must not run in parallel
// with others that open sessions.
func SetAnsweredHook(f func(*Session)) (restore func()) {
	testHookAnswered.Store(&f)
	return func() { testHookAnswered.Store(nil) }
}

// SetBoundaryHook makes a RotatingSession's rotator call f when it
// waits for a message begun with SendPart to complete before it switches
// streams. It returns a function that removes f. Tests that set it must
// not run in parallel with others that rotate.
func SetBoundaryHook(f func(*RotatingSession)) (restore func()) {
	testHookAtBoundary.Store(&f)
	return func() { testHookAtBoundary.Store(nil) }
}

// SetSendWaitHook makes Send call f, on the Send's goroutine, each time
// it begins to wait for room in the send queue, for every session. It
// returns a function that removes f. Tests that set it must not run in
// parallel with others.
func SetSendWaitHook(f func(*Session)) (restore func()) {
	testHookSendWait.Store(&f)
	return func() { testHookSendWait.Store(nil) }
}

// SendBacklog returns how many bytes of the send queue the connection's
// writer has yet to take.
func SendBacklog(s *Session) int { return s.pipe.backlog() }

// FlowBlocked reports whether the session's request is held back by
// HTTP/2 flow control: the server has taken all the window it gave.
func FlowBlocked(s *Session) bool {
	a := s.cur.Load()
	return a != nil && a.st.SendBlocked()
}

// StreamOver returns a channel closed once the session knows its response
// stream is over (ended or failed), before Recv has decoded the end.
func StreamOver(s *Session) <-chan struct{} { return s.state.over }

// UnreadBytes returns how many response bytes the session's stream holds
// that Recv has not taken.
func UnreadBytes(s *Session) int {
	a := s.cur.Load()
	if a == nil {
		return 0
	}
	return a.st.Buffered()
}

// DescribeAttempt describes the session's current attempt for a failing
// test's message: its number, the session's phase, the engine stream's
// error (nil while it runs or after a clean end) and the bytes it holds
// unread.
func DescribeAttempt(s *Session) string {
	a := s.cur.Load()
	if a == nil {
		return fmt.Sprintf("no attempt (phase %d)", s.state.phase())
	}
	return fmt.Sprintf("attempt %d, phase %d, stream error %v, %d bytes unread, terminal %v",
		a.n, s.state.phase(), a.st.Err(), a.st.Buffered(), s.state.terminal())
}

// StalledByUnreadReplies reports whether the session's request is held
// back by flow control while response bytes wait unread.
func StalledByUnreadReplies(s *Session) bool {
	a := s.cur.Load()
	return a != nil && a.st != nil && a.st.Buffered() > 0 && a.st.SendBlocked()
}

// RotatingStreamOver returns a channel closed once the response stream
// of the RotatingSession's current stream is over, as its session knows
// it (before Recv got through the replies buffered ahead of the end).
func RotatingStreamOver(rs *RotatingSession) <-chan struct{} {
	if rs.lockSend(context.Background()) != nil {
		return nil
	}
	defer rs.unlockSend()
	return rs.cur.sess.state.over
}

// The unexported errors and accessors the external tests match or call
// by their former exported names (issue 18 folded them: the sentinels
// ErrInvalidConfig and ErrSendInterrupted are the public way to match).
type (
	EndpointError        = endpointError
	ReconnectError       = reconnectError
	SendInterruptedError = sendInterruptedError
)

var (
	ErrNoRegion           = errNoRegion
	ErrNoCredentials      = errNoCredentials
	ErrExpiredCredentials = errExpiredCredentials
	ErrSendClosed         = errSendClosed
	ErrMessageInProgress  = errMessageInProgress
)

// Generation returns the generation of the stream that Send currently
// sends to.
func (rs *RotatingSession) Generation() int { return rs.generation() }

// DescribeRotating describes a RotatingSession for a failing test's
// message: the rotator's state under the session's lock, then each
// stream from the oldest one still finishing (or the newest one
// announced to OnRotate) on: whether its pump saw its end, whether its
// pump returned, whether it is settled and what follows it, and its
// session's end. It reads the receiver's fields without its turn: call
// it only once the receiver is stuck or gone.
func DescribeRotating(rs *RotatingSession) string {
	rs.mu.Lock()
	pumps, terminal, finishers := rs.pumps, rs.terminal, rs.finishers
	first := rs.announced
	if len(rs.olds) > 0 && rs.olds[0].n < first.n {
		first = rs.olds[0]
	}
	olds := make([]int, 0, len(rs.olds))
	for _, g := range rs.olds {
		olds = append(olds, g.n)
	}
	rs.mu.Unlock()
	var b strings.Builder
	ended := 0
	if rs.ended != nil {
		ended = rs.ended.n
	}
	fmt.Fprintf(&b, "current %d, stopped %v, pumps %d, terminal %v, olds %v, finishers %d; Recv took the end of %d, announced %d, recvErr %v",
		rs.gen.Load(), rs.stopped.Load(), pumps, terminal, olds, finishers, ended, rs.announced.n, rs.recvErr)
	for g := first; g != nil; {
		drained := false
		select {
		case <-g.drained:
			drained = true
		default:
		}
		rs.mu.Lock()
		settled, next, pumped, pumpErr, recovered := g.settled.Load(), g.next, g.pumped.Load(), g.pumpErr, g.recovered
		rs.mu.Unlock()
		nextN := 0
		if next != nil {
			nextN = next.n
		}
		fmt.Fprintf(&b, "\n  stream %d (%v): pumped %v (%v), drained %v, settled %v, next %d, recovered %v, session %v; %s",
			g.n, g.event.Reason, pumped, pumpErr, drained, settled, nextN, recovered, context.Cause(g.sess.Context()), DescribeAttempt(g.sess))
		if !settled {
			break
		}
		g = next
	}
	return b.String()
}
