package bidi

import (
	"context"
	"errors"
)

// ctxLock is a mutex whose waiters can give up: Lock returns when the lock
// is taken, when ctx ends or when one of the stop channels is closed. It
// serialises Send calls, Recv calls, and the reads of a shared
// Options.PaddingSource, without a context stored anywhere.
type ctxLock chan struct{}

func newCtxLock() ctxLock { return make(ctxLock, 1) }

// errLockStopped is returned by Lock when a stop channel closed first.
var errLockStopped = errors.New("bidi: wait for lock stopped")

// Lock takes the lock. It returns nil once held; ctx's error if ctx ends
// first; errLockStopped if stop1 or stop2 (either may be nil) is closed
// first.
func (l ctxLock) Lock(ctx context.Context, stop1, stop2 <-chan struct{}) error {
	select {
	case l <- struct{}{}:
		return nil
	default:
	}
	select {
	case l <- struct{}{}:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	case <-stop1:
		return errLockStopped
	case <-stop2:
		return errLockStopped
	}
}

// TryLock takes the lock if it is free and reports whether it did.
func (l ctxLock) TryLock() bool {
	select {
	case l <- struct{}{}:
		return true
	default:
		return false
	}
}

// LockAlways takes the lock, waiting as long as it takes.
func (l ctxLock) LockAlways() { l <- struct{}{} }

// Unlock releases the lock.
func (l ctxLock) Unlock() { <-l }

// signal sends on a channel of capacity 1 without waiting: a wake-up that
// is not lost if the receiver is not waiting yet, and not repeated.
func signal(c chan struct{}) {
	select {
	case c <- struct{}{}:
	default:
	}
}
