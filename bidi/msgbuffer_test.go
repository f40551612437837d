package bidi_test

import (
	"bytes"
	"context"
	"fmt"
	"log"
	"sync"
	"testing"
	"unsafe"

	"github.com/sagemaker-bidi/sagemaker-bidi/bidi"
	"github.com/sagemaker-bidi/sagemaker-bidi/bidi/biditest"
)

// bufferLedger is an Options.MessageBuffer that records the buffers it
// hands out, by the address of their first byte.
type bufferLedger struct {
	mu     sync.Mutex
	given  map[*byte]int // first byte → capacity
	asked  []int
	refuse bool // hand out buffers too small to use
}

func (l *bufferLedger) get(n int) []byte {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.asked = append(l.asked, n)
	if l.refuse {
		return make([]byte, n/2)
	}
	b := make([]byte, n+100) // room to spare: the session cuts it to n
	l.given[unsafe.SliceData(b)] = cap(b)
	return b
}

// from reports whether b is one of the ledger's buffers, cut to len(b).
func (l *bufferLedger) from(b []byte) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	_, ok := l.given[unsafe.SliceData(b)]
	return ok
}

// TestMessageBuffer: with Options.MessageBuffer set, the data of every
// received message (one part or many, small or large) and of a large
// part from RecvPart lies in a buffer MessageBuffer returned, holding
// exactly the message; a buffer too small is not used, and the message
// is still whole.
func TestMessageBuffer(t *testing.T) {
	srv := newServer(t, biditest.Echo())
	for _, refuse := range []bool{false, true} {
		l := &bufferLedger{given: map[*byte]int{}, refuse: refuse}
		c := srv.Client(func(o *bidi.Options) {
			o.MessageBuffer = l.get
			o.MaxPartSize = 64 << 10 // a 1 MiB message travels in 16 parts
		})
		ctx := testCtx(t)
		sess := open(t, c, ctx)
		for _, size := range []int{10, 5 << 10, 300 << 10, 1 << 20, 1 << 20, 100 << 10} {
			want := bytes.Repeat([]byte{byte(size)}, size)
			if err := sess.Send(ctx, bidi.Binary(want)); err != nil {
				t.Fatal(err)
			}
			m, err := sess.Recv(ctx)
			if err != nil {
				t.Fatalf("refuse=%v, %d bytes: Recv: %v", refuse, size, err)
			}
			if !bytes.Equal(m.Data, want) {
				t.Fatalf("refuse=%v: %d bytes sent, %d received or different", refuse, size, len(m.Data))
			}
			if got := l.from(m.Data); got == refuse {
				t.Errorf("refuse=%v, %d bytes: data in a MessageBuffer buffer = %v", refuse, size, got)
			}
		}
		// RecvPart: a part over 4 KiB is the caller's too.
		want := bytes.Repeat([]byte{9}, 8<<10)
		if err := sess.Send(ctx, bidi.Binary(want)); err != nil {
			t.Fatal(err)
		}
		p, err := sess.RecvPart(ctx)
		if err != nil || !bytes.Equal(p.Data, want) || !p.Complete {
			t.Fatalf("refuse=%v: RecvPart: %d bytes, complete %v, %v", refuse, len(p.Data), p.Complete, err)
		}
		if got := l.from(p.Data); got == refuse {
			t.Errorf("refuse=%v: RecvPart's 8 KiB part in a MessageBuffer buffer = %v", refuse, got)
		}
		for _, n := range l.asked {
			if n <= 0 || n > 16<<20 {
				t.Errorf("MessageBuffer(%d): outside (0, MaxMessageSize]", n)
			}
		}
		sess.Close()
	}
}

// Receiving large messages into buffers the program reuses: each message
// lands in a buffer from the program's pool, which it gives back once
// done with the message, so that a stream of 1 MiB messages does not
// touch fresh memory for each.
func ExampleOptions_messageBuffer() {
	srv := biditest.NewServer(biditest.Echo())
	defer srv.Close()
	var pool sync.Pool // of *[]byte
	client := srv.Client(func(o *bidi.Options) {
		o.MessageBuffer = func(n int) []byte {
			if b, ok := pool.Get().(*[]byte); ok && cap(*b) >= n {
				return (*b)[:n]
			}
			return make([]byte, n)
		}
	})
	ctx := context.Background()
	sess, err := client.Open(ctx, &bidi.OpenInput{EndpointName: "my-endpoint"})
	if err != nil {
		log.Fatal(err)
	}
	defer sess.Close()
	image := bytes.Repeat([]byte{0xAB}, 1<<20)
	for range 3 {
		if err := sess.Send(ctx, bidi.Binary(image)); err != nil {
			log.Fatal(err)
		}
		msg, err := sess.Recv(ctx)
		if err != nil {
			log.Fatal(err)
		}
		fmt.Println(len(msg.Data), bytes.Equal(msg.Data, image))
		pool.Put(&msg.Data) // done with it: the next message may reuse it
	}
	// Output:
	// 1048576 true
	// 1048576 true
	// 1048576 true
}
