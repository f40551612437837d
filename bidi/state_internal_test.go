package bidi

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
)

// TestEndCauseIsTheFirstEnds: when a second end of the session overtakes
// the first between the first's lock and its cancellation (as the run
// goroutine's failure does when Send's interruption kills the request
// body), the context's cause is still the first's error, the one the
// terminal slot holds, so that every call reports the same reason.
func TestEndCauseIsTheFirstEnds(t *testing.T) {
	c := NewFromConfig(aws.Config{Region: "us-west-2", Credentials: aws.AnonymousCredentials{}})
	if c.err != nil {
		t.Fatal(c.err)
	}
	s := newSession(context.Background(), c, &OpenInput{EndpointName: "e"})
	defer s.Close()
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
