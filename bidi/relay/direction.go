package relay

import (
	"sync/atomic"

	"github.com/sagemaker-bidi/sagemaker-bidi/bidi"
)

// busyHanded is a direction's busy value once the watchdog handed its
// producer's delivery off: another goroutine produces.
const busyHanded = -1

// A direction is one way through a call: a producer role (reading one
// side: readClient or recvModel), a queue, and the delivery to the other
// side (sendOne or writeOne).
//
// The producer delivers a message itself when the queue is empty and
// has no consumer (queue.claim): no goroutine is woken on the hot path.
// Otherwise it pushes, and the queue's consumer (consume, started by the
// queue's spawn) delivers. When a delivery of its own blocks (see
// watchTick), the Handler's watchdog hands the producer role to a fresh
// goroutine, and the blocked one becomes the queue's consumer once its
// delivery returns: the producer keeps reading, and the bounded queue and
// its overflow policy apply as if the message had been queued.
//
// The producer role is one goroutine at a time. busy is its: 0 while it
// is not delivering, the watchdog's stamp while it delivers, and
// busyHanded once the watchdog took the role from it (the watchdog only
// moves a stamp to busyHanded).
type direction struct {
	c       *call
	q       *queue
	produce func() (handed bool)      // the producer's loop; true once it handed its role on
	ended   func()                    // the producer's end: the side it reads is over
	deliver func(m bidi.Message) bool // delivers one message; false: no more deliveries
	drained func()                    // the consumer's end, once the queue is closed and drained
	recycle func([]byte)              // if set, takes back the buffer of a message the producer read, once the call is done with it

	busy     atomic.Int64
	watchIdx int // index in the watchdog's dirs; guarded by its mu
}

// run is the producer role on this goroutine, until its side ends or it
// hands the role on.
func (d *direction) run() {
	if !d.produce() {
		d.ended()
	}
}

// accept takes the producer's next message: it delivers m itself when
// the queue can be claimed, else pushes a copy of it (dropOldest as
// push). Either way m.Data then goes to recycle. It reports whether the
// producer goes on reading on this goroutine (handed false) and whether
// m was refused for lack of room (ok false: nothing was queued).
func (d *direction) accept(m bidi.Message, dropOldest bool) (dropped int, ok, handed bool) {
	if d.q.claim() {
		if testHookPush != nil {
			testHookPush(d == &d.c.in, 0, true)
		}
		return 0, true, !d.deliverInline(m)
	}
	dropped, ok = d.q.push(m, dropOldest)
	d.release(m.Data)
	if testHookPush != nil {
		testHookPush(d == &d.c.in, dropped, ok)
	}
	return dropped, ok, false
}

// release gives a buffer the producer read back to recycle, if set.
func (d *direction) release(b []byte) {
	if d.recycle != nil {
		d.recycle(b)
	}
}

// deliverInline delivers m on the producer's goroutine, with the queue
// claimed, and reports whether this goroutine is still the producer. If
// the watchdog found the delivery blocked, a fresh goroutine has taken
// over producing; this one then drains the queue as its consumer and
// reports false.
func (d *direction) deliverInline(m bidi.Message) bool {
	w := &d.c.h.watch
	s := w.begin(d)
	ok := d.deliver(m)
	d.release(m.Data)
	if w.end(d, s) {
		if ok && d.q.unclaim() {
			d.c.spawn(d.consume) // a close arrived meanwhile: its end is the consumer's
		}
		return true
	}
	// The new producer cannot claim the queue while this goroutine holds
	// it, so 0 is safe to store before consuming.
	d.busy.Store(0)
	if ok {
		d.consume()
	}
	return false
}

// consume is the queue's consumer: it delivers the queued messages until
// the queue is empty (it returns; the next push spawns another), a
// delivery fails (it returns, and the queue stays claimed: nothing more
// is delivered) or the queue is closed and drained (it runs drained).
func (d *direction) consume() {
	for {
		m, res := d.q.take()
		switch res {
		case idle:
			return
		case drained:
			d.drained()
			return
		}
		ok := d.deliver(m)
		putBuf(m.Data) // take's
		if !ok {
			return
		}
	}
}
