package bidi

import (
	"context"
	"errors"
	"testing"
)

// TestPhaseMachine: the phase only moves forward, and only through
// answered and end; over closes when the send side ends, not at the
// answer; a definite error replaces a provisional one and nothing else
// replaces the first; ending the session fails the send queue in the
// same step and cancels the context with the terminal error.
func TestPhaseMachine(t *testing.T) {
	s := &Session{}
	s.state.init(&s.pipe.mu)
	s.pipe.init(0)
	s.ctx, s.cancel = context.WithCancelCause(context.Background())
	isOver := func() bool {
		select {
		case <-s.state.over:
			return true
		default:
			return false
		}
	}
	if s.state.phase() != phaseOpening || isOver() {
		t.Fatal("a new session is not opening")
	}
	s.answered()
	if s.state.phase() != phaseStreaming || isOver() || s.state.sendOver() {
		t.Fatalf("after answered: phase %d, over %v", s.state.phase(), isOver())
	}
	standIn, reason, later := errors.New("stand-in"), errors.New("reason"), errors.New("later")
	if !s.end(standIn, endSendSide, endProvisional) {
		t.Fatal("the first end was not recorded")
	}
	if s.state.phase() != phaseSendOver || !isOver() || !s.state.sendOver() || s.ctx.Err() != nil {
		t.Fatalf("after the send side ended: phase %d, over %v, ctx %v", s.state.phase(), isOver(), s.ctx.Err())
	}
	s.answered() // never back
	if s.state.phase() != phaseSendOver {
		t.Fatal("answered moved the phase back")
	}
	if !s.end(reason, endSendSide, endDefinite) || s.state.terminal() != reason {
		t.Fatalf("terminal %v, want the definite reason over the stand-in", s.state.terminal())
	}
	if s.end(later, endSendSide, endDefinite) || s.end(later, endSession, endIfOpen) || s.state.terminal() != reason {
		t.Fatalf("terminal %v, want the first definite reason kept", s.state.terminal())
	}
	if s.state.phase() != phaseSendOver {
		t.Fatal("an end that did not apply (endIfOpen) moved the phase")
	}
	s.end(later, endSession, endDefinite)
	if s.state.phase() != phaseEnded || s.state.terminal() != reason {
		t.Fatalf("after the session ended: phase %d, terminal %v", s.state.phase(), s.state.terminal())
	}
	if context.Cause(s.ctx) != later || s.pipe.err != later {
		t.Fatalf("ctx cause %v, queue error %v; want the error that ended the session", context.Cause(s.ctx), s.pipe.err)
	}
}
