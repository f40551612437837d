package bidi

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
)

// ctxLock is a mutex whose waiters can give up: Lock returns when the lock
// is taken, when ctx ends or when one of the stop channels is closed. It
// serialises the reads of a client's shared Options.PaddingSource, which
// the client's sessions share, without a context stored anywhere. (A
// Session's and a RotatingSession's own calls take turns instead: see
// turn, which borrows the session's mutex and broadcast rather than
// having its own. A ctxLock wakes one waiter per release, not all: many
// sessions may wait for the padding source.)
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
// turn held waits on its host's broadcast (a turnHost: a Session's
// sendPipe, or a RotatingSession), so that its wait ends when its
// context ends or a stop channel closes, as with ctxLock. A release with
// waiters wakes them all, and the first to look takes the turn (not
// fair, like sync.Mutex). The zero value is a free turn; a turn must not
// be copied after first use.
type turn struct {
	held    atomic.Bool
	waiters atomic.Int32 // callers in wait
}

// A turnHost is what the turns of one session wait under: a mutex, and a
// broadcast guarded by it that the host also uses for its other waits
// (closing it wakes every waiter, which looks again under the mutex).
type turnHost interface {
	hostMutex() *sync.Mutex
	waitLocked() <-chan struct{} // the channel the next broadcast closes; the mutex is held
	broadcastLocked()            // wakes every waiter; the mutex is held
}

// take takes t. It returns nil once held; ctx's error if ctx ends first;
// errLockStopped if stop1 or stop2 (either may be nil) is closed first.
// h's mutex is not held.
func (t *turn) take(ctx context.Context, h turnHost, stop1, stop2 <-chan struct{}) error {
	if t.held.CompareAndSwap(false, true) {
		return nil
	}
	return t.wait(ctx, h, stop1, stop2)
}

// wait is take's slow path. Announcing the waiter before looking again
// under h's mutex closes the gap with release: either the release sees
// the waiter and broadcasts after the wait channel was taken, or the look
// sees the turn free.
func (t *turn) wait(ctx context.Context, h turnHost, stop1, stop2 <-chan struct{}) error {
	t.waiters.Add(1)
	defer t.waiters.Add(-1)
	mu := h.hostMutex()
	for {
		mu.Lock()
		if t.held.CompareAndSwap(false, true) {
			mu.Unlock()
			return nil
		}
		wait := h.waitLocked()
		mu.Unlock()
		if err := awaitWake(ctx, wait, stop1, stop2); err != nil {
			return err
		}
	}
}

// release releases t, which the caller holds, and wakes its waiters. h's
// mutex is not held.
func (t *turn) release(h turnHost) {
	t.held.Store(false)
	if t.waiters.Load() > 0 {
		mu := h.hostMutex()
		mu.Lock()
		h.broadcastLocked()
		mu.Unlock()
	}
}

// takeTurn takes t, one of the session's turns, as t.take does.
func (p *sendPipe) takeTurn(ctx context.Context, t *turn, stop1, stop2 <-chan struct{}) error {
	return t.take(ctx, p, stop1, stop2)
}

// releaseTurn releases t, which the caller holds, as t.release does.
func (p *sendPipe) releaseTurn(t *turn) { t.release(p) }

// hostMutex returns the mutex a Session's turns wait under: the pipe's.
func (p *sendPipe) hostMutex() *sync.Mutex { return &p.mu }

// A broadcast wakes every goroutine waiting for a change of a state that
// a mutex guards: a waiter takes the channel under the mutex
// (waitLocked), releases the mutex and waits for it to close; a change
// closes it (wakeLocked), and every waiter looks again. The channel is
// made by the first waiter and cleared when closed: nobody waiting,
// nothing is made or closed. The zero value has no waiter.
type broadcast struct {
	c chan struct{}
}

// waitLocked returns the channel that the next wakeLocked closes. The
// mutex is held.
func (b *broadcast) waitLocked() <-chan struct{} {
	if b.c == nil {
		b.c = make(chan struct{})
	}
	return b.c
}

// wakeLocked wakes every waiter, if there is one. The mutex is held.
func (b *broadcast) wakeLocked() {
	if b.c != nil {
		close(b.c)
		b.c = nil
	}
}
