package biditest

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http/httptest"
	"testing"
)

// A request body cut inside an event-stream message is a framing
// violation when the client ended its body there, but not when it reset
// the stream (a Close in the middle of a Send): net/http's server cancels
// the request's context before the body fails, and the cut then says
// nothing of the client's framing.
func TestCutInsideAMessage(t *testing.T) {
	for _, reset := range []bool{false, true} {
		s := NewUnstartedServer(nil)
		ctx, cancel := context.WithCancel(context.Background())
		if reset {
			cancel()
		}
		st := &Stream{s: s, r: httptest.NewRequest("POST", "/", nil).WithContext(ctx), done: true}
		err := st.bodyError(fmt.Errorf("eventstream: stream failed inside a message: %w: stream error: stream ID 25; CANCEL", io.ErrUnexpectedEOF))
		want := 1 // violations recorded
		if reset {
			want = 0
		}
		var v *Violation
		if errors.As(err, &v) != (want == 1) || len(s.Violations()) != want {
			t.Errorf("reset %v: %v, %d violations recorded, want %d", reset, err, len(s.Violations()), want)
		}
		if !errors.Is(err, io.ErrUnexpectedEOF) {
			t.Errorf("reset %v: %v does not match io.ErrUnexpectedEOF", reset, err)
		}
		cancel()
	}
}
