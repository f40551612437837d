package bidi

import (
	"sync"
	"sync/atomic"
)

// phase is where a session stands. It only moves forward, and only
// through the session's two transition functions: answered (the run
// goroutine, once the model answered) and end (every way a session or its
// send side ends). Send, Recv, Close and Finish decide from it:
//
//	phaseOpening ──answered──► phaseStreaming ──end(send side)──► phaseSendOver
//	     │                          │                                  │
//	     └──────────────────────────┴────────── end(session) ─────────┴──► phaseEnded
//
// docs/design.md draws the same diagram with who moves each arrow.
type phase uint32

const (
	// phaseOpening: no response head yet. Attempts are made and retried;
	// Send queues parts, kept for replay; Recv and Response wait.
	phaseOpening phase = iota
	// phaseStreaming: the model answered (respReady is closed and resp
	// set). Send signs and queues; Recv decodes.
	phaseStreaming
	// phaseSendOver: the response stream is over (or the model's end was
	// decoded): nothing more reaches the model, so Send and CloseSend
	// report why (the terminal slot), while Recv still returns what came
	// before the end, then its reason. The session's context is live.
	phaseSendOver
	// phaseEnded: the session ended: Close, the context given to Open, a
	// failure before the answer, an interrupted Send, or the end delivered
	// by Recv. Its context is cancelled with the terminal error as cause;
	// every call returns that error.
	phaseEnded
)

// endScope says what end ends: the send side only (the response stream
// is over: phaseSendOver), or the whole session (phaseEnded).
type endScope uint8

const (
	endSendSide endScope = iota
	endSession
)

// endMode says how end records its error.
type endMode uint8

const (
	endDefinite    endMode = iota // first definite error wins, over a provisional one
	endProvisional                // a stand-in, replaced by the first definite error
	endIfOpen                     // only if nothing ended the send side yet
)

// sessionState is a session's phase and its one terminal-error slot: why
// the session (at least its send side) ended.
//
// Owners: err, provisional and cause are guarded by mu, which is the
// send queue's mutex (sendPipe.mu), so that the session's end and the
// queue's failure are one step; ph is written under mu and read without
// it; over is closed when ph first reaches phaseSendOver or later;
// userClosed is set by Close.
type sessionState struct {
	mu          *sync.Mutex // = &Session.pipe.mu
	ph          atomic.Uint32
	err         error
	provisional bool  // err is a stand-in (the stream ended, reason not decoded yet)
	cause       error // the err of the first end of the whole session: the context's cause
	over        chan struct{}
	userClosed  atomic.Bool
}

func (st *sessionState) init(mu *sync.Mutex) {
	st.mu = mu
	st.over = make(chan struct{})
}

// phase returns the current phase.
func (st *sessionState) phase() phase { return phase(st.ph.Load()) }

// sendOver reports whether the send side is over (phaseSendOver or
// later): what Send checks for every part, without touching a channel.
func (st *sessionState) sendOver() bool { return st.phase() >= phaseSendOver }

// endCause is the cause the session's end gives its context: nil until
// the session ends, set before the context is cancelled.
func (st *sessionState) endCause() error {
	st.mu.Lock()
	defer st.mu.Unlock()
	return st.cause
}

// terminal returns the recorded terminal error, or nil.
func (st *sessionState) terminal() error {
	st.mu.Lock()
	defer st.mu.Unlock()
	return st.err
}

// advanceLocked moves the phase forward to p (never back); reaching
// phaseSendOver or later closes over. st.mu is held.
func (st *sessionState) advanceLocked(p phase) {
	old := st.phase()
	if p <= old {
		return
	}
	st.ph.Store(uint32(p))
	if old < phaseSendOver && p >= phaseSendOver {
		close(st.over)
	}
}

// answered moves the session to phaseStreaming: the model answered. It
// is called by the run goroutine, before respReady is closed. A session
// that ended meanwhile stays ended.
func (s *Session) answered() {
	st := &s.state
	st.mu.Lock()
	st.advanceLocked(phaseStreaming)
	st.mu.Unlock()
}

// end is the one function that ends a session, or its send side. It
// records err in the terminal-error slot as mode says and advances the
// phase: to phaseSendOver for endSendSide, to phaseEnded for endSession,
// which also fails the send queue (in the same step, under the same lock)
// and then cancels the session's context with the err of the first such
// end as cause (st.cause), which unblocks every call and makes the
// session's goroutine exit. It reports
// whether err was recorded (with endIfOpen, nothing happens when it was
// not).
func (s *Session) end(err error, scope endScope, mode endMode) bool {
	st := &s.state
	st.mu.Lock()
	recorded := false
	switch {
	case st.err == nil:
		st.err, st.provisional = err, mode == endProvisional
		recorded = true
	case mode == endIfOpen:
	case st.provisional && mode != endProvisional:
		st.err, st.provisional = err, false
		recorded = true
	}
	if mode == endIfOpen && !recorded {
		st.mu.Unlock()
		return false
	}
	// The first end of the whole session, under the lock, decides the
	// context's cause: a later one that cancels first (it runs outside
	// the lock) cancels with that same cause, not its own.
	var cause error
	if scope == endSession {
		if st.cause == nil {
			st.cause = err
		}
		cause = st.cause
		st.advanceLocked(phaseEnded)
		s.pipe.failLocked(cause)
	} else {
		st.advanceLocked(phaseSendOver)
	}
	st.mu.Unlock()
	if scope == endSession {
		if h := testHookEnding.Load(); h != nil {
			(*h)(s)
		}
		s.cancel(cause)
	}
	return recorded
}

// testHookEnding, if set (by tests), is called by end between its lock
// and the context's cancellation, where another end may overtake it.
var testHookEnding atomic.Pointer[func(*Session)]
