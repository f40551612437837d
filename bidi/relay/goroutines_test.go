package relay

import (
	"context"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/sagemaker-bidi/sagemaker-bidi/bidi"
)

// callGoroutines counts the goroutines running a call's code, and those
// still in the relay's ServeHTTP.
func callGoroutines() (calls, handlers int) {
	buf := make([]byte, 1<<20)
	for {
		n := runtime.Stack(buf, true)
		if n < len(buf) {
			buf = buf[:n]
			break
		}
		buf = make([]byte, 2*len(buf))
	}
	for g := range strings.SplitSeq(string(buf), "\n\n") {
		if strings.Contains(g, "bidi/relay.(*call).") {
			calls++
		}
		if strings.Contains(g, "bidi/relay.(*Handler).ServeHTTP") {
			handlers++
		}
	}
	return calls, handlers
}

// waitGoroutines waits until callGoroutines reports want call goroutines
// and no handler (the goroutines that finished their work are on their
// way out); it fails after 10 s.
func waitGoroutines(t *testing.T, want int) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		calls, handlers := callGoroutines()
		if calls == want && handlers == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d call goroutines and %d in ServeHTTP, want %d and 0", calls, handlers, want)
		}
		runtime.Gosched()
		time.Sleep(time.Millisecond)
	}
}

// An idle call holds two goroutines (one reading the client, one the
// model), none in ServeHTTP and none for its queues or timers; Close
// leaves none.
func TestIdleCallHoldsTwoGoroutines(t *testing.T) {
	waitGoroutines(t, 0)
	const n = 5
	e := newEnv(t, nil, &Options{
		PingInterval: time.Hour, IdleTimeout: time.Hour, MaxLifetime: time.Hour,
		Open: func(context.Context, *bidi.OpenInput) (Model, error) { return echoModel{newFakeModel()}, nil },
	}, nil)
	for range n {
		c := e.dial(t)
		// One message each way, so that both queues had a consumer.
		if err := c.Write(t.Context(), websocket.MessageText, []byte("hi")); err != nil {
			t.Fatal(err)
		}
		if _, b, err := c.Read(t.Context()); err != nil || string(b) != "hi" {
			t.Fatalf("read %q %v", b, err)
		}
		c.CloseRead(t.Context()) // answers Close's close frame
	}
	waitGoroutines(t, 2*n)
	e.h.Close()
	waitGoroutines(t, 0)
}

// echoModel answers every message with itself.
type echoModel struct{ *fakeModel }

func (m echoModel) Send(ctx context.Context, msg bidi.Message) error {
	m.replies <- bidi.Message{Type: msg.Type, Data: append([]byte(nil), msg.Data...)}
	return nil
}

// A call whose client stalls (its writes block, the reading of the model
// moves to a fresh goroutine and replies queue up) holds two goroutines
// again once the client reads what was queued: the blocked writer drains
// the queue and returns.
func TestStalledCallReturnsToTwoGoroutines(t *testing.T) {
	waitGoroutines(t, 0)
	queued := make(chan struct{}, 100)
	testHookPush = func(toModel bool, dropped int, ok bool) {
		if !toModel && ok {
			queued <- struct{}{}
		}
	}
	defer func() { testHookPush = nil }()
	e := newEnv(t, nil, &Options{
		PingInterval: time.Hour, IdleTimeout: time.Hour,
		Open: func(context.Context, *bidi.OpenInput) (Model, error) { return echoModel{newFakeModel()}, nil },
	}, nil)
	c := e.dial(t)
	e.gate.close()
	const n = 5
	for i := range n {
		if err := c.Write(t.Context(), websocket.MessageText, []byte{'a' + byte(i)}); err != nil {
			t.Fatal(err)
		}
	}
	for range n {
		// The first reply is delivered at once, and its write blocks
		// at the gate: the others are taken only once the watchdog
		// moved the reading to a fresh goroutine.
		<-queued
	}
	e.gate.open()
	for i := range n {
		if _, b, err := c.Read(t.Context()); err != nil || string(b) != string(rune('a'+i)) {
			t.Fatalf("reply %d: %q %v", i, b, err)
		}
	}
	waitGoroutines(t, 2)
}
