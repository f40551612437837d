package bidi_test

import (
	"context"
	"encoding/binary"
	"errors"
	"io"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/sagemaker-bidi/sagemaker-bidi/bidi"
	"github.com/sagemaker-bidi/sagemaker-bidi/bidi/biditest"
)

// rotItem is what the receiving goroutine of a rotation test saw, in
// order: a message with the generation it came from (RecvGeneration) and
// when Recv returned it, a rotation event, the end of a stream (end > 0),
// or the error that ended Recv.
type rotItem struct {
	gen    int
	msg    bidi.Message
	at     time.Time
	ev     *bidi.RotationEvent
	end    int // generation whose messages were all returned
	endErr error
	err    error
}

// receiveAll runs Recv on rs until it fails, sending every message, event,
// stream end and the final error to the returned channel (buffered for max
// items). It sets r.OnRotate and r.OnStreamEnd, so call it before
// OpenRotating.
func receiveAll(r *bidi.Rotation, max int) (start func(context.Context, *bidi.RotatingSession), items <-chan rotItem) {
	ch := make(chan rotItem, max)
	r.OnRotate = func(ev bidi.RotationEvent) { ch <- rotItem{ev: &ev} }
	r.OnStreamEnd = func(gen int, err error) { ch <- rotItem{end: gen, endErr: err} }
	start = func(ctx context.Context, rs *bidi.RotatingSession) {
		go func() {
			defer close(ch)
			for {
				m, err := rs.Recv(ctx)
				if err != nil {
					ch <- rotItem{err: err}
					return
				}
				ch <- rotItem{gen: rs.RecvGeneration(), msg: m, at: time.Now()}
			}
		}()
	}
	return start, ch
}

// next returns the next item, failing the test if none comes in time.
func next(t *testing.T, items <-chan rotItem) rotItem {
	t.Helper()
	for {
		it := nextItem(t, items)
		if it.end == 0 {
			return it
		}
	}
}

// nextItem is next without skipping stream ends.
func nextItem(t *testing.T, items <-chan rotItem) rotItem {
	t.Helper()
	select {
	case it, ok := <-items:
		if !ok {
			t.Fatal("receiver ended")
		}
		return it
	case <-time.After(10 * time.Second):
		t.Fatal("nothing received within 10s")
	}
	panic("unreachable")
}

func expectText(t *testing.T, items <-chan rotItem, gen int, text string) {
	t.Helper()
	it := next(t, items)
	if it.err != nil || it.ev != nil || it.gen != gen || string(it.msg.Data) != text {
		t.Fatalf("got %+v, want %q from generation %d", it, text, gen)
	}
}

func expectEvent(t *testing.T, items <-chan rotItem, from int, reason bidi.RotationReason) bidi.RotationEvent {
	t.Helper()
	it := next(t, items)
	if it.ev == nil || it.ev.From != from || it.ev.To != from+1 || it.ev.Reason != reason {
		t.Fatalf("got %+v, want a rotation %d -> %d (%v)", it, from, from+1, reason)
	}
	return *it.ev
}

func textPreamble(text string, count *atomic.Int32) func(context.Context, func(bidi.Message) error) error {
	return func(ctx context.Context, send func(bidi.Message) error) error {
		count.Add(1)
		return send(bidi.Text(text))
	}
}

// audioFrame returns frame seq of a paced audio stream: 640 bytes (20 ms
// of 16 kHz 16-bit mono) starting with seq.
func audioFrame(seq uint32) []byte {
	b := make([]byte, 640)
	binary.BigEndian.PutUint32(b, seq)
	for i := 4; i < len(b); i++ {
		b[i] = byte(seq) ^ byte(i)
	}
	return b
}

// failAfter returns a handler whose streams listed in fail echo n messages
// and then fail with an InternalStreamFailure; the others echo. started
// receives each stream's number (from 1) as its handler starts.
func failAfter(n int, fail func(stream int32) bool, started chan<- int32) biditest.Handler {
	var count atomic.Int32
	return biditest.HandlerFunc(func(st *biditest.Stream) {
		k := count.Add(1)
		if started != nil {
			started <- k
		}
		if st.Accept() != nil {
			return
		}
		for i := 0; ; i++ {
			if fail(k) && i == n {
				st.SendException("InternalStreamFailure", []byte(`{"Message":"the platform ended the stream"}`))
				return
			}
			m, err := st.Recv()
			if err != nil {
				return
			}
			if st.Send(m) != nil {
				return
			}
		}
	})
}

