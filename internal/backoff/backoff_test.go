package backoff

import (
	"context"
	"testing"
	"testing/synctest"
	"time"
)

// TestDelayBounds: every delay lies in [0, min(max, base·2^(n-1))], and
// the bound is reached (the jitter is full, not half).
func TestDelayBounds(t *testing.T) {
	t.Parallel()
	const base, max = 10 * time.Millisecond, 100 * time.Millisecond
	for n := 1; n <= 8; n++ {
		ceil := min(base<<(n-1), max)
		var top time.Duration
		for range 2000 {
			d := Delay(n, base, max)
			if d < 0 || d > ceil {
				t.Fatalf("Delay(%d) = %v, want within [0, %v]", n, d, ceil)
			}
			top = maxDur(top, d)
		}
		if top < ceil/2 {
			t.Errorf("Delay(%d) never above %v in 2000 draws, bound %v", n, top, ceil)
		}
	}
	if d := Delay(3, 0, time.Second); d != 0 {
		t.Errorf("Delay with a zero base = %v", d)
	}
}

func maxDur(a, b time.Duration) time.Duration {
	if a > b {
		return a
	}
	return b
}

// TestSleep: Sleep waits the whole delay, or returns false as soon as ctx
// ends, in the fake time of a synctest bubble.
func TestSleep(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		start := time.Now()
		if !Sleep(t.Context(), time.Second) || time.Since(start) != time.Second {
			t.Fatalf("Sleep(1s) = false or returned after %v", time.Since(start))
		}
		ctx, cancel := context.WithTimeout(t.Context(), 300*time.Millisecond)
		defer cancel()
		start = time.Now()
		if Sleep(ctx, time.Hour) || time.Since(start) != 300*time.Millisecond {
			t.Fatalf("Sleep past ctx's deadline returned true or after %v", time.Since(start))
		}
		if Sleep(ctx, 0) {
			t.Fatal("Sleep(0) on a done ctx = true")
		}
		if !Sleep(t.Context(), 0) {
			t.Fatal("Sleep(0) on a live ctx = false")
		}
	})
}
