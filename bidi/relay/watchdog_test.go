package relay

import (
	"testing"
	"time"
)

// newManualWatchdog returns a watchdog whose ticks the test runs (its
// timer, armed by run and start, does nothing), and a direction of a
// call registered with it whose producer role reports to handed.
func newManualWatchdog(t *testing.T) (*watchdog, *direction, chan struct{}) {
	w := &watchdog{}
	w.timer = time.AfterFunc(time.Hour, func() {})
	t.Cleanup(w.close)
	w.running.Store(true)
	handed := make(chan struct{}, 10)
	c := &call{}
	d := &direction{c: c, produce: func() bool { handed <- struct{}{}; return true }}
	w.add(d)
	t.Cleanup(c.wg.Wait)
	return w, d, handed
}

// A delivery in progress across a whole tick is handed off, once; one
// that ends before is not.
func TestWatchdogHandsOffBlockedDelivery(t *testing.T) {
	w, d, handed := newManualWatchdog(t)

	s := w.stamp()
	d.busy.Store(s)
	w.run() // the tick the delivery started before
	if d.busy.Load() != s || len(handed) != 0 {
		t.Fatal("handed off before a whole tick passed")
	}
	d.busy.CompareAndSwap(s, 0) // delivered
	w.run()
	if len(handed) != 0 {
		t.Fatal("a finished delivery was handed off")
	}

	s = w.stamp()
	d.busy.Store(s)
	w.run()
	w.run()
	<-handed // the producer role runs on a fresh goroutine
	if d.busy.Load() != busyHanded {
		t.Fatalf("busy %d after the hand-off, want busyHanded", d.busy.Load())
	}
	if d.busy.CompareAndSwap(s, 0) {
		t.Fatal("the blocked producer still believes it produces")
	}
	w.run()
	if len(handed) != 0 {
		t.Fatal("handed off twice")
	}
}

// The watchdog stops after watchIdleTicks ticks without a delivery, and
// a delivery starts it again.
func TestWatchdogStopsWhenIdle(t *testing.T) {
	w, _, _ := newManualWatchdog(t)
	w.stamp()
	w.run() // the tick that sees the delivery
	for i := range watchIdleTicks {
		if !w.running.Load() {
			t.Fatalf("stopped after %d idle ticks", i)
		}
		w.run()
	}
	if w.running.Load() {
		t.Fatalf("running after %d idle ticks", watchIdleTicks)
	}
	w.stamp()
	if !w.running.Load() {
		t.Fatal("a delivery did not start the watchdog")
	}

	// A delivery starts the count again.
	for range watchIdleTicks - 1 {
		w.run()
	}
	w.stamp()
	w.run()
	for range watchIdleTicks - 1 {
		w.run()
	}
	if !w.running.Load() {
		t.Fatal("stopped within watchIdleTicks of a delivery")
	}
	w.run()
	if w.running.Load() {
		t.Fatal("running after watchIdleTicks idle ticks")
	}
}