// A stream that ends early (here an InternalStreamFailure mid-stream) is
// replaced by a reconnect: the replies received before the end come
// first, the end is reported to OnRotate and not to Recv, the preamble
// runs again on the new stream, and the session carries on.
func TestRotationReconnectsAfterEarlyEnd(t *testing.T) {
	synctest.Test(t, rotationReconnectsAfterEarlyEnd)
}

func rotationReconnectsAfterEarlyEnd(t *testing.T) {
	// Stream 1 echoes the preamble and 3 frames, then fails.
	srv, dial := newMemServer(t, failAfter(4, func(k int32) bool { return k == 1 }, nil))
	ctx := testCtx(t)
	var preambles atomic.Int32
	r := &bidi.Rotation{Preamble: textPreamble("config", &preambles)}
	start, items := receiveAll(r, 64)
	rs, err := srv.Client(dial).OpenRotating(ctx, &bidi.OpenInput{EndpointName: "e"}, r)
	if err != nil {
		t.Fatalf("OpenRotating: %v", err)
	}
	defer rs.Close()
	start(ctx, rs)

	expectText(t, items, 1, "config")
	for _, s := range []string{"a", "b", "c"} {
		if err := rs.Send(ctx, bidi.Text(s)); err != nil {
			t.Fatalf("Send %q: %v", s, err)
		}
		expectText(t, items, 1, s)
	}
	ev := expectEvent(t, items, 1, bidi.RotationEarlyEnd)
	var isf *bidi.InternalStreamFailure
	if !errors.As(ev.Err, &isf) {
		t.Fatalf("event error %v, want an *InternalStreamFailure", ev.Err)
	}
	expectText(t, items, 2, "config")
	if err := rs.Send(ctx, bidi.Text("d")); err != nil {
		t.Fatalf("Send after the reconnect: %v", err)
	}
	expectText(t, items, 2, "d")
	if err := rs.CloseSend(); err != nil {
		t.Fatalf("CloseSend: %v", err)
	}
	if it := next(t, items); it.err != io.EOF {
		t.Fatalf("got %+v, want io.EOF", it)
	}
	if preambles.Load() != 2 || len(srv.Streams()) != 2 || rs.Generation() != 2 {
		t.Fatalf("%d preambles, %d streams, generation %d; want 2 of each", preambles.Load(), len(srv.Streams()), rs.Generation())
	}
}

// A Send that meets a stream that already ended waits for the successor
// and sends its message there, once.
func TestRotationSendWaitsForSuccessor(t *testing.T) { synctest.Test(t, rotationSendWaitsForSuccessor) }

func rotationSendWaitsForSuccessor(t *testing.T) {
	started := make(chan int32, 4)
	srv, dial := newMemServer(t, failAfter(1, func(k int32) bool { return k == 1 }, started))
	ctx := testCtx(t)
	release := make(chan struct{})
	var preambles atomic.Int32
	r := &bidi.Rotation{Preamble: func(ctx context.Context, send func(bidi.Message) error) error {
		if preambles.Add(1) == 2 {
			<-release // hold the successor back
		}
		return send(bidi.Text("config"))
	}}
	start, items := receiveAll(r, 64)
	rs, err := srv.Client(dial).OpenRotating(ctx, &bidi.OpenInput{EndpointName: "e"}, r)
	if err != nil {
		t.Fatalf("OpenRotating: %v", err)
	}
	defer rs.Close()
	if k := <-started; k != 1 {
		t.Fatalf("stream %d started first", k)
	}
	if k := <-started; k != 2 { // stream 1 has failed: the reconnect began
		t.Fatalf("stream %d started second", k)
	}
	sent := make(chan error, 1)
	go func() { sent <- rs.Send(ctx, bidi.Text("x")) }()
	select {
	case err := <-sent:
		t.Fatalf("Send returned %v before the successor was installed", err)
	default:
	}
	close(release)
	if err := <-sent; err != nil {
		t.Fatalf("Send: %v", err)
	}
	start(ctx, rs)
	expectText(t, items, 1, "config")
	expectEvent(t, items, 1, bidi.RotationEarlyEnd)
	expectText(t, items, 2, "config")
	expectText(t, items, 2, "x")
	rs.CloseSend()
	if it := next(t, items); it.err != io.EOF {
		t.Fatalf("got %+v, want io.EOF", it)
	}
}

