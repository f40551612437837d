package relay

import (
	"sync/atomic"
	"time"

	"github.com/sagemaker-bidi/sagemaker-bidi/bidi"
)

// handoffAfter is how long a producer may spend delivering a message
// itself before a fresh goroutine takes over its reading. A delivery that
// keeps up (a write into a socket with room, a Send the session takes) is
// over in microseconds; one that takes a millisecond is blocked on a peer
// that does not read, and what arrives meanwhile must go through the
// queue and its overflow policy. A goroutine merely descheduled for that
// long costs a hand-off it did not need, which is the queued path, not
// an error.
const handoffAfter = time.Millisecond

// What a direction's producer is doing with a message of its own.
const (
	inlineNone   int32 = iota // not delivering
	inlineBusy                // delivering its message itself
	inlineHanded              // its delivery outlasted handoffAfter: another goroutine produces
)

// A direction is one way through a call: a producer role (reading one
// side: readClient or recvModel), a queue, and the delivery to the other
// side (sendOne or writeOne).
//
// The producer delivers a message itself when the queue is empty and
// has no consumer (queue.claim): no goroutine is woken on the hot path.
// Otherwise it pushes, and the queue's consumer (consume, started by the
// queue's spawn) delivers. When a delivery of its own blocks past
// handoffAfter, the timer hands the producer role to a fresh goroutine,
// and the blocked one becomes the queue's consumer once its delivery
// returns: the producer keeps reading, and the bounded queue and its
// overflow policy apply as if the message had been queued.
//
// The producer role is one goroutine at a time; state and timer belong
// to it (the timer's callback only moves state from busy to handed).
type direction struct {
	c       *call
	q       *queue
	produce func() (handed bool)      // the producer's loop; true once it handed its role on
	ended   func()                    // the producer's end: the side it reads is over
	deliver func(m bidi.Message) bool // delivers one message; false: no more deliveries
	drained func()                    // the consumer's end, once the queue is closed and drained

	state atomic.Int32
	timer *time.Timer // created by the first delivery of the producer's own
}

// run is the producer role on this goroutine, until its side ends or it
// hands the role on.
func (d *direction) run() {
	if !d.produce() {
		d.ended()
	}
}

// accept takes the producer's next message: it delivers m itself when
// the queue can be claimed, else pushes it (dropOldest as push). It
// reports whether the producer goes on reading on this goroutine
// (handed false) and whether m was refused for lack of room (ok false:
// nothing was queued, and m is still the caller's).
func (d *direction) accept(m bidi.Message, dropOldest bool) (dropped int, ok, handed bool) {
	if d.q.claim() {
		if testHookPush != nil {
			testHookPush(d == &d.c.in, 0, true)
		}
		return 0, true, !d.deliverInline(m)
	}
	dropped, ok = d.q.push(m, dropOldest)
	if testHookPush != nil {
		testHookPush(d == &d.c.in, dropped, ok)
	}
	return dropped, ok, false
}

// deliverInline delivers m on the producer's goroutine, with the queue
// claimed, and reports whether this goroutine is still the producer. If
// the delivery outlasts handoffAfter, a fresh goroutine has taken over
// producing; this one then drains the queue as its consumer and reports
// false.
func (d *direction) deliverInline(m bidi.Message) bool {
	d.state.Store(inlineBusy)
	if d.timer == nil {
		d.timer = time.AfterFunc(handoffAfter, d.handOff)
	} else {
		d.timer.Reset(handoffAfter)
	}
	ok := d.deliver(m)
	if d.state.CompareAndSwap(inlineBusy, inlineNone) {
		d.timer.Stop() // a callback already running finds inlineNone
		if ok && d.q.unclaim() {
			d.c.spawn(d.consume) // a close arrived meanwhile: its end is the consumer's
		}
		return true
	}
	// The new producer cannot claim the queue while this goroutine holds
	// it, so inlineNone is safe to store before consuming.
	d.state.Store(inlineNone)
	if ok {
		d.consume()
	}
	return false
}

// handOff is the timer's: a delivery of the producer's own is taking too
// long, so a fresh goroutine takes over producing. A callback of an
// earlier delivery's timer that runs late may hand off a later delivery
// early, which costs a goroutine and nothing else.
func (d *direction) handOff() {
	if d.state.CompareAndSwap(inlineBusy, inlineHanded) {
		d.c.spawn(d.run)
	}
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
		if !d.deliver(m) {
			return
		}
	}
}
