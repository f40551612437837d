package bidi

import (
	"sync"
	"sync/atomic"
)

// phase is where a session is in its life. A session only moves forward:
//
//		opening ──► awaiting ──► streaming ──► ended ──► closed
//		   │           │             │                     ▲
//		   └───────────┴─────────────┴─────── failed ──────┘
//
//	  - opening: Open validates, retrieves credentials, signs and waits for a
//	    connection slot (and, on a retried open, backs off).
//	  - awaiting: the request head is sent; Send may queue messages; the
//	    response head has not arrived.
//	  - streaming: the model answered 200; both directions are open.
//	  - ended: the response stream is over (cleanly or with the model's
//	    error): Send reports why, Recv returns what was received first.
//	  - closed: Close was called, a context ended or the session failed:
//	    every call returns the terminal error.
type phase uint32

const (
	phaseOpening phase = iota
	phaseAwaiting
	phaseStreaming
	phaseEnded
	phaseClosed
)

func (p phase) String() string {
	switch p {
	case phaseOpening:
		return "opening"
	case phaseAwaiting:
		return "awaiting the response"
	case phaseStreaming:
		return "streaming"
	case phaseEnded:
		return "ended"
	}
	return "closed"
}

// endMode says how end records its error.
type endMode uint8

const (
	endDefinite    endMode = iota // first definite error wins, over a provisional one
	endProvisional                // a stand-in, replaced by the first definite error
	endIfOpen                     // only if nothing ended the send side yet
)

// sessionState is a session's phase and its one terminal-error slot: why
// the session (at least its send side) ended. Guarded by mu; over is
// closed, and isOver set, when err is first set; userClosed is set by
// Close.
type sessionState struct {
	mu          sync.Mutex
	phase       phase
	err         error
	provisional bool // err is a stand-in (the stream ended, reason not decoded yet)
	over        chan struct{}
	isOver      atomic.Bool // over is closed: what Send checks for every part, without touching the channel
	userClosed  atomic.Bool
}

func (st *sessionState) init() { st.over = make(chan struct{}) }

// advance moves the phase forward to p (never back).
func (st *sessionState) advance(p phase) {
	st.mu.Lock()
	if p > st.phase {
		st.phase = p
	}
	st.mu.Unlock()
}

// terminal returns the recorded terminal error, or nil.
func (st *sessionState) terminal() error {
	st.mu.Lock()
	defer st.mu.Unlock()
	return st.err
}

// end is the one function that ends a session, or its send side. It
// records err in the terminal-error slot as mode says, moves the phase
// forward to `to`, and for phaseClosed fails the request body and cancels
// the session's context with err as cause, which unblocks every call and
// makes the session's goroutine exit. It reports whether err was
// recorded (with endIfOpen, nothing happens when it was not).
func (s *Session) end(err error, to phase, mode endMode) bool {
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
	if to > st.phase {
		st.phase = to
	}
	st.mu.Unlock()
	if to == phaseClosed {
		s.pipe.fail(err)
		s.cancel(err)
	}
	return recorded
}