// Reconnects are bounded: against a server whose every stream fails, Recv
// returns a *ReconnectError wrapping the typed error once MaxReconnects
// reconnects in a row failed, and Send returns it too.
func TestRotationReconnectsBounded(t *testing.T) { synctest.Test(t, rotationReconnectsBounded) }

func rotationReconnectsBounded(t *testing.T) {
	srv, dial := newMemServer(t, failAfter(1, func(int32) bool { return true }, nil))
	ctx := testCtx(t)
	var preambles atomic.Int32
	r := &bidi.Rotation{
		Preamble:      textPreamble("config", &preambles),
		MaxReconnects: 2,
		Backoff:       func(int) time.Duration { return 0 },
	}
	start, items := receiveAll(r, 64)
	rs, err := srv.Client(dial).OpenRotating(ctx, &bidi.OpenInput{EndpointName: "e"}, r)
	if err != nil {
		t.Fatalf("OpenRotating: %v", err)
	}
	defer rs.Close()
	start(ctx, rs)
	for gen := 1; gen <= 3; gen++ {
		expectText(t, items, gen, "config")
		if gen < 3 {
			ev := expectEvent(t, items, gen, bidi.RotationEarlyEnd)
			var isf *bidi.InternalStreamFailure
			if !errors.As(ev.Err, &isf) {
				t.Fatalf("event error %v, want an *InternalStreamFailure", ev.Err)
			}
		}
	}
	it := next(t, items)
	var (
		re  *bidi.ReconnectError
		isf *bidi.InternalStreamFailure
	)
	if !errors.As(it.err, &re) || re.Reconnects != 2 || !errors.As(it.err, &isf) {
		t.Fatalf("Recv: %+v, want a *ReconnectError after 2 reconnects wrapping an *InternalStreamFailure", it)
	}
	if err := rs.Send(ctx, bidi.Text("late")); !errors.As(err, &re) {
		t.Fatalf("Send: %v, want the *ReconnectError", err)
	}
	if preambles.Load() != 3 || len(srv.Streams()) != 3 {
		t.Fatalf("%d preambles, %d streams; want 3 of each", preambles.Load(), len(srv.Streams()))
	}
}

