package relay

import (
	"sync"
	"sync/atomic"
	"time"
)

// watchTick is the period of a Handler's watchdog: a delivery that a
// call's producer makes itself is handed off once it has been in
// progress across a whole tick, so after between one and two ticks. A
// delivery that keeps up (a write into a socket with room, a Send the
// session takes) is over in microseconds; one that takes a millisecond is
// blocked on a peer that does not read, and what arrives meanwhile must
// go through the queue and its overflow policy. A goroutine merely
// descheduled that long costs a hand-off it did not need, which is the
// queued path, not an error.
const watchTick = time.Millisecond

// watchIdleTicks is how many ticks without a delivery the watchdog runs
// before it stops; the next delivery starts it again.
const watchIdleTicks = 100

// A watchdog hands off the deliveries of a Handler's calls that block
// (see direction). One timer serves every call, where a timer armed per
// delivery would cost each message a wake-up of the runtime's network
// poller: a delivery only stamps its direction with the current tick.
// The timer runs while calls deliver and stops once they have been quiet
// for watchIdleTicks.
//
// A tick looks at the calls' directions only while a delivery is in
// progress (delivering > 0). Most ticks find none: a delivery that keeps
// up lasts microseconds, and one handed off no longer counts. So the
// thousand calls of clients that stopped reading, whose messages go
// through their queues, cost a tick nothing, where a tick that read
// every direction's stamp took 18 µs at 10,000 calls even with all of
// them in cache (BenchmarkWatchdogTick). The count is consistent when a
// call's directions are removed: its cleanup waits for its deliveries.
//
// Fields below mu are guarded by it; idle and timer belong to the tick
// (timer is set under mu by the first start).
type watchdog struct {
	tick       atomic.Int64 // ticks so far
	active     atomic.Bool  // a delivery started since the last tick
	running    atomic.Bool  // the timer is armed, or a tick is running
	delivering atomic.Int64 // directions whose busy is a stamp (> 0)
	idle       int          // consecutive ticks without a delivery

	mu     sync.Mutex
	timer  *time.Timer
	dirs   []*direction // the directions of the calls in progress
	scans  int          // ticks that looked at dirs (for the tests)
	closed bool
}

// begin marks the start of d's delivery: it stamps d's busy with the
// current tick and counts the delivery. It returns the stamp, which end
// takes.
func (w *watchdog) begin(d *direction) int64 {
	s := w.stamp()
	// Counted before it is stamped, uncounted after the stamp is gone
	// (end, or the hand-off): a direction whose busy is a stamp is
	// always counted, so a tick that finds delivering 0 would have found
	// no stamp either.
	w.delivering.Add(1)
	d.busy.Store(s)
	return s
}

// end marks the end of d's delivery stamped s. It reports whether the
// delivery was still d's producer's: false if the watchdog handed the
// producer role off meanwhile (busy is busyHanded).
func (w *watchdog) end(d *direction, s int64) bool {
	if d.busy.CompareAndSwap(s, 0) {
		w.delivering.Add(-1)
		return true
	}
	return false
}

// stamp marks the start of a delivery, whose busy value it returns, and
// starts the watchdog if it is stopped.
func (w *watchdog) stamp() int64 {
	s := w.tick.Load() + 1
	if !w.active.Load() {
		w.active.Store(true)
	}
	if !w.running.Load() {
		w.start()
	}
	return s
}

func (w *watchdog) start() {
	if !w.running.CompareAndSwap(false, true) {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed {
		return
	}
	if w.timer == nil {
		w.timer = time.AfterFunc(watchTick, w.run)
	} else {
		w.timer.Reset(watchTick)
	}
}

// run is one tick: it hands off every delivery that has been in progress
// since before the previous tick, and re-arms or stops.
func (w *watchdog) run() {
	t := w.tick.Add(1)
	busy := false
	w.mu.Lock()
	if w.closed {
		w.mu.Unlock()
		return
	}
	var hand []*direction
	if w.delivering.Load() > 0 {
		w.scans++
		for _, d := range w.dirs {
			s := d.busy.Load()
			if s <= 0 {
				continue
			}
			busy = true
			if s < t && d.busy.CompareAndSwap(s, busyHanded) {
				w.delivering.Add(-1)
				hand = append(hand, d)
			}
		}
	}
	w.mu.Unlock()
	for _, d := range hand {
		d.c.spawn(d.run)
	}

	if busy || w.active.Swap(false) {
		w.idle = 0
	} else if w.idle++; w.idle >= watchIdleTicks {
		// Stop, unless a delivery started meanwhile: it either saw
		// running true before this store (and is seen by the rescan)
		// or sees it false and starts the watchdog itself.
		w.idle = 0
		w.running.Store(false)
		if !w.anyBusy() && !w.active.Load() {
			return
		}
		if !w.running.CompareAndSwap(false, true) {
			return // the delivery started it
		}
	}
	w.mu.Lock()
	if !w.closed {
		w.timer.Reset(watchTick)
	}
	w.mu.Unlock()
}

func (w *watchdog) anyBusy() bool { return w.delivering.Load() > 0 }

// add registers a call's directions; remove unregisters them.
func (w *watchdog) add(ds ...*direction) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, d := range ds {
		d.watchIdx = len(w.dirs)
		w.dirs = append(w.dirs, d)
	}
}

func (w *watchdog) remove(ds ...*direction) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, d := range ds {
		i, last := d.watchIdx, len(w.dirs)-1
		w.dirs[i] = w.dirs[last]
		w.dirs[i].watchIdx = i
		w.dirs[last] = nil
		w.dirs = w.dirs[:last]
	}
}

// close stops the watchdog for good.
func (w *watchdog) close() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.closed = true
	if w.timer != nil {
		w.timer.Stop()
	}
}
