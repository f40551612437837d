package bidi

import (
	"context"
	"math/rand/v2"
	"time"
)

// retryBaseDelay is the first backoff step of a retried open.
const retryBaseDelay = 50 * time.Millisecond

// backoff returns the full-jitter delay before attempt n+1 after n failed
// attempts: uniform in [0, min(maxDelay, base·2^(n-1))].
func backoff(n int, maxDelay time.Duration) time.Duration {
	ceil := retryBaseDelay
	for i := 1; i < n && ceil < maxDelay; i++ {
		ceil *= 2
	}
	ceil = min(ceil, maxDelay)
	if ceil <= 0 {
		return 0
	}
	return rand.N(ceil + 1)
}

// sleepCtx waits for d or until ctx is done; it reports whether the full
// delay elapsed.
func sleepCtx(ctx context.Context, d time.Duration) bool {
	if d <= 0 {
		return ctx.Err() == nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}
