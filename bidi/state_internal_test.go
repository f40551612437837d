package bidi

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
)

// newIdleSession returns a session that was never opened (no request,
// no goroutine), closed when the test ends.
func newIdleSession(t *testing.T) *Session {
	t.Helper()
	c := NewFromConfig(aws.Config{Region: "us-west-2", Credentials: aws.AnonymousCredentials{}})
	if c.err != nil {
		t.Fatal(c.err)
	}
	s := newSession(context.Background(), c, &OpenInput{EndpointName: "e"})
	t.Cleanup(func() { s.Close() })
	return s
}

// TestEndCauseIsTheFirstEnds: when a second end of the session overtakes
// the first between the first's lock and its cancellation (as the run
// goroutine's failure does when Send's interruption kills the request
// body), the context's cause is still the first's error, the one the
// terminal slot holds, so that every call reports the same reason.
func TestEndCauseIsTheFirstEnds(t *testing.T) {
	s := newIdleSession(t)
	first, second := errors.New("first"), errors.New("second")
	var overtaken atomic.Bool
	overtake := func(s *Session) {
		if overtaken.CompareAndSwap(false, true) {
			s.end(second, endSession, endDefinite)
		}
	}
	testHookEnding.Store(&overtake)
	defer testHookEnding.Store(nil)
	if !s.end(first, endSession, endIfOpen) {
		t.Fatal("the first end was not recorded")
	}
	if got := context.Cause(s.ctx); got != first {
		t.Errorf("context's cause = %v, want %v", got, first)
	}
	if got := s.state.terminal(); got != first {
		t.Errorf("terminal error = %v, want %v", got, first)
	}
	if got := s.sessionErr(); got != first {
		t.Errorf("sessionErr = %v, want %v", got, first)
	}
}

// TestRecvWhileEndingGetsTheCause: a call that looks at the session
// between its end's lock and the context's cancellation (the phase says
// ended, the context not yet) gets the end's error, not ErrSessionClosed:
// a Recv after a Send that reported a 424 must report the 424 too. Found
// under CPU hogs in TestHTTPErrorBeforeCloseSend ("later Recv: bidi:
// session closed").
func TestRecvWhileEndingGetsTheCause(t *testing.T) {
	s := newIdleSession(t)
	failure := errors.New("the model failed")
	var sessionErr, recvErr error
	var looked atomic.Bool
	look := func(s *Session) {
		if looked.CompareAndSwap(false, true) {
			sessionErr = s.sessionErr()
			_, recvErr = s.Recv(context.Background())
		}
	}
	testHookEnding.Store(&look)
	defer testHookEnding.Store(nil)
	s.end(failure, endSession, endDefinite)
	if !looked.Load() {
		t.Fatal("the hook did not run")
	}
	if sessionErr != failure || recvErr != failure {
		t.Errorf("while ending: sessionErr = %v, Recv = %v; want %v for both", sessionErr, recvErr, failure)
	}
	if _, err := s.Recv(context.Background()); err != failure {
		t.Errorf("after the end: Recv = %v, want %v", err, failure)
	}
}
