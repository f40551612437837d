package transport

import (
	"testing"
	"testing/synctest"
	"time"
)

// TestActivity: the writer's measure of "many streams" for coalescing
// counts the streams that sent data in the current window or the one
// before, each once, and forgets them once they have been quiet for two
// windows; streams that are open and quiet never count.
func TestActivity(t *testing.T) {
	a := activity{win: 1}
	t0 := time.Unix(1000, 0)
	a.roll(t0) // the first flush starts a window
	streams := make([]*Stream, 40)
	for i := range streams {
		streams[i] = &Stream{}
	}

	// 40 streams send, some many times: 40, once each.
	for range 3 {
		for _, s := range streams {
			a.note(s)
		}
	}
	if got := a.streams(); got != 40 {
		t.Fatalf("streams() = %d after 40 streams sent, want 40", got)
	}

	// A window later, only 5 of them send: the window before still counts.
	a.roll(t0.Add(activityWindow))
	for _, s := range streams[:5] {
		a.note(s)
	}
	if got := a.streams(); got != 40 {
		t.Fatalf("streams() = %d one window on, want 40 (the window before)", got)
	}

	// Another window: the 40 are forgotten, the 5 remain.
	a.roll(t0.Add(2 * activityWindow))
	if got := a.streams(); got != 5 {
		t.Fatalf("streams() = %d two windows on, want 5", got)
	}
	if 5 >= coalesceStreams {
		t.Fatal("the test needs 5 below coalesceStreams")
	}

	// A flush after a long quiet spell forgets everything.
	a.roll(t0.Add(10 * activityWindow))
	if got := a.streams(); got != 0 {
		t.Fatalf("streams() = %d after a quiet spell, want 0", got)
	}

	// Rolling within a window changes nothing.
	a.note(streams[0])
	a.roll(t0.Add(10*activityWindow + activityWindow/2))
	if got := a.streams(); got != 1 {
		t.Fatalf("streams() = %d, want 1", got)
	}
}

// TestCoalesceOnlyWithManySending: a writer woken right after a flush
// waits out the coalescing window only when many streams sent recently
// and as many are still open; with fewer sending (however many are open)
// or fewer open (many streams that sent one after another, as when
// sessions are opened and closed in turn) it goes on at once. In a
// synctest bubble, whose clock moves only while every goroutine waits,
// the time that passed is exactly how long the writer waited.
func TestCoalesceOnlyWithManySending(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		cc := &conn{done: make(chan struct{})}
		cc.slots = 1000 // open streams alone do not count

		start := time.Now()
		cc.coalesce(start, coalesceStreams-1)
		if waited := time.Since(start); waited != 0 {
			t.Fatalf("few streams sending: waited %v, want no wait", waited)
		}

		start = time.Now()
		cc.coalesce(start, coalesceStreams)
		if waited := time.Since(start); waited != coalesceWindow {
			t.Fatalf("many streams sending: waited %v, want the window (%v)", waited, coalesceWindow)
		}

		cc.slots = 1 // the others sent, and ended
		start = time.Now()
		cc.coalesce(start, 10*coalesceStreams)
		if waited := time.Since(start); waited != 0 {
			t.Fatalf("many streams sent one after another, one open: waited %v, want no wait", waited)
		}
	})
}