// Close unblocks a pending Recv and Send, also while a reconnect is
// waiting out its backoff, and leaves no goroutine of package bidi.
func TestRotationCloseUnblocks(t *testing.T) {
	waitNoBidiGoroutines(t, 5*time.Second) // other tests' leftovers
	ctx := testCtx(t)

	t.Run("streaming", func(t *testing.T) {
		started := make(chan struct{})
		srv := newServer(t, biditest.HandlerFunc(func(st *biditest.Stream) {
			st.Accept()
			close(started)
			<-st.Context().Done() // never reads: Send ends up blocked
		}), func(s *biditest.Server) { s.MaxReceiveBufferPerStream = 16 << 10 })
		rs, err := srv.Client().OpenRotating(ctx, &bidi.OpenInput{EndpointName: "e"}, nil)
		if err != nil {
			t.Fatalf("OpenRotating: %v", err)
		}
		<-started
		recvErr, sendErr := make(chan error, 1), make(chan error, 1)
		go func() { _, err := rs.Recv(ctx); recvErr <- err }()
		go func() {
			for {
				if err := rs.Send(ctx, bidi.Binary(make([]byte, 32<<10))); err != nil {
					sendErr <- err
					return
				}
			}
		}()
		rs.Close()
		if err := <-recvErr; !errors.Is(err, bidi.ErrSessionClosed) {
			t.Errorf("Recv: %v, want ErrSessionClosed", err)
		}
		if err := <-sendErr; !errors.Is(err, bidi.ErrSessionClosed) {
			t.Errorf("Send: %v, want ErrSessionClosed", err)
		}
	})

	t.Run("reconnecting", func(t *testing.T) {
		started := make(chan int32, 4)
		srv := newServer(t, failAfter(0, func(int32) bool { return true }, started))
		backingOff := make(chan struct{})
		r := &bidi.Rotation{
			MaxReconnects: 5,
			Backoff: func(int) time.Duration {
				close(backingOff)
				return time.Hour
			},
		}
		rs, err := srv.Client().OpenRotating(ctx, &bidi.OpenInput{EndpointName: "e"}, r)
		if err != nil {
			t.Fatalf("OpenRotating: %v", err)
		}
		<-backingOff
		recvErr := make(chan error, 1)
		go func() { _, err := rs.Recv(ctx); recvErr <- err }()
		rs.Close()
		if err := <-recvErr; !errors.Is(err, bidi.ErrSessionClosed) {
			t.Errorf("Recv: %v, want ErrSessionClosed", err)
		}
		if err := rs.Send(ctx, bidi.Text("x")); !errors.Is(err, bidi.ErrSessionClosed) {
			t.Errorf("Send after Close: %v, want ErrSessionClosed", err)
		}
		if len(started) != 1 {
			t.Errorf("%d streams opened, want 1", len(started))
		}
	})
	waitNoBidiGoroutines(t, 5*time.Second)
}

// A successor refused with an error that a retry cannot fix (here a 400)
// ends the reconnects at once.
func TestRotationPermanentOpenError(t *testing.T) { synctest.Test(t, rotationPermanentOpenError) }

func rotationPermanentOpenError(t *testing.T) {
	var count atomic.Int32
	srv, dial := newMemServer(t, biditest.HandlerFunc(func(st *biditest.Stream) {
		if count.Add(1) > 1 {
			st.Fail(400, "ValidationError", map[string]any{"Message": "no such model"})
			return
		}
		st.Accept()
		st.SendException("InternalStreamFailure", []byte(`{"Message":"the platform ended the stream"}`))
	}))
	ctx := testCtx(t)
	rs, err := srv.Client(dial).OpenRotating(ctx, &bidi.OpenInput{EndpointName: "e"}, nil)
	if err != nil {
		t.Fatalf("OpenRotating: %v", err)
	}
	defer rs.Close()
	_, err = rs.Recv(ctx)
	var (
		re   *bidi.ReconnectError
		resp *bidi.ResponseError
	)
	if !errors.As(err, &re) || re.Reconnects != 1 || !errors.As(err, &resp) || resp.StatusCode != 400 {
		t.Fatalf("Recv: %v, want a *ReconnectError after 1 reconnect wrapping the 400", err)
	}
	if n := count.Load(); n != 2 {
		t.Fatalf("%d streams opened, want 2", n)
	}
}

// A rotation waits for a message begun with SendPart to be complete: its
// parts all go to the old stream, the next message to the successor; and
// Rotate after the input ended reports ErrSendClosed.
func TestRotationSendPartKeepsMessageWhole(t *testing.T) {
	synctest.Test(t, rotationSendPartKeepsMessageWhole)
}

