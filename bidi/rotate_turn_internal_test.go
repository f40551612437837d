package bidi

import (
	"context"
	"io"
	"testing"
	"testing/synctest"
)

// TestRotatingRecvWakesWhenSettled: a Recv that took the last stream's
// end and waits to learn whether a successor follows returns the end of
// the call once the stream is settled with none (CloseSend meanwhile),
// woken by the session's broadcast; and a Recv waiting on the receive
// turn behind it gets the same sticky end once the first returns.
func TestRotatingRecvWakesWhenSettled(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx, cancel := context.WithCancelCause(context.Background())
		defer cancel(nil)
		g := &generation{n: 1, recvEnd: io.EOF}
		rs := &RotatingSession{ctx: ctx, cancel: cancel, items: make(chan rotItem), ended: g, announced: g}
		first, second := make(chan error, 1), make(chan error, 1)
		go func() { _, err := rs.Recv(context.Background()); first <- err }()
		synctest.Wait()
		go func() { _, err := rs.Recv(context.Background()); second <- err }()
		synctest.Wait()
		select {
		case err := <-first:
			t.Fatalf("Recv returned %v before the stream was settled", err)
		default:
		}
		if got := rs.recvTurn.waiters.Load(); got != 1 {
			t.Fatalf("%d Recvs wait for the receive turn, want 1", got)
		}
		if !rs.settle(g, nil) {
			t.Fatal("settle of an unsettled stream did nothing")
		}
		if err := <-first; err != io.EOF {
			t.Fatalf("Recv after the last stream settled = %v, want io.EOF", err)
		}
		if err := <-second; err != io.EOF {
			t.Fatalf("the Recv behind it = %v, want io.EOF", err)
		}
		if rs.settle(g, nil) {
			t.Fatal("a second settle of the same stream counted")
		}
	})
}

// TestRotatingFinal: what Recv decides from the newest stream whose end
// it took, in each state (finalLocked). While that stream is not settled,
// the look returns the channel to wait on, taken under the lock that
// settling holds: the settle that follows closes it, however soon after
// the look it comes. (Recv used to look at the settled flag a second
// time, after the look that found the call not over, and to wait on
// nothing but new items when the stream had been settled in between:
// TestRotationManyCalls met that hang about once in a hundred loaded
// runs.)
func TestRotatingFinal(t *testing.T) {
	session := func(ended *generation) *RotatingSession {
		ctx, cancel := context.WithCancelCause(context.Background())
		t.Cleanup(func() { cancel(nil) })
		return &RotatingSession{ctx: ctx, cancel: cancel, items: make(chan rotItem), ended: ended}
	}
	settled := func(n int, next *generation) *generation {
		g := &generation{n: n, recvEnd: io.EOF, next: next}
		g.settled.Store(true)
		return g
	}
	for _, tt := range []struct {
		name string
		rs   *RotatingSession
		want error
	}{
		{"no end taken", session(nil), nil},
		{"a successor follows", session(settled(1, &generation{n: 2})), nil},
		{"a pump has not handed over its end", func() *RotatingSession {
			rs := session(settled(2, nil))
			rs.pumps = 1
			return rs
		}(), nil},
		{"the last stream ended cleanly", session(settled(2, nil)), io.EOF},
		{"the rotator gave up", func() *RotatingSession {
			rs := session(settled(2, nil))
			rs.terminal = &reconnectError{Reconnects: 3, Err: ErrStreamEnded}
			return rs
		}(), &reconnectError{Reconnects: 3, Err: ErrStreamEnded}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			wait, err := tt.rs.finalLocked()
			if wait != nil {
				t.Errorf("a channel to wait on for a settled stream")
			}
			if tt.want == nil && err != nil || tt.want != nil && (err == nil || err.Error() != tt.want.Error()) {
				t.Errorf("finalLocked = %v, want %v", err, tt.want)
			}
		})
	}

	t.Run("not settled yet", func(t *testing.T) {
		g := &generation{n: 2, recvEnd: io.EOF}
		rs := session(g)
		wait, err := rs.finalLocked()
		if wait == nil || err != nil {
			t.Fatalf("finalLocked = %v, %v; want a channel to wait on and no error", wait, err)
		}
		if isClosed(wait) {
			t.Fatal("the channel is closed before the stream is settled")
		}
		rs.settle(g, nil)
		if !isClosed(wait) {
			t.Fatal("settling the stream did not close the channel Recv waits on")
		}
		if wait, err := rs.finalLocked(); wait != nil || err != io.EOF {
			t.Fatalf("finalLocked once settled = %v, %v; want io.EOF", wait, err)
		}
	})
}
