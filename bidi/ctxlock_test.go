package bidi

import (
	"context"
	"errors"
	"sync"
	"testing"
	"testing/synctest"
)

// TestCtxLockExcludes runs critical sections from many goroutines, with
// Lock given a plain context, a stop channel or a cancellable context
// (none of which ends): a plain counter (checked by the race detector
// too) must count every one, and at most one may be inside at a time.
func TestCtxLockExcludes(t *testing.T) {
	var l ctxLock
	var inside, count int
	const workers, rounds = 8, 2000
	var wg sync.WaitGroup
	never := make(chan struct{})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	for w := range workers {
		wg.Go(func() {
			for i := range rounds {
				var err error
				switch (w + i) % 3 {
				case 0:
					err = l.Lock(context.Background(), nil, nil)
				case 1:
					err = l.Lock(context.Background(), never, nil)
				default:
					err = l.Lock(ctx, nil, never)
				}
				if err != nil {
					t.Errorf("Lock: %v", err)
					return
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
		if err := l.Lock(context.Background(), nil, nil); err != nil || !l.held.Load() {
			t.Fatalf("Lock of a free lock = %v, held %v", err, l.held.Load())
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
		if !l.held.Load() {
			t.Fatal("lock free while a waiter holds it")
		}
		l.Unlock()
		if l.held.Load() || l.waiters.Load() != 0 {
			t.Fatal("lock held or waited for after the last Unlock")
		}
	})
}

// TestCtxLockWakesWaiter checks that Unlock wakes a waiter, also when the
// wait started before the wake channel existed.
func TestCtxLockWakesWaiter(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var l ctxLock
		if err := l.Lock(context.Background(), nil, nil); err != nil {
			t.Fatal(err)
		}
		done := make(chan struct{})
		for range 3 {
			go func() {
				if err := l.Lock(context.Background(), nil, nil); err != nil {
					t.Errorf("Lock: %v", err)
				}
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

// TestTurnExcludes runs critical sections under two turns of one pipe
// from many goroutines while the writer's side broadcasts: a plain
// counter per turn (checked by the race detector too) counts every one,
// and at most one goroutine is inside a turn at a time.
func TestTurnExcludes(t *testing.T) {
	p := newTestPipe(0)
	var turns [2]turn
	var inside, count [2]int
	const workers, rounds = 8, 1000
	var wg sync.WaitGroup
	stop := make(chan struct{})
	wg.Go(func() { // wakes every waiter now and then, as the writer does
		for {
			select {
			case <-stop:
				return
			default:
			}
			p.mu.Lock()
			p.broadcastLocked()
			p.mu.Unlock()
		}
	})
	var workersWG sync.WaitGroup
	for w := range workers {
		workersWG.Go(func() {
			k := w % 2
			for range rounds {
				if err := p.takeTurn(context.Background(), &turns[k], nil, nil); err != nil {
					t.Errorf("takeTurn: %v", err)
					return
				}
				inside[k]++
				if inside[k] != 1 {
					t.Errorf("%d holders of turn %d at once", inside[k], k)
				}
				count[k]++
				inside[k]--
				p.releaseTurn(&turns[k])
			}
		})
	}
	workersWG.Wait()
	close(stop)
	wg.Wait()
	if count[0]+count[1] != workers*rounds {
		t.Fatalf("count = %v, want %d in all", count, workers*rounds)
	}
	for k := range turns {
		if turns[k].waiters.Load() != 0 || turns[k].held.Load() {
			t.Fatalf("turn %d after the last release: held %v, %d waiters", k, turns[k].held.Load(), turns[k].waiters.Load())
		}
	}
}

// TestTurnGiveUp checks the ways a wait for a turn ends without it, that
// the turn is still handed on afterwards, and that a waiter that gives up
// does not take the wake-up of the one behind it.
func TestTurnGiveUp(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := newTestPipe(0)
		var tn turn
		if err := p.takeTurn(context.Background(), &tn, nil, nil); err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		stop := make(chan struct{})
		errs := make(chan error, 2)
		go func() { errs <- p.takeTurn(ctx, &tn, nil, nil) }()
		go func() { errs <- p.takeTurn(context.Background(), &tn, nil, stop) }()
		synctest.Wait()
		if got := waitersOf(&tn); got != 2 {
			t.Fatalf("waiters = %d, want 2", got)
		}
		cancel()
		if err := <-errs; !errors.Is(err, context.Canceled) {
			t.Fatalf("takeTurn with a cancelled ctx = %v, want context.Canceled", err)
		}
		close(stop)
		if err := <-errs; err != errLockStopped {
			t.Fatalf("takeTurn with a closed stop channel = %v, want errLockStopped", err)
		}
		if got := waitersOf(&tn); got != 0 {
			t.Fatalf("waiters = %d after both gave up, want 0", got)
		}

		ctx2, cancel2 := context.WithCancel(context.Background())
		quitter, stayer := make(chan error, 1), make(chan error, 1)
		go func() { quitter <- p.takeTurn(ctx2, &tn, nil, nil) }()
		go func() { stayer <- p.takeTurn(context.Background(), &tn, nil, nil) }()
		synctest.Wait()
		cancel2()
		p.releaseTurn(&tn)
		// The quitter may take the turn before it sees its ctx end; then
		// it hands it on.
		if err := <-quitter; err == nil {
			p.releaseTurn(&tn)
		} else if !errors.Is(err, context.Canceled) {
			t.Fatalf("quitter: %v", err)
		}
		if err := <-stayer; err != nil {
			t.Fatalf("the waiter behind a quitter: %v", err)
		}
		p.releaseTurn(&tn)
		if waitersOf(&tn) != 0 || tn.held.Load() {
			t.Fatal("turn held or waited for after the last release")
		}
	})
}

// TestTurnReleaseQuiet: releasing a turn nobody waits for leaves the
// pipe's other waiters (a Send waiting for room) asleep: a Recv returning
// while a Send waits costs that Send no wake-up and no new channel.
func TestTurnReleaseQuiet(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := newTestPipe(0)
		var send, recv turn
		if err := p.takeTurn(context.Background(), &recv, nil, nil); err != nil {
			t.Fatal(err)
		}
		p.mu.Lock()
		room := p.waitLocked() // a Send waiting for room
		p.mu.Unlock()
		p.releaseTurn(&recv)
		select {
		case <-room:
			t.Fatal("a release with no waiters woke the pipe's waiters")
		default:
		}
		// A turn with a waiter wakes it (and, sharing the broadcast, the
		// rest).
		if err := p.takeTurn(context.Background(), &send, nil, nil); err != nil {
			t.Fatal(err)
		}
		got := make(chan error, 1)
		go func() { got <- p.takeTurn(context.Background(), &send, nil, nil) }()
		synctest.Wait()
		if waitersOf(&send) != 1 {
			t.Fatal("the second takeTurn does not wait")
		}
		p.releaseTurn(&send)
		if err := <-got; err != nil {
			t.Fatal(err)
		}
		select {
		case <-room:
		default:
			t.Fatal("a release with a waiter did not broadcast")
		}
	})
}

func waitersOf(t *turn) int { return int(t.waiters.Load()) }
