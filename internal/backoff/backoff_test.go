package backoff

import (
	"context"
	"sync/atomic"
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

// TestSleepStops: a closed stop channel ends the wait at once and Sleep
// reports false; nil stop channels never end it; with d ≤ 0 Sleep only
// looks at them.
func TestSleepStops(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		closed := make(chan struct{})
		close(closed)
		open := make(chan struct{})
		for i := range MaxStops {
			stops := []<-chan struct{}{nil, open, nil}
			stops[i] = closed
			start := time.Now()
			if Sleep(t.Context(), time.Hour, stops...) || time.Since(start) != 0 {
				t.Fatalf("stop %d closed: Sleep = true or returned after %v", i, time.Since(start))
			}
			if Sleep(t.Context(), 0, stops...) {
				t.Fatalf("stop %d closed: Sleep(0) = true", i)
			}
		}
		start := time.Now()
		if !Sleep(t.Context(), time.Second, nil, open) || time.Since(start) != time.Second {
			t.Fatalf("open stops: Sleep(1s) = false or returned after %v", time.Since(start))
		}
		if !Sleep(t.Context(), 0, nil, open) {
			t.Fatal("open stops: Sleep(0) = false")
		}

		// A stop closed while Sleep waits ends the wait then.
		stop := make(chan struct{})
		go func() {
			time.Sleep(200 * time.Millisecond)
			close(stop)
		}()
		start = time.Now()
		if Sleep(t.Context(), time.Hour, stop) || time.Since(start) != 200*time.Millisecond {
			t.Fatalf("stop closed after 200ms: Sleep = true or returned after %v", time.Since(start))
		}
	})
}

// TestSleepTooManyStops: more than MaxStops stop channels is a
// programming error that panics rather than ignoring one.
func TestSleepTooManyStops(t *testing.T) {
	t.Parallel()
	defer func() {
		if recover() == nil {
			t.Fatal("Sleep with MaxStops+1 stop channels did not panic")
		}
	}()
	Sleep(t.Context(), 0, make([]<-chan struct{}, MaxStops+1)...)
}

// TestQuiet: Quiet returns quiet after the later of its call and the
// last activity, each activity during the wait moving its end; done or
// ctx end it at once with false, also when quiet has already passed.
func TestQuiet(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		born := time.Now()
		var last atomic.Int64
		time.Sleep(5 * time.Second) // activity long before the call does not count
		last.Store(int64(time.Second))
		start := time.Now()
		if !Quiet(t.Context(), born, &last, 2*time.Second, nil) || time.Since(start) != 2*time.Second {
			t.Fatalf("no activity: Quiet = false or returned after %v, want 2s", time.Since(start))
		}

		// Activity at +1.5 s and +3 s: quiet ends 2 s after the last.
		go func() {
			time.Sleep(1500 * time.Millisecond)
			last.Store(int64(time.Since(born)))
			time.Sleep(1500 * time.Millisecond)
			last.Store(int64(time.Since(born)))
		}()
		start = time.Now()
		if !Quiet(t.Context(), born, &last, 2*time.Second, nil) || time.Since(start) != 5*time.Second {
			t.Fatalf("activity at 1.5s and 3s: Quiet = false or returned after %v, want 5s", time.Since(start))
		}

		done := make(chan struct{})
		go func() {
			time.Sleep(700 * time.Millisecond)
			close(done)
		}()
		start = time.Now()
		if Quiet(t.Context(), born, &last, 2*time.Second, done) || time.Since(start) != 700*time.Millisecond {
			t.Fatalf("done at 0.7s: Quiet = true or returned after %v", time.Since(start))
		}
		if Quiet(t.Context(), born, &last, 0, done) {
			t.Fatal("done already closed, no quiet to wait: Quiet = true")
		}
		ctx, cancel := context.WithTimeout(t.Context(), 300*time.Millisecond)
		defer cancel()
		start = time.Now()
		if Quiet(ctx, born, &last, time.Hour, nil) || time.Since(start) != 300*time.Millisecond {
			t.Fatalf("ctx ends at 0.3s: Quiet = true or returned after %v", time.Since(start))
		}
	})
}
