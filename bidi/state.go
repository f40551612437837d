package bidi

import (
	"sync"
	"sync/atomic"
)

// endScope says what end ends: the send side only (the response stream
// is over: Send reports why, Recv still returns what came first), or the
// whole session (Close, a context, a failure: every call returns the
// terminal error). docs/design.md draws the states.
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

// sessionState is a session's one terminal-error slot: why the session
// (at least its send side) ended. Guarded by mu; over is
// closed, and isOver set, when err is first set; userClosed is set by
// Close.
type sessionState struct {
	mu          sync.Mutex
	err         error
	provisional bool // err is a stand-in (the stream ended, reason not decoded yet)
	over        chan struct{}
	isOver      atomic.Bool // over is closed: what Send checks for every part, without touching the channel
	userClosed  atomic.Bool
}

func (st *sessionState) init() { st.over = make(chan struct{}) }

// terminal returns the recorded terminal error, or nil.
func (st *sessionState) terminal() error {
	st.mu.Lock()
	defer st.mu.Unlock()
	return st.err
}

// end is the one function that ends a session, or its send side. It
// records err in the terminal-error slot as mode says, and for
// endSession fails the request body and cancels the session's context
// with err as cause, which unblocks every call and makes the session's
// goroutine exit. It reports whether err was recorded (with endIfOpen,
// nothing happens when it was not).
func (s *Session) end(err error, scope endScope, mode endMode) bool {
	st := &s.state
	st.mu.Lock()
	recorded := false
	switch {
	case st.err == nil:
		st.err, st.provisional = err, mode == endProvisional
		st.isOver.Store(true)
		close(st.over)
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
	st.mu.Unlock()
	if scope == endSession {
		s.pipe.fail(err)
		s.cancel(err)
	}
	return recorded
}