func rotationSendPartKeepsMessageWhole(t *testing.T) {
	srv, dial := newMemServer(t, biditest.Echo())
	ctx := testCtx(t)
	r := &bidi.Rotation{FinishQuiet: 50 * time.Millisecond}
	start, items := receiveAll(r, 64)
	rs, err := srv.Client(dial).OpenRotating(ctx, &bidi.OpenInput{EndpointName: "e"}, r)
	if err != nil {
		t.Fatalf("OpenRotating: %v", err)
	}
	defer rs.Close()
	start(ctx, rs)
	if err := rs.SendPart(ctx, bidi.Part{Data: []byte("he"), Type: bidi.DataTypeUTF8}); err != nil {
		t.Fatalf("SendPart: %v", err)
	}
	if err := rs.Send(ctx, bidi.Text("x")); !errors.Is(err, bidi.ErrMessageInProgress) {
		t.Fatalf("Send inside a message: %v, want ErrMessageInProgress", err)
	}
	waiting := make(chan struct{})
	var once sync.Once
	defer bidi.SetBoundaryHook(func(*bidi.RotatingSession) { once.Do(func() { close(waiting) }) })()
	rotated := make(chan error, 1)
	go func() { rotated <- rs.Rotate(ctx) }()
	// Rotate cannot finish while the message is open: the rotator, its
	// successor open, waits at the boundary without the send turn (the
	// last part goes through); once the last part is sent, it switches,
	// and the message was carried whole by stream 1.
	select {
	case <-waiting:
	case err := <-rotated:
		t.Fatalf("Rotate returned %v inside a message", err)
	}
	if err := rs.SendPart(ctx, bidi.Part{Data: []byte("llo"), Type: bidi.DataTypeUTF8, Complete: true}); err != nil {
		t.Fatalf("SendPart: %v", err)
	}
	if err := <-rotated; err != nil {
		t.Fatalf("Rotate: %v", err)
	}
	if err := rs.Send(ctx, bidi.Text("world")); err != nil {
		t.Fatalf("Send: %v", err)
	}
	if err := rs.Finish(ctx, 50*time.Millisecond); err != nil {
		t.Fatalf("Finish: %v", err)
	}
	if err := rs.Rotate(ctx); !errors.Is(err, bidi.ErrSendClosed) {
		t.Fatalf("Rotate after Finish: %v, want ErrSendClosed", err)
	}
	got := map[string]int{}
	for it := range items {
		switch {
		case it.err != nil && it.err != io.EOF:
			t.Fatalf("Recv: %v", it.err)
		case it.ev != nil:
			if it.ev.Reason != bidi.RotationRequested || it.ev.Start.Messages != 1 || it.ev.Start.Bytes != 5 {
				t.Errorf("event %+v, want a requested rotation after 1 message of 5 bytes", *it.ev)
			}
		case it.err == nil && it.end == 0:
			got[string(it.msg.Data)] = it.gen
		}
	}
	if got["hello"] != 1 || got["world"] != 2 || len(got) != 2 {
		t.Fatalf("messages by stream: %v, want hello from 1 and world from 2", got)
	}
	if rs.Sent() != 2 {
		t.Fatalf("Sent %d, want 2", rs.Sent())
	}
}

// Reconnects in a row wait Backoff(n) each, on a synctest clock exactly:
// streams that fail after their first message (well within a tenth of
// 29 minutes, so in a row) are replaced 1 s, then 2 s, then 3 s after
// the failure.
func TestRotationBackoffOnTheClock(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv, dial := newMemServer(t, failAfter(1, func(k int32) bool { return k <= 3 }, nil))
		start := time.Now()
		var at []time.Duration
		r := &bidi.Rotation{
			After:         -1,
			MaxReconnects: 5,
			ReplayWindow:  time.Minute, // a message sent to a stream as it fails reaches its successor
			Backoff:       func(n int) time.Duration { return time.Duration(n) * time.Second },
			OnRotate: func(ev bidi.RotationEvent) {
				if ev.Reason != bidi.RotationEarlyEnd {
					t.Errorf("rotation %+v, want an early end", ev)
				}
				at = append(at, ev.Start.Time.Sub(start)) // when the successor started: Recv reports the event later
			},
		}
		ctx := testCtx(t)
		rs, err := srv.Client(dial).OpenRotating(ctx, &bidi.OpenInput{EndpointName: "e"}, r)
		if err != nil {
			t.Fatal(err)
		}
		defer rs.Close()
		for i := range 5 {
			if err := rs.Send(ctx, bidi.Text("x")); err != nil {
				t.Fatalf("Send %d: %v", i, err)
			}
			if m, err := rs.Recv(ctx); err != nil || string(m.Data) != "x" {
				t.Fatalf("Recv %d: %q, %v", i, m.Data, err)
			}
		}
		if want := []time.Duration{time.Second, 3 * time.Second, 6 * time.Second}; !slices.Equal(at, want) {
			t.Fatalf("streams replaced at %v, want %v", at, want)
		}
	})
}
