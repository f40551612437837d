// Package backoff holds the module's one backoff formula and its one
// context-aware sleep: the engine's pool waits with them after failed
// dials and refusals, and package bidi between the attempts of an open.
// (Rotation's reconnects are meant to use them too.)
package backoff

import (
	"context"
	"math/rand/v2"
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

// Sleep waits for d, or until ctx is done, and reports whether all of d
// elapsed with ctx still live. With d ≤ 0 it only reports whether ctx is
// live.
func Sleep(ctx context.Context, d time.Duration) bool {
	if d <= 0 {
		return ctx.Err() == nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return ctx.Err() == nil
	case <-ctx.Done():
		return false
	}
}
