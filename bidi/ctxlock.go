package bidi

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
)

// ctxLock is a mutex whose waiters can give up: Lock returns when the lock
// is taken, when ctx ends or when one of the stop channels is closed. It
// serialises the reads of a client's shared Options.PaddingSource, and a
// RotatingSession's Send and Recv calls, without a context stored
// anywhere. (A Session's own calls take turns instead: see turn, which
// borrows the session's mutex and channel rather than having its own.)
//
// Taking a free lock and releasing one nobody waits for are one atomic
// operation each; the wake channel is used only when the lock is
// contended, and made then. Like sync.Mutex it is not fair: a Lock that
// finds the lock free takes it even while others wait. The zero value is
// an unlocked lock; a ctxLock must not be copied after first use.
type ctxLock struct {
	held    atomic.Bool
	waiters atomic.Int32 // Locks in lockSlow

	mu   sync.Mutex    // guards wake
	wake chan struct{} // cap 1: the lock was released while someone waited; nil until first needed
}

// wakeCh returns the wake channel, making it on first use.
func (l *ctxLock) wakeCh() chan struct{} {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.wake == nil {
		l.wake = make(chan struct{}, 1)
	}
	return l.wake
}

// errLockStopped is returned by Lock when a stop channel closed first.
var errLockStopped = errors.New("bidi: wait for lock stopped")

// Lock takes the lock. It returns nil once held; ctx's error if ctx ends
// first; errLockStopped if stop1 or stop2 (either may be nil) is closed
// first.
func (l *ctxLock) Lock(ctx context.Context, stop1, stop2 <-chan struct{}) error {
	if l.held.CompareAndSwap(false, true) {
		return nil
	}
	return l.lockSlow(ctx, stop1, stop2)
}

// lockSlow waits for the lock. Announcing the waiter before the retry
// closes the gap with Unlock: either Unlock sees the waiter and leaves a
// token in wake, or the retry sees the lock free. A token left for a
// waiter that gave up wakes the next one, which retries; a stale one costs
// a retry.
func (l *ctxLock) lockSlow(ctx context.Context, stop1, stop2 <-chan struct{}) error {
	l.waiters.Add(1)
	defer l.waiters.Add(-1)
	wake := l.wakeCh()
	for {
		if l.held.CompareAndSwap(false, true) {
			return nil
		}
		if err := awaitWake(ctx, wake, stop1, stop2); err != nil {
			return err
		}
	}
}

// awaitWake waits for a receive from wake. It returns nil then; ctx's
// error if ctx ends first; errLockStopped if stop1 or stop2 (either may be
// nil) is closed first.
func awaitWake(ctx context.Context, wake, stop1, stop2 <-chan struct{}) error {
	select {
	case <-wake:
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
func (l *ctxLock) TryLock() bool { return l.held.CompareAndSwap(false, true) }

// LockAlways takes the lock, waiting as long as it takes.
func (l *ctxLock) LockAlways() {
	if !l.held.CompareAndSwap(false, true) {
		l.lockSlow(context.Background(), nil, nil)
	}
}

// Unlock releases the lock, waking a waiter if there is one.
func (l *ctxLock) Unlock() {
	l.held.Store(false)
	if l.waiters.Load() > 0 {
		signal(l.wakeCh())
	}
}

// signal sends on a channel of capacity 1 without waiting: a wake-up that
// is not lost if the receiver is not waiting yet, and not repeated.
func signal(c chan struct{}) {
	select {
	case c <- struct{}{}:
	default:
	}
}

// turn serialises a session's senders, or its receivers, without a lock
// or channel of its own: taking a free turn and releasing one nobody
// waits for are one atomic operation each, and a caller that finds the
// turn held waits on the session's broadcast (sendPipe.moved, under
// sendPipe.mu), so that its wait ends when its context ends or a stop
// channel closes, as with ctxLock. A release with waiters wakes them all,
// and the first to look takes the turn (not fair, like sync.Mutex). The
// zero value is a free turn; a turn must not be copied after first use.
type turn struct {
	held    atomic.Bool
	waiters atomic.Int32 // callers in takeTurn's slow path
}

// takeTurn takes t. It returns nil once held; ctx's error if ctx ends
// first; errLockStopped if stop1 or stop2 (either may be nil) is closed
// first. p.mu is not held.
func (p *sendPipe) takeTurn(ctx context.Context, t *turn, stop1, stop2 <-chan struct{}) error {
	if t.held.CompareAndSwap(false, true) {
		return nil
	}
	// Announcing the waiter before looking again under p.mu closes the
	// gap with releaseTurn: either the release sees the waiter and
	// broadcasts after the wait channel was taken, or the look sees the
	// turn free.
	t.waiters.Add(1)
	defer t.waiters.Add(-1)
	for {
		p.mu.Lock()
		if t.held.CompareAndSwap(false, true) {
			p.mu.Unlock()
			return nil
		}
		wait := p.waitLocked()
		p.mu.Unlock()
		if err := awaitWake(ctx, wait, stop1, stop2); err != nil {
			return err
		}
	}
}

// releaseTurn releases t, which the caller holds, and wakes its waiters.
func (p *sendPipe) releaseTurn(t *turn) {
	t.held.Store(false)
	if t.waiters.Load() > 0 {
		p.mu.Lock()
		p.broadcastLocked()
		p.mu.Unlock()
	}
}
