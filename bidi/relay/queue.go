package relay

import (
	"sync"

	"github.com/sagemaker-bidi/sagemaker-bidi/bidi"
)

// messageOverhead is what a queue charges per message on top of its
// length, so that a flood of empty messages is bounded too.
const messageOverhead = 64

// queue is one direction of a call: a FIFO of messages bounded in bytes,
// with one producer and at most one consumer at a time. Each message is
// charged its length plus messageOverhead; the queue takes a message
// while it holds less than limit, so it never holds more than limit plus
// one message. The messages are copied into one ring of bytes (see ring):
// a queued message costs its payload and a few bytes of header, and an
// empty queue holds no buffer.
//
// The consumer runs only while there is work: push (or close) calls spawn
// when no consumer is running, and the consumer returns when take finds
// the queue empty, so that an idle call holds no goroutine for it. A
// producer that finds the queue empty and unconsumed may claim it and
// deliver its message itself (see claim), the common case of a call that
// keeps up. Fields
// below mu are guarded by it; limit and spawn are set before the first
// push.
type queue struct {
	limit int
	spawn func() // if set, starts a consumer; called outside the lock

	mu        sync.Mutex
	ring      ring // the queued messages, oldest first
	n         int  // messages queued
	bytes     int  // charged bytes of the queued messages
	closed    bool // no more pushes; take drains, then reports drained
	consuming bool // a consumer is running, or the end was handed to one
}

// What take found.
type takeResult int

const (
	taken   takeResult = iota // the oldest message, now the consumer's
	idle                      // empty and open: the consumer returns; the next push spawns another
	drained                   // closed and empty: the consumer does the direction's end and returns
)

func newQueue(limit int) *queue {
	return &queue{limit: limit}
}

func cost(m bidi.Message) int { return len(m.Data) + messageOverhead }

// push copies m into the queue (the caller keeps m.Data), and spawns a
// consumer if none is running. When the queue is full (it holds limit
// bytes or more), dropOldest removes queued messages (oldest binary
// first) until it is not and reports how many; otherwise push refuses
// with ok false and queues nothing. A push after close is ignored (ok
// true).
func (q *queue) push(m bidi.Message, dropOldest bool) (dropped int, ok bool) {
	q.mu.Lock()
	if q.closed {
		q.mu.Unlock()
		return 0, true
	}
	for q.bytes >= q.limit && q.n > 0 {
		if !dropOldest {
			q.mu.Unlock()
			return 0, false
		}
		q.dropOneLocked()
		dropped++
	}
	q.ring.put(m)
	q.n++
	q.bytes += cost(m)
	start := q.startLocked()
	q.mu.Unlock()
	if start {
		q.spawn()
	}
	return dropped, true
}

// startLocked reports whether a consumer must be spawned, and marks one
// as running.
func (q *queue) startLocked() bool {
	if q.consuming || q.spawn == nil {
		return false
	}
	q.consuming = true
	return true
}

// claim reports whether the producer may deliver its next message
// itself instead of queueing it: the queue is open, empty and without a
// consumer. The producer is then the queue's consumer (pushes queue and
// spawn nothing) until it calls unclaim, or for good if its delivery
// failed, as after a consumer's failed delivery.
func (q *queue) claim() bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.closed || q.consuming || q.spawn == nil || q.n > 0 {
		return false
	}
	q.consuming = true
	return true
}

// unclaim ends a claim. It reports whether work arrived meanwhile (a
// push, or close): the caller then stays the consumer, and must drain the
// queue or spawn one who does.
func (q *queue) unclaim() (more bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.closed || q.n > 0 {
		return true
	}
	q.consuming = false
	return false
}

// dropOneLocked removes the oldest binary message, or the oldest one if
// every queued message is text.
func (q *queue) dropOneLocked() {
	off, size := 0, 0
	for i, at := 0, 0; i < q.n; i++ {
		n, typ := q.ring.header(at)
		if i == 0 {
			size = recordHeader + n
		}
		if typ == bidi.DataTypeBinary {
			off, size = at, recordHeader+n
			break
		}
		at += recordHeader + n
	}
	q.ring.remove(off, size)
	q.n--
	q.bytes -= size - recordHeader + messageOverhead
}

// take is the consumer's: it returns the oldest message (taken), whose
// Data is a pooled buffer the consumer gives back (putBuf) once it is
// delivered, or tells the consumer to return, because the queue is empty
// (idle) or closed and empty (drained). After idle the next push spawns a
// new consumer; after drained none is spawned again.
func (q *queue) take() (bidi.Message, takeResult) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.n > 0 {
		m := q.ring.pop()
		q.n--
		q.bytes -= cost(m)
		return m, taken
	}
	if q.closed {
		return bidi.Message{}, drained
	}
	q.consuming = false
	return bidi.Message{}, idle
}

// close ends the queue: queued messages are still taken, then take
// reports drained. If no consumer is running, close spawns one for the
// end.
func (q *queue) close() {
	q.mu.Lock()
	if q.closed {
		q.mu.Unlock()
		return
	}
	q.closed = true
	start := q.startLocked()
	q.mu.Unlock()
	if start {
		q.spawn()
	}
}

// len returns the charged bytes and the number of queued messages.
func (q *queue) len() (bytes, n int) {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.bytes, q.n
}
