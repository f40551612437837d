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
	if w.maxBytes != defaultReplayBytes {
		t.Fatalf("maxBytes %d, want DefaultReplayBytes", w.maxBytes)
	}
	for i := range 50 {
		w.add(int64(i), 0, t0.Add(time.Duration(i)*10*time.Millisecond), 1+i/25, Binary(data))
	}
	if got := w.since(t0.Add(490 * time.Millisecond)); len(got) != 11 || got[0].seq != 39 {
		t.Fatalf("since 490 ms: %d kept from %d, want 11 from 39", len(got), got[0].seq)
	}
	// Clean ends forget a generation's messages only once every older
	// generation's are forgotten too: an older stream still finishing
	// may fail and need its messages replayed.
	w = newReplayWindow(0, 1<<20)
	for i := range 8 {
		w.add(int64(i), 0, t0, 1+i/3, Binary(data)) // generations 1, 1, 1, 2, 2, 2, 3, 3
	}
	w.answered(2)
	if got := w.since(t0); len(got) != 8 {
		t.Fatalf("answered(2) before generation 1 ended: %d left, want 8", len(got))
	}
	w.answered(1)
	if got := w.since(t0); len(got) != 2 || got[0].seq != 6 {
		t.Fatalf("answered(1) after answered(2): %d left, want generation 3's 2", len(got))
	}
	w.answered(3)
	if got := w.since(t0); len(got) != 0 || w.bytes != 0 || len(w.done) != 0 {
		t.Fatalf("answered(3): %d left, %d bytes, %d generations remembered", len(got), w.bytes, len(w.done))
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
