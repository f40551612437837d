package bidi

import (
	"context"
	"errors"
	"sync"
	"testing"
	"testing/synctest"
)

// TestCtxLockExcludes runs critical sections from many goroutines, with
// Lock, LockAlways and TryLock mixed: a plain counter (checked by the race
// detector too) must count every one, and at most one may be inside at a
// time.
func TestCtxLockExcludes(t *testing.T) {
	var l ctxLock
	var inside, count int
	const workers, rounds = 8, 2000
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			for i := range rounds {
				switch (w + i) % 3 {
				case 0:
					if err := l.Lock(context.Background(), nil, nil); err != nil {
						t.Errorf("Lock: %v", err)
						return
					}
				case 1:
					l.LockAlways()
				default:
					for !l.TryLock() {
						if err := l.Lock(context.Background(), nil, nil); err == nil {
							break
						}
					}
				}
				inside++
				if inside != 1 {
					t.Errorf("%d holders at once", inside)
				}
				count++
				inside--
				l.Unlock()
			}
		})
	}
	wg.Wait()
	if count != workers*rounds {
		t.Fatalf("count = %d, want %d", count, workers*rounds)
	}
}

// TestCtxLockGiveUp checks the ways a wait ends without the lock, and that
// the lock is still handed on afterwards.
func TestCtxLockGiveUp(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var l ctxLock
		if !l.TryLock() {
			t.Fatal("TryLock of a free lock failed")
		}
		if l.TryLock() {
			t.Fatal("TryLock of a held lock succeeded")
		}

		ctx, cancel := context.WithCancel(context.Background())
		stop := make(chan struct{})
		errs := make(chan error, 2)
		go func() { errs <- l.Lock(ctx, nil, nil) }()
		go func() { errs <- l.Lock(context.Background(), nil, stop) }()
		synctest.Wait()
		if got := l.waiters.Load(); got != 2 {
			t.Fatalf("waiters = %d, want 2", got)
		}
		cancel()
		if err := <-errs; !errors.Is(err, context.Canceled) {
			t.Fatalf("Lock with a cancelled ctx = %v, want context.Canceled", err)
		}
		close(stop)
		if err := <-errs; err != errLockStopped {
			t.Fatalf("Lock with a closed stop channel = %v, want errLockStopped", err)
		}
		if got := l.waiters.Load(); got != 0 {
			t.Fatalf("waiters = %d after both gave up, want 0", got)
		}

		// A waiter that gives up while the lock is released must not
		// swallow the wake-up of the one behind it.
		ctx2, cancel2 := context.WithCancel(context.Background())
		quitter, stayer := make(chan error, 1), make(chan error, 1)
		go func() { quitter <- l.Lock(ctx2, nil, nil) }()
		go func() { stayer <- l.Lock(context.Background(), nil, nil) }()
		synctest.Wait()
		cancel2()
		l.Unlock()
		// The quitter may take the lock before it sees its ctx end; then
		// it hands it on.
		if err := <-quitter; err == nil {
			l.Unlock()
		} else if !errors.Is(err, context.Canceled) {
			t.Fatalf("quitter: %v", err)
		}
		if err := <-stayer; err != nil {
			t.Fatalf("the waiter behind a quitter: %v", err)
		}
		if l.TryLock() {
			t.Fatal("lock free while a waiter holds it")
		}
		l.Unlock()
		if !l.TryLock() {
			t.Fatal("lock not free after the last Unlock")
		}
	})
}

// TestCtxLockWakesWaiter checks that Unlock wakes a waiter, also when the
// wait started before the wake channel existed.
func TestCtxLockWakesWaiter(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var l ctxLock
		l.LockAlways()
		done := make(chan struct{})
		for range 3 {
			go func() {
				l.LockAlways()
				l.Unlock()
				done <- struct{}{}
			}()
		}
		synctest.Wait()
		l.Unlock()
		for range 3 {
			<-done
		}
		if l.waiters.Load() != 0 {
			t.Fatalf("waiters = %d, want 0", l.waiters.Load())
		}
	})
}
