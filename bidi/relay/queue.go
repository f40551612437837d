package relay

import (
	"context"
	"sync"

	"github.com/sagemaker-bidi/sagemaker-bidi/bidi"
)

// messageOverhead is what a queue charges per message on top of its
// length, so that a flood of empty messages is bounded too.
const messageOverhead = 64

// queue is one direction of a call: a FIFO of messages bounded in bytes,
// with one producer and one consumer. Each message is charged its
// buffer's capacity plus messageOverhead; the queue takes a message while it holds less than
// limit, so it never holds more than limit plus one message.
//
// Fields are guarded by mu; ready is signalled (without blocking) after
// every push and at close.
type queue struct {
	limit   int
	ready   chan struct{}
	release func([]byte) // if set, gets the buffer of each dropped message

	mu     sync.Mutex
	items  []bidi.Message // guarded by mu; items[head:] are queued
	head   int            // guarded by mu
	bytes  int            // guarded by mu: charged bytes of items[head:]
	closed bool           // guarded by mu: no more pushes; pop drains then reports the end
}

func newQueue(limit int) *queue {
	return &queue{limit: limit, ready: make(chan struct{}, 1)}
}

// cost is what m is charged: the memory it holds (its buffer may be a
// pooled one larger than the message) and the overhead.
func cost(m bidi.Message) int { return cap(m.Data) + messageOverhead }

// push appends m. When the queue is full (it holds limit bytes or more),
// dropOldest removes queued messages (oldest binary first) until it is
// not and reports how many; otherwise push refuses with ok false and
// queues nothing. A push after close is ignored (ok true).
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
	q.mu.Unlock()
	q.signal()
	return dropped, true
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

// pop returns the oldest message, waiting for one. It returns ok false
// once the queue is closed and empty, or when ctx ends.
func (q *queue) pop(ctx context.Context) (bidi.Message, bool) {
	for {
		q.mu.Lock()
		if q.head < len(q.items) {
			m := q.items[q.head]
			q.items[q.head] = bidi.Message{}
			q.head++
			q.bytes -= cost(m)
			q.mu.Unlock()
			return m, true
		}
		closed := q.closed
		q.mu.Unlock()
		if closed {
			return bidi.Message{}, false
		}
		select {
		case <-q.ready:
		case <-ctx.Done():
			return bidi.Message{}, false
		}
	}
}

// close ends the queue: queued messages are still popped, then pop
// reports the end.
func (q *queue) close() {
	q.mu.Lock()
	q.closed = true
	q.mu.Unlock()
	q.signal()
}

// len returns the charged bytes and the number of queued messages.
func (q *queue) len() (bytes, n int) {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.bytes, len(q.items) - q.head
}

func (q *queue) signal() {
	select {
	case q.ready <- struct{}{}:
	default:
	}
}
