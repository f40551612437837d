package bidi

import (
	"testing"
	"time"
)

// The replay window is bounded by bytes and by age, oldest first, and
// its backing array does not grow with the number of messages added.
func TestReplayWindowBounds(t *testing.T) {
	w := newReplayWindow(time.Second, 64<<10)
	t0 := time.Unix(0, 0)
	data := make([]byte, 640)
	for i := range 10000 {
		w.add(int64(i), int64(i)*640, t0.Add(time.Duration(i)*time.Millisecond), 1, Binary(data))
		if w.bytes > 64<<10 {
			t.Fatalf("after %d messages: %d bytes kept, bound 64 KiB", i+1, w.bytes)
		}
	}
	kept := w.kept[w.head:]
	if n := len(kept); n != 64<<10/640 || kept[n-1].seq != 9999 || kept[0].off != kept[0].seq*640 {
		t.Fatalf("%d kept, last %d, first %+v; want the newest %d", n, kept[n-1].seq, kept[0], 64<<10/640)
	}
	if c := cap(w.kept); c > 4*(64<<10/640) {
		t.Fatalf("backing array of %d entries for %d kept", c, len(kept))
	}
	// By age: the messages sent within a second before end.
	w = newReplayWindow(100*time.Millisecond, 0)
	if w.maxBytes != DefaultReplayBytes {
		t.Fatalf("maxBytes %d, want DefaultReplayBytes", w.maxBytes)
	}
	for i := range 50 {
		w.add(int64(i), 0, t0.Add(time.Duration(i)*10*time.Millisecond), 1+i/25, Binary(data))
	}
	if got := w.since(t0.Add(490 * time.Millisecond)); len(got) != 11 || got[0].seq != 39 {
		t.Fatalf("since 490 ms: %d kept from %d, want 11 from 39", len(got), got[0].seq)
	}
	w.answered(1) // generation 1 had messages 0-24: all older than the window already
	if got := w.since(t0.Add(490 * time.Millisecond)); len(got) != 11 {
		t.Fatalf("answered(1) dropped messages of generation 2: %d left", len(got))
	}
	w.answered(2)
	if got := w.since(t0.Add(490 * time.Millisecond)); len(got) != 0 || w.bytes != 0 {
		t.Fatalf("answered(2): %d left, %d bytes", len(got), w.bytes)
	}
	// A message over the bound is not kept, and nothing older is either
	// (a replay must not skip it).
	w = newReplayWindow(0, 1000)
	w.add(0, 0, t0, 1, Binary(data))
	w.add(1, 640, t0, 1, Binary(make([]byte, 1001)))
	if len(w.since(t0)) != 0 || w.bytes != 0 {
		t.Fatalf("after an oversized message: %d kept", len(w.since(t0)))
	}
	if newReplayWindow(0, 0) != nil {
		t.Fatal("a window with no bounds set is not nil")
	}
}
