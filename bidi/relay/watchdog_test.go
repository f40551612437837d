package relay

import (
	"fmt"
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

	s := w.begin(d)
	w.run() // the tick the delivery started before
	if d.busy.Load() != s || len(handed) != 0 {
		t.Fatal("handed off before a whole tick passed")
	}
	if !w.end(d, s) { // delivered
		t.Fatal("the delivery was taken from its producer")
	}
	w.run()
	if len(handed) != 0 {
		t.Fatal("a finished delivery was handed off")
	}

	s = w.begin(d)
	w.run()
	w.run()
	<-handed // the producer role runs on a fresh goroutine
	if d.busy.Load() != busyHanded {
		t.Fatalf("busy %d after the hand-off, want busyHanded", d.busy.Load())
	}
	if w.end(d, s) {
		t.Fatal("the blocked producer still believes it produces")
	}
	if n := w.delivering.Load(); n != 0 {
		t.Fatalf("%d deliveries counted after the hand-off, want 0", n)
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

// A tick looks at the calls' directions only while a delivery is in
// progress: the directions of a thousand calls whose deliveries are idle
// or handed off are not read every millisecond.
func TestWatchdogScansOnlyWhileDelivering(t *testing.T) {
	w, d, handed := newManualWatchdog(t)
	for range 1000 {
		w.add(&direction{c: &call{}})
	}
	for range 10 {
		w.run()
	}
	if w.scans != 0 {
		t.Fatalf("%d scans with no delivery in progress, want 0", w.scans)
	}

	s := w.begin(d)
	w.run()
	if w.scans != 1 {
		t.Fatalf("%d scans with a delivery in progress, want 1", w.scans)
	}
	w.run() // hands it off: no longer counted
	<-handed
	for range 10 {
		w.run()
	}
	if w.scans != 2 {
		t.Fatalf("%d scans after the hand-off, want 2", w.scans)
	}
	w.end(d, s)

	// Deliveries that end between ticks leave nothing to look at.
	for range 5 {
		s := w.begin(d)
		if !w.end(d, s) {
			t.Fatal("a delivery between ticks was handed off")
		}
		w.run()
	}
	if w.scans != 2 || w.delivering.Load() != 0 {
		t.Fatalf("scans %d, delivering %d after deliveries between ticks; want 2 and 0", w.scans, w.delivering.Load())
	}
}

// BenchmarkWatchdogTick is one tick of a Handler's watchdog with n calls
// whose deliveries are idle or handed off (clients that stopped reading),
// while one delivery of another call is in progress and while none is.
func BenchmarkWatchdogTick(b *testing.B) {
	for _, n := range []int{100, 10000} {
		for _, delivering := range []bool{false, true} {
			b.Run(fmt.Sprintf("calls=%d/delivering=%t", n, delivering), func(b *testing.B) {
				w := &watchdog{}
				w.timer = time.AfterFunc(time.Hour, func() {})
				defer w.close()
				w.running.Store(true)
				for i := range n {
					c := &call{}
					w.add(&c.in, &c.out)
					if i%2 == 0 {
						c.out.busy.Store(busyHanded)
					}
				}
				if delivering {
					c := &call{}
					w.add(&c.in)
					w.begin(&c.in)
					c.in.busy.Store(1 << 62) // a stamp ahead of every tick: never handed off
				}
				b.ReportAllocs()
				for b.Loop() {
					w.run()
				}
			})
		}
	}
}
