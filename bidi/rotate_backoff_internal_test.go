package bidi

import (
	"testing"
	"time"
)

// TestDefaultReconnectBackoff: no wait before the first reconnect in a
// row, then the module's full-jitter backoff: within [0, bound], the
// bound doubling from 100 ms to 5 s, and draws below half the bound (the
// jitter is full, as in the engine's pool and the open's retries).
//
// Not parallel: a paused test of package bidi would count as a goroutine
// of the package in the leak tests' stack scans.
func TestDefaultReconnectBackoff(t *testing.T) {
	if d := defaultReconnectBackoff(1); d != 0 {
		t.Fatalf("reconnect 1: %v, want 0", d)
	}
	for n := 2; n <= 10; n++ {
		bound := min(100*time.Millisecond<<(n-2), 5*time.Second)
		var low bool
		for range 1000 {
			d := defaultReconnectBackoff(n)
			if d < 0 || d > bound {
				t.Fatalf("reconnect %d: %v, want within [0, %v]", n, d, bound)
			}
			low = low || d < bound/2
		}
		if !low {
			t.Errorf("reconnect %d: no draw below %v in 1000 (not full jitter)", n, bound/2)
		}
	}
}
