// Package backoff holds the module's one backoff formula and its one
// context-aware sleep: the engine's pool waits with them after failed
// dials and refusals, package bidi between the attempts of an open, and
// a RotatingSession between its reconnects. Quiet, the same sleep
// stretched by activity, is the wait of a graceful end (Session.Finish,
// and the relay's for a model without Finish).
package backoff

import (
	"context"
	"math/rand/v2"
	"sync/atomic"
	"time"
)

// Delay returns a full-jitter delay before the next try after n
// consecutive failures (n ≥ 1): uniform in [0, min(max, base·2^(n-1))].
// It is 0 when that bound is not positive.
func Delay(n int, base, max time.Duration) time.Duration {
	ceil := base
	for i := 1; i < n && ceil < max; i++ {
		ceil *= 2
	}
	ceil = min(ceil, max)
	if ceil <= 0 {
		return 0
	}
	return rand.N(ceil + 1)
}

// MaxStops is how many stop channels Sleep accepts.
const MaxStops = 3

// Sleep waits for d, or until ctx is done or one of stop is closed, and
// reports whether all of d elapsed with ctx still live and no stop
// closed. With d ≤ 0 it only reports whether ctx is live and no stop is
// closed. A nil stop channel never stops the wait. Sleep panics if given
// more than MaxStops stop channels (a programming error).
func Sleep(ctx context.Context, d time.Duration, stop ...<-chan struct{}) bool {
	if len(stop) > MaxStops {
		panic("backoff: Sleep given more than MaxStops stop channels")
	}
	var s [MaxStops]<-chan struct{}
	copy(s[:], stop)
	if d <= 0 {
		select {
		case <-ctx.Done():
			return false
		case <-s[0]:
			return false
		case <-s[1]:
			return false
		case <-s[2]:
			return false
		default:
			return true
		}
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return ctx.Err() == nil
	case <-ctx.Done():
	case <-s[0]:
	case <-s[1]:
	case <-s[2]:
	}
	return false
}

// Quiet waits until quiet has passed with no activity, and reports
// whether it did. Activity is *last: the time of the latest one, as a
// duration since born (int64(time.Since(born)), stored by its owner);
// the wait is counted from the later of it and Quiet's own call, so
// that activity before the call does not shorten it. It stops and
// reports false once ctx is done or done is closed, which it checks
// before each wait and so also when quiet has already passed.
func Quiet(ctx context.Context, born time.Time, last *atomic.Int64, quiet time.Duration, done <-chan struct{}) bool {
	start := int64(time.Since(born))
	for {
		since := max(last.Load(), start)
		wait := quiet - (time.Since(born) - time.Duration(since))
		if !Sleep(ctx, wait, done) {
			return false
		}
		if wait <= 0 {
			return true
		}
	}
}
