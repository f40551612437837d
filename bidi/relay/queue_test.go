package relay

import (
	"context"
	"testing"

	"github.com/sagemaker-bidi/sagemaker-bidi/bidi"
)

// FuzzQueue runs a script of pushes and pops and checks the queue's
// promises: never more than limit plus one message, FIFO order of what
// survives, drops only under dropOldest (oldest binary first), and every
// message either popped, dropped or refused.
func FuzzQueue(f *testing.F) {
	f.Add([]byte{10, 20, 200, 0, 5, 0x80, 0x81, 7}, true)
	f.Add([]byte{255, 255, 255, 255, 0, 0, 0}, false)
	f.Add([]byte{1, 0x81, 2, 0x82, 3, 0x83, 0, 0, 0, 0}, true)
	f.Fuzz(func(t *testing.T, script []byte, dropOldest bool) {
		const limit = 300
		q := newQueue(limit)
		var (
			next      int   // id of the next message pushed
			queued    []int // ids the model says are queued, oldest first
			isText    = map[int]bool{}
			lastPoped = -1
		)
		for _, op := range script {
			if op == 0 { // pop, when the model says there is something
				if len(queued) == 0 {
					continue
				}
				m, ok := q.pop(context.Background())
				if !ok {
					t.Fatalf("pop failed with %d queued", len(queued))
				}
				id := int(m.Data[0]) | int(m.Data[1])<<8
				if id != queued[0] || id <= lastPoped {
					t.Fatalf("popped %d, want %d (after %d)", id, queued[0], lastPoped)
				}
				lastPoped, queued = id, queued[1:]
				continue
			}
			size := 2 + int(op&0x7f)*3
			typ := bidi.DataTypeBinary
			if op&0x80 != 0 {
				typ = bidi.DataTypeUTF8
			}
			data := make([]byte, size)
			data[0], data[1] = byte(next), byte(next>>8)
			id := next
			next++
			before, _ := q.len()
			dropped, ok := q.push(bidi.Message{Data: data, Type: typ}, dropOldest)
			if !dropOldest && dropped != 0 {
				t.Fatalf("dropped %d without dropOldest", dropped)
			}
			if !ok {
				if dropOldest || before < limit {
					t.Fatalf("refused with %d bytes queued (dropOldest=%v)", before, dropOldest)
				}
				continue
			}
			// Model the drops: oldest binary first, else oldest.
			for range dropped {
				i := 0
				for j, qid := range queued {
					if !isText[qid] {
						i = j
						break
					}
				}
				queued = append(queued[:i], queued[i+1:]...)
			}
			queued = append(queued, id)
			isText[id] = typ == bidi.DataTypeUTF8
			b, n := q.len()
			if n != len(queued) {
				t.Fatalf("queue holds %d, model %d", n, len(queued))
			}
			if b > limit+cost(bidi.Message{Data: data}) && n > 1 {
				t.Fatalf("queue holds %d bytes, over %d plus one message", b, limit)
			}
		}
		q.close()
		for range queued {
			if _, ok := q.pop(context.Background()); !ok {
				t.Fatal("closed queue lost a message")
			}
		}
		if _, ok := q.pop(context.Background()); ok {
			t.Fatal("closed empty queue returned a message")
		}
	})
}

// pop on an empty queue returns when its context ends.
func TestQueuePopContext(t *testing.T) {
	q := newQueue(100)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, ok := q.pop(ctx); ok {
		t.Fatal("pop returned a message from an empty queue")
	}
}
