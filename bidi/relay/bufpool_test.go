package relay

import (
	"sync"
	"testing"
	"time"
	"unsafe"

	"github.com/coder/websocket"

	"github.com/sagemaker-bidi/sagemaker-bidi/bidi"
)

// bufferLog wraps MessageBuffer and records the buffers it handed out.
type bufferLog struct {
	mu    sync.Mutex
	calls int
	seen  map[*byte]bool
}

func (l *bufferLog) alloc(n int) []byte {
	b := MessageBuffer(n)
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.seen == nil {
		l.seen = make(map[*byte]bool)
	}
	l.calls++
	l.seen[unsafe.SliceData(b)] = true
	return b
}

// reused checks that the replies' buffers were reused: far fewer distinct
// buffers than replies. (Under the race detector sync.Pool drops a
// quarter of what it is given, and a collection empties it, so some
// fresh buffers are expected.)
func (l *bufferLog) reused(t *testing.T, replies int) {
	t.Helper()
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.calls < replies || len(l.seen) > l.calls/2 {
		t.Fatalf("%d buffers for %d replies (%d received): the relay did not give them back", len(l.seen), l.calls, replies)
	}
}

// TestRepliesReuseMessageBuffers: with MessageBuffer as the client's
// Options.MessageBuffer, a reply's buffer goes back to the pools once the
// reply is written to the client, copied into the queue or dropped, and
// the next replies reuse it; every reply that reaches the client is whole
// (no buffer was reused while the relay still read it).
func TestRepliesReuseMessageBuffers(t *testing.T) {
	const n, size = 200, 700
	t.Run("client reading", func(t *testing.T) {
		var log bufferLog
		e := newEnvWith(t, func(o *bidi.Options) { o.MessageBuffer = log.alloc }, nil,
			&Options{ToModelQueueBytes: 1 << 20, ToClientQueueBytes: 1 << 20, EndOfInput: endOfInput, FinishQuiet: time.Millisecond}, nil)
		c := e.dial(t)
		errc := make(chan error, 1)
		var got []bidi.Message
		go func() {
			var err error
			got, err = readUntilClose(t, c)
			errc <- err
		}()
		for i := range n {
			if err := c.Write(t.Context(), websocket.MessageBinary, payload(i, size)); err != nil {
				t.Fatal(err)
			}
		}
		c.Write(t.Context(), websocket.MessageText, []byte("end"))
		wantClose(t, <-errc, websocket.StatusNormalClosure, "")
		if len(got) != n {
			t.Fatalf("%d replies, want %d", len(got), n)
		}
		checkSurvivors(t, got, size, n-1)
		log.reused(t, n)
	})
	t.Run("queued and dropped", func(t *testing.T) {
		var log bufferLog
		e := newEnvWith(t, func(o *bidi.Options) { o.MessageBuffer = log.alloc }, nil,
			&Options{ToClientQueueBytes: 8 << 10, ToModelQueueBytes: 1 << 20, Overflow: OverflowDropOldest, EndOfInput: endOfInput, FinishQuiet: time.Millisecond}, nil)
		dropOldestRun(t, e, n, size)
		log.reused(t, n)
	})
}
