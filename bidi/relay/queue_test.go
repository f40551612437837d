package relay

import (
	"testing"

	"github.com/sagemaker-bidi/sagemaker-bidi/bidi"
)

// FuzzQueue runs a script of pushes and pops and checks the queue's
// promises: never more than limit plus one message, FIFO order and
// content of what survives, drops only under dropOldest (oldest binary
// first), every message either popped, dropped or refused, and a ring
// buffer no larger than the next size class of what it holds (none
// while empty).
func FuzzQueue(f *testing.F) {
	f.Add([]byte{10, 20, 200, 0, 5, 0x80, 0x81, 7}, true)
	f.Add([]byte{255, 255, 255, 255, 0, 0, 0}, false)
	f.Add([]byte{1, 0x81, 2, 0x82, 3, 0x83, 0, 0, 0, 0}, true)
	// Text ahead of binary, records wrapping around the ring's end: the
	// dropped binary record is cut out from behind the text.
	f.Add([]byte{0x40, 0x40, 0, 0x90, 0x30, 0x30, 0x30, 0, 0x85, 0x30, 0x30, 0x30, 0x30, 0, 0, 0x20}, true)
	f.Fuzz(func(t *testing.T, script []byte, dropOldest bool) {
		const (
			limit     = 300
			maxRecord = recordHeader + 2 + 0x7f*3 // see size below
		)
		q := newQueue(limit)
		var (
			next      int   // id of the next message pushed
			queued    []int // ids the model says are queued, oldest first
			isText    = map[int]bool{}
			sizes     = map[int]int{}
			types     = map[int]bidi.DataType{}
			lastPoped = -1
		)
		for _, op := range script {
			if op == 0 { // pop, when the model says there is something
				if len(queued) == 0 {
					continue
				}
				m, res := q.take()
				if res != taken {
					t.Fatalf("take found %d with %d queued", res, len(queued))
				}
				id := int(m.Data[0]) | int(m.Data[1])<<8
				if id != queued[0] || id <= lastPoped {
					t.Fatalf("popped %d, want %d (after %d)", id, queued[0], lastPoped)
				}
				if want := payload(id, sizes[id]); string(m.Data) != string(want) || m.Type != types[id] {
					t.Fatalf("popped message %d: type %d, %d bytes %x; want type %d, %x", id, m.Type, len(m.Data), m.Data, types[id], want)
				}
				putBuf(m.Data)
				checkRing(t, q, maxRecord)
				lastPoped, queued = id, queued[1:]
				continue
			}
			size := 2 + int(op&0x7f)*3
			typ := bidi.DataTypeBinary
			if op&0x80 != 0 {
				typ = bidi.DataTypeUTF8
			}
			data := payload(next, size)
			sizes[next], types[next] = size, typ
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
			checkRing(t, q, maxRecord)
		}
		q.close()
		for _, id := range queued {
			m, res := q.take()
			if res != taken || string(m.Data) != string(payload(id, sizes[id])) {
				t.Fatalf("closed queue: take = %d, %x; want message %d", res, m.Data, id)
			}
		}
		checkRing(t, q, maxRecord)
		if _, res := q.take(); res != drained {
			t.Fatalf("closed empty queue: take found %d", res)
		}
	})
}

// payload is message id's content: its id in the first two bytes, then
// bytes that depend on both the id and the position, so that a record
// read from the wrong offset or wrapped wrongly shows.
func payload(id, size int) []byte {
	p := make([]byte, size)
	for i := range p {
		p[i] = byte(id*7 + i*13)
	}
	p[0], p[1] = byte(id), byte(id>>8)
	return p
}

// checkRing checks that q's ring is consistent with its counts: records
// that add up to what it uses, and a buffer only while it holds some, of
// at most the size class of what the queue may hold (less than its limit,
// then one more record of at most maxRecord bytes).
func checkRing(t *testing.T, q *queue, maxRecord int) {
	t.Helper()
	r := &q.ring
	if q.n == 0 {
		if r.buf != nil || r.used != 0 {
			t.Fatalf("empty queue holds a %d-byte buffer, %d used", len(r.buf), r.used)
		}
		return
	}
	at, charged := 0, 0
	for range q.n {
		n, _ := r.header(at)
		at += recordHeader + n
		charged += n + messageOverhead
	}
	if at != r.used || charged != q.bytes {
		t.Fatalf("records span %d bytes (ring uses %d), charge %d (queue counts %d)", at, r.used, charged, q.bytes)
	}
	if len(r.buf) < r.used || len(r.buf) > max(minBuf, nextClass(q.limit+maxRecord)) {
		t.Fatalf("ring buffer of %d bytes for %d used", len(r.buf), r.used)
	}
}

// nextClass returns the smallest power of two holding n.
func nextClass(n int) int {
	c := 1
	for c < n {
		c *= 2
	}
	return c
}

