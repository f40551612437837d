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
// charged its buffer's capacity plus messageOverhead; the queue takes a
// message while it holds less than limit, so it never holds more than
// limit plus one message.
//
// The consumer runs only while there is work: push (or close) calls spawn
// when no consumer is running, and the consumer returns when take finds
// the queue empty, so that an idle call holds no goroutine for it. A
// producer that finds the queue empty and unconsumed may claim it and
// deliver its message itself (see claim), the common case of a call that
// keeps up. Fields
// below mu are guarded by it; limit, release and spawn are set before
// the first push.
type queue struct {
	limit   int
	release func([]byte) // if set, gets the buffer of each dropped message
	spawn   func()       // if set, starts a consumer; called outside the lock

	mu        sync.Mutex
	items     []bidi.Message // items[head:] are queued
	head      int
	bytes     int  // charged bytes of items[head:]
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

func cost(m bidi.Message) int { return cap(m.Data) + messageOverhead }

// push appends m, and spawns a consumer if none is running. When the
// queue is full (it holds limit bytes or more), dropOldest removes queued
// messages (oldest binary first) until it is not and reports how many;
// otherwise push refuses with ok false and queues nothing. A push after
// close is ignored (ok true).
func (q *queue) push(m bidi.Message, dropOldest bool) (dropped int, ok bool) {
	q.mu.Lock()
	if q.closed {
		q.mu.Unlock()
		return 0, true
	}
	c := cost(m)
	for q.bytes >= q.limit && q.head < len(q.items) {
		if !dropOldest {
			q.mu.Unlock()
			return 0, false
		}
		q.dropOneLocked()
		dropped++
	}
	if q.head > 0 && q.head >= len(q.items)/2 {
		// Move the queued messages to the front, so that a queue that is
		// never empty does not grow its array forever.
		n := copy(q.items, q.items[q.head:])
		clear(q.items[n:])
		q.items, q.head = q.items[:n], 0
	}
	q.items = append(q.items, m)
	q.bytes += c
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
	if q.closed || q.consuming || q.spawn == nil || q.head < len(q.items) {
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
	if q.closed || q.head < len(q.items) {
		return true
	}
	q.consuming = false
	return false
}

// dropOneLocked removes the oldest binary message, or the oldest one if
// every queued message is text.
func (q *queue) dropOneLocked() {
	i := q.head
	for j := q.head; j < len(q.items); j++ {
		if q.items[j].Type == bidi.DataTypeBinary {
			i = j
			break
		}
	}
	q.bytes -= cost(q.items[i])
	if q.release != nil {
		q.release(q.items[i].Data)
	}
	copy(q.items[i:], q.items[i+1:])
	q.items[len(q.items)-1] = bidi.Message{}
	q.items = q.items[:len(q.items)-1]
}

// take is the consumer's: it returns the oldest message (taken), or
// tells the consumer to return, because the queue is empty (idle) or
// closed and empty (drained). After idle the next push spawns a new
// consumer; after drained none is spawned again.
func (q *queue) take() (bidi.Message, takeResult) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.head < len(q.items) {
		m := q.items[q.head]
		q.items[q.head] = bidi.Message{}
		q.head++
		q.bytes -= cost(m)
		if q.head == len(q.items) {
			q.items, q.head = q.items[:0], 0
		}
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
	return q.bytes, len(q.items) - q.head
}