// A consumer is spawned when a push or close finds none running, and
// only then: one at a time, none for an idle queue.
func TestQueueSpawnsOneConsumer(t *testing.T) {
	q := newQueue(1000)
	spawned := 0
	q.spawn = func() { spawned++ }
	want := func(n int) {
		t.Helper()
		if spawned != n {
			t.Fatalf("%d consumers spawned, want %d", spawned, n)
		}
	}
	want(0)
	q.push(bidi.Binary([]byte("a")), false)
	want(1)
	q.push(bidi.Binary([]byte("b")), false) // the consumer is still running
	want(1)
	for _, w := range []string{"a", "b"} {
		if m, res := q.take(); res != taken || string(m.Data) != w {
			t.Fatalf("take = %q, %d; want %q", m.Data, res, w)
		}
	}
	if _, res := q.take(); res != idle {
		t.Fatalf("empty queue: take found %d, want idle", res)
	}
	want(1)
	q.push(bidi.Binary([]byte("c")), false) // the consumer returned: another
	want(2)
	q.close() // one is running: it will find the end
	want(2)
	if m, res := q.take(); res != taken || string(m.Data) != "c" {
		t.Fatalf("take = %q, %d; want c", m.Data, res)
	}
	if _, res := q.take(); res != drained {
		t.Fatalf("closed empty queue: take found %d, want drained", res)
	}
	q.push(bidi.Binary([]byte("d")), false) // after close: ignored
	want(2)

	q2 := newQueue(1000)
	q2.spawn = func() { spawned++ }
	q2.close() // none running: one is spawned for the end
	want(3)
	q2.close()
	want(3)
}

// A producer claims only an open, empty queue without a consumer; while
// it holds the claim, pushes queue and spawn nothing; unclaim reports the
// work that arrived meanwhile and keeps the claim for it.
func TestQueueClaim(t *testing.T) {
	q := newQueue(1000)
	spawned := 0
	q.spawn = func() { spawned++ }
	if !q.claim() {
		t.Fatal("empty queue not claimed")
	}
	if q.claim() {
		t.Fatal("claimed twice")
	}
	if q.unclaim() {
		t.Fatal("unclaim found work in an empty queue")
	}
	if !q.claim() {
		t.Fatal("not claimed again after unclaim")
	}
	q.push(bidi.Binary([]byte("a")), false) // a new producer, while the claim is held
	if spawned != 0 {
		t.Fatal("a push spawned a consumer during a claim")
	}
	if !q.unclaim() {
		t.Fatal("unclaim missed a queued message")
	}
	if q.claim() {
		t.Fatal("claimed while the holder is still the consumer")
	}
	if m, res := q.take(); res != taken || string(m.Data) != "a" {
		t.Fatalf("take = %q, %d", m.Data, res)
	}
	if _, res := q.take(); res != idle {
		t.Fatalf("take found %d, want idle", res)
	}
	q.push(bidi.Binary([]byte("b")), false)
	if spawned != 1 {
		t.Fatalf("%d consumers spawned, want 1", spawned)
	}
	if q.claim() {
		t.Fatal("claimed a queue with a consumer")
	}
	q.take()
	q.take() // idle
	if !q.claim() {
		t.Fatal("not claimed once idle")
	}
	q.close() // no consumer spawned: the claim holder gets the end
	if spawned != 1 {
		t.Fatal("close spawned a consumer during a claim")
	}
	if !q.unclaim() {
		t.Fatal("unclaim missed the close")
	}
	if _, res := q.take(); res != drained {
		t.Fatalf("take found %d, want drained", res)
	}
	if q.claim() {
		t.Fatal("claimed a closed queue")
	}
}

// FuzzQueueClaim runs a script of the producer's and consumer's calls
// (push, take by a running consumer, claim, unclaim by the claim's
// holder, close) against a model of who consumes: a consumer is spawned
// exactly when a push or close finds none and no claim, a claim is
// granted only on an open, empty queue nobody consumes, and unclaim
// reports exactly the work that arrived during the claim.
func FuzzQueueClaim(f *testing.F) {
	f.Add([]byte{2, 0, 3, 1, 1, 2, 3, 4, 1})
	f.Add([]byte{0, 1, 1, 2, 4, 3, 1, 2})
	f.Add([]byte{2, 4, 3, 1, 0, 2})
	f.Fuzz(func(t *testing.T, script []byte) {
		q := newQueue(1 << 30)
		spawned := 0
		q.spawn = func() { spawned++ }
		var (
			items, wantSpawned         int
			closed, consuming, claimed bool
		)
		for _, op := range script {
			switch op % 5 {
			case 0: // push
				q.push(bidi.Binary([]byte("m")), false)
				if !closed {
					items++
					if !consuming {
						consuming = true
						wantSpawned++
					}
				}
			case 1: // take, by a running consumer
				if !consuming || claimed {
					continue
				}
				_, res := q.take()
				switch {
				case items > 0:
					if res != taken {
						t.Fatalf("take found %d with %d queued", res, items)
					}
					items--
				case closed:
					if res != drained {
						t.Fatalf("closed empty queue: take found %d", res)
					}
				default:
					if res != idle {
						t.Fatalf("open empty queue: take found %d", res)
					}
					consuming = false
				}
			case 2: // claim
				ok := q.claim()
				if want := !closed && !consuming && items == 0; ok != want {
					t.Fatalf("claim = %v, want %v (closed %v, consuming %v, %d queued)", ok, want, closed, consuming, items)
				}
				if ok {
					consuming, claimed = true, true
				}
			case 3: // unclaim, by the claim's holder
				if !claimed {
					continue
				}
				more := q.unclaim()
				if want := closed || items > 0; more != want {
					t.Fatalf("unclaim = %v, want %v", more, want)
				}
				claimed = false
				consuming = more // the holder goes on as the consumer
			case 4: // close
				q.close()
				if !closed {
					closed = true
					if !consuming {
						consuming = true
						wantSpawned++
					}
				}
			}
			if spawned != wantSpawned {
				t.Fatalf("%d consumers spawned, want %d", spawned, wantSpawned)
			}
			if _, n := q.len(); n != items {
				t.Fatalf("queue holds %d, model %d", n, items)
			}
		}
	})
}
