package bidi_test

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"io"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sagemaker-bidi/sagemaker-bidi/bidi"
	"github.com/sagemaker-bidi/sagemaker-bidi/bidi/biditest"
)

// TestFlowControlBlocksSend: when the service does not read, Send blocks
// (nothing is buffered without bound) and its context bounds the wait; a
// Send that timed out before its message was queued leaves the session
// usable and its message is not delivered.
func TestFlowControlBlocksSend(t *testing.T) {
	startReading := make(chan struct{})
	srv := newServer(t, biditest.HandlerFunc(func(st *biditest.Stream) {
		st.Accept()
		select {
		case <-startReading:
		case <-st.Context().Done():
			return
		}
		for {
			m, err := st.Recv()
			if err != nil {
				return
			}
			if st.Send(m) != nil {
				return
			}
		}
	}), func(s *biditest.Server) { s.MaxReceiveBufferPerStream = 64 << 10 })
	ctx := testCtx(t)
	sess := open(t, srv.Client(), ctx)

	const size = 4 << 10
	sent := 0
	for {
		short, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
		err := sess.Send(short, bidi.Binary(bytes.Repeat([]byte{byte(sent)}, size)))
		cancel()
		if errors.Is(err, context.DeadlineExceeded) {
			break
		}
		if err != nil {
			t.Fatalf("Send %d: %v", sent, err)
		}
		sent++
		if sent > 1000 {
			t.Fatalf("%d sends of %d bytes succeeded against a server that does not read", sent, size)
		}
	}
	// 64 KiB of window, one transport buffer (at most 512 KiB) and the
	// 64 KiB send queue.
	if sent*size > 64<<10+512<<10+64<<10+size {
		t.Fatalf("%d bytes accepted before Send blocked", sent*size)
	}
	t.Logf("Send blocked after %d messages of %d bytes", sent, size)

	// The session still works; the timed-out message was withdrawn.
	close(startReading)
	if err := sess.Send(ctx, bidi.Text("after")); err != nil {
		t.Fatalf("Send after the timeout: %v", err)
	}
	for i := range sent {
		m, err := sess.Recv(ctx)
		if err != nil || len(m.Data) != size || m.Data[0] != byte(i) {
			t.Fatalf("Recv %d: %d bytes, %v", i, len(m.Data), err)
		}
	}
	m, err := sess.Recv(ctx)
	if err != nil || string(m.Data) != "after" {
		t.Fatalf("Recv = %q, %v; want the message after the timeout", m.Data, err)
	}
	sess.CloseSend()
	drainEOF(t, sess)
}

// TestSendInterruptedMidMessage: a multi-part Send whose context ends after
// some parts were taken aborts the session with SendInterruptedError.
func TestSendInterruptedMidMessage(t *testing.T) {
	srv := newServer(t, biditest.HandlerFunc(func(st *biditest.Stream) {
		st.Accept()
		<-st.Context().Done()
	}), func(s *biditest.Server) { s.MaxReceiveBufferPerStream = 64 << 10 })
	ctx := testCtx(t)
	sess := open(t, srv.Client(func(o *bidi.Options) { o.MaxPartSize = 1 << 10 }), ctx)
	short, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
	defer cancel()
	err := sess.Send(short, bidi.Binary(make([]byte, 1<<20)))
	var ie *bidi.SendInterruptedError
	if !errors.As(err, &ie) || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Send = %v, want *SendInterruptedError wrapping DeadlineExceeded", err)
	}
	if err := sess.Send(ctx, bidi.Text("x")); !errors.As(err, &ie) {
		t.Fatalf("Send after the interruption = %v", err)
	}
	if _, err := sess.Recv(ctx); !errors.As(err, &ie) {
		t.Fatalf("Recv after the interruption = %v", err)
	}
}

// TestConcurrentSend: many goroutines send fragmented messages at once;
// every message arrives whole (parts never interleave) and each
// goroutine's messages arrive in its order.
func TestConcurrentSend(t *testing.T) {
	const senders, perSender = 16, 25
	got := make(chan [][]byte, 1)
	srv := newServer(t, biditest.HandlerFunc(func(st *biditest.Stream) {
		st.Accept()
		var msgs [][]byte
		for {
			m, err := st.Recv()
			if err != nil {
				break
			}
			msgs = append(msgs, m.Data)
		}
		got <- msgs
	}))
	ctx := testCtx(t)
	sess := open(t, srv.Client(func(o *bidi.Options) { o.MaxPartSize = 100 }), ctx)
	var wg sync.WaitGroup
	for g := range senders {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range perSender {
				if err := sess.Send(ctx, bidi.Binary(concurrentMessage(g, i))); err != nil {
					t.Errorf("sender %d message %d: %v", g, i, err)
					return
				}
			}
		}()
	}
	wg.Wait()
	sess.CloseSend()
	drainEOF(t, sess)
	var msgs [][]byte
	select {
	case msgs = <-got:
	case <-time.After(10 * time.Second):
		t.Fatal("server did not finish")
	}
	if len(msgs) != senders*perSender {
		t.Fatalf("server received %d messages, want %d", len(msgs), senders*perSender)
	}
	next := make([]int, senders)
	for _, m := range msgs {
		if len(m) < 8 {
			t.Fatalf("short message %q", m)
		}
		g, i := int(binary.BigEndian.Uint32(m)), int(binary.BigEndian.Uint32(m[4:]))
		if g >= senders || !bytes.Equal(m, concurrentMessage(g, i)) {
			t.Fatalf("corrupted message from sender %d #%d", g, i)
		}
		if i != next[g] {
			t.Fatalf("sender %d: message %d arrived, want %d", g, i, next[g])
		}
		next[g]++
	}
}

// concurrentMessage is message i of sender g: 250 to 550 bytes (three to
// six parts of 100 bytes) that identify and check themselves.
func concurrentMessage(g, i int) []byte {
	n := 250 + (g*31+i*17)%300
	b := make([]byte, n)
	binary.BigEndian.PutUint32(b, uint32(g))
	binary.BigEndian.PutUint32(b[4:], uint32(i))
	for j := 8; j < n; j++ {
		b[j] = byte(g*7 + i*13 + j)
	}
	return b
}

// TestCancellation covers the three ways of stopping waits: a Recv's own
// context (the session survives), the session's context, and Close.
func TestCancellation(t *testing.T) {
	handler := biditest.HandlerFunc(func(st *biditest.Stream) {
		st.Accept()
		for {
			m, err := st.Recv()
			if err != nil {
				return
			}
			time.Sleep(50 * time.Millisecond)
			if st.Send(m) != nil {
				return
			}
		}
	})
	srv := newServer(t, handler)
	ctx := testCtx(t)

	t.Run("Recv context", func(t *testing.T) {
		sess := open(t, srv.Client(), ctx)
		if err := sess.Send(ctx, bidi.Text("slow")); err != nil {
			t.Fatal(err)
		}
		short, cancel := context.WithTimeout(ctx, 5*time.Millisecond)
		defer cancel()
		if _, err := sess.Recv(short); !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("Recv = %v, want DeadlineExceeded", err)
		}
		m, err := sess.Recv(ctx)
		if err != nil || string(m.Data) != "slow" {
			t.Fatalf("Recv after a timed-out Recv = %q, %v", m.Data, err)
		}
		sess.CloseSend()
		drainEOF(t, sess)
	})

	t.Run("session context", func(t *testing.T) {
		sctx, cancel := context.WithCancel(ctx)
		sess := open(t, srv.Client(), sctx)
		errc := make(chan error, 1)
		go func() { _, err := sess.Recv(ctx); errc <- err }()
		time.Sleep(10 * time.Millisecond)
		cancel()
		select {
		case err := <-errc:
			if !errors.Is(err, context.Canceled) {
				t.Fatalf("pending Recv = %v, want context.Canceled", err)
			}
		case <-time.After(5 * time.Second):
			t.Fatal("cancelling the session's context did not unblock Recv")
		}
		if err := sess.Send(ctx, bidi.Text("x")); !errors.Is(err, context.Canceled) {
			t.Fatalf("Send = %v, want context.Canceled", err)
		}
		if _, err := sess.Response(ctx); err != nil && !errors.Is(err, context.Canceled) {
			t.Fatalf("Response = %v", err)
		}
		if err := context.Cause(sess.Context()); !errors.Is(err, context.Canceled) {
			t.Fatalf("Cause(Context) = %v", err)
		}
	})

	t.Run("Close", func(t *testing.T) {
		// The handler does not read: a Send blocks in flow control.
		block := newServer(t, biditest.HandlerFunc(func(st *biditest.Stream) {
			st.Accept()
			<-st.Context().Done()
		}), func(s *biditest.Server) { s.MaxReceiveBufferPerStream = 64 << 10 })
		sess := open(t, block.Client(), ctx)
		recvErr := make(chan error, 1)
		sendErr := make(chan error, 1)
		go func() { _, err := sess.Recv(ctx); recvErr <- err }()
		go func() {
			for {
				if err := sess.Send(ctx, bidi.Binary(make([]byte, 8<<10))); err != nil {
					sendErr <- err
					return
				}
			}
		}()
		time.Sleep(50 * time.Millisecond)
		var wg sync.WaitGroup
		for range 4 { // concurrent Close calls
			wg.Add(1)
			go func() { defer wg.Done(); sess.Close() }()
		}
		wg.Wait()
		for name, ch := range map[string]chan error{"Recv": recvErr, "Send": sendErr} {
			select {
			case err := <-ch:
				if !errors.Is(err, bidi.ErrSessionClosed) {
					t.Errorf("pending %s = %v, want ErrSessionClosed", name, err)
				}
			case <-time.After(5 * time.Second):
				t.Fatalf("Close did not unblock a pending %s", name)
			}
		}
		if err := context.Cause(sess.Context()); !errors.Is(err, bidi.ErrSessionClosed) {
			t.Fatalf("Cause(Context) = %v", err)
		}
	})
}

// TestEndedByService: Send after the service ended the stream cleanly
// returns ErrStreamEnded, Recv io.EOF.
func TestEndedByService(t *testing.T) {
	srv := newServer(t, biditest.HandlerFunc(func(st *biditest.Stream) {
		st.Send(bidi.Text("bye"))
	}))
	ctx := testCtx(t)
	sess := open(t, srv.Client(), ctx)
	if m, err := sess.Recv(ctx); err != nil || string(m.Data) != "bye" {
		t.Fatalf("Recv = %q, %v", m.Data, err)
	}
	if _, err := sess.Recv(ctx); err != io.EOF {
		t.Fatalf("Recv = %v, want io.EOF", err)
	}
	if err := sess.Send(ctx, bidi.Text("x")); !errors.Is(err, bidi.ErrStreamEnded) {
		t.Fatalf("Send = %v, want ErrStreamEnded", err)
	}
	if err := sess.CloseSend(); err != nil {
		t.Fatalf("CloseSend = %v", err)
	}
}

// errEntropy is the error of failingSource.
var errEntropy = errors.New("entropy exhausted")

// failingSource is a PaddingSource that returns errEntropy once its
// budget of bytes is spent, or at once while fail is set.
type failingSource struct {
	mu     sync.Mutex
	budget int
	fail   bool
}

func (f *failingSource) Read(p []byte) (int, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.fail || f.budget <= 0 {
		return 0, errEntropy
	}
	n := min(len(p), f.budget)
	clear(p[:n])
	f.budget -= n
	return n, nil
}

// TestSendErrorMidMessageAborts: an error other than the context's that
// stops a fragmented Send after some of its parts were queued (here the
// PaddingSource failing) aborts the session with SendInterruptedError, so
// the next message is never joined to the half-sent one. An error before
// the first part is queued leaves the session usable.
func TestSendErrorMidMessageAborts(t *testing.T) {
	t.Run("mid-message", func(t *testing.T) {
		got := make(chan string, 10)
		srv := newServer(t, biditest.HandlerFunc(func(st *biditest.Stream) {
			for {
				m, err := st.Recv()
				if err != nil {
					close(got)
					return
				}
				got <- string(m.Data)
			}
		}))
		// 8-byte parts padded to 64 bytes: the padding reader's first 4 KiB
		// block covers about 70 of the 200 parts.
		src := &failingSource{budget: 4096 + 10}
		ctx := testCtx(t)
		sess := open(t, srv.Client(func(o *bidi.Options) { o.MaxPartSize = 8; o.PaddingSource = src }), ctx)
		err := sess.Send(ctx, bidi.Binary(bytes.Repeat([]byte("X"), 8*200)))
		var ie *bidi.SendInterruptedError
		if !errors.As(err, &ie) || !errors.Is(err, errEntropy) {
			t.Fatalf("Send = %v, want *SendInterruptedError wrapping the source's error", err)
		}
		src.mu.Lock()
		src.budget = 1 << 20
		src.mu.Unlock()
		if err := sess.Send(ctx, bidi.Text("second")); !errors.As(err, &ie) {
			t.Fatalf("Send after the failure = %v, want the *SendInterruptedError", err)
		}
		if err := sess.CloseSend(); !errors.As(err, &ie) {
			t.Fatalf("CloseSend after the failure = %v, want the *SendInterruptedError", err)
		}
		if _, err := sess.Recv(ctx); !errors.As(err, &ie) {
			t.Fatalf("Recv after the failure = %v, want the *SendInterruptedError", err)
		}
		select {
		case m, ok := <-got:
			if ok {
				t.Fatalf("the server received a message of %d bytes ending in %q", len(m), m[max(len(m)-8, 0):])
			}
		case <-time.After(5 * time.Second):
			t.Fatal("the server's stream did not end")
		}
	})
	t.Run("first part", func(t *testing.T) {
		srv := newServer(t, biditest.Echo())
		src := &failingSource{budget: 1 << 20, fail: true}
		ctx := testCtx(t)
		sess := open(t, srv.Client(func(o *bidi.Options) { o.MaxPartSize = 8; o.PaddingSource = src }), ctx)
		err := sess.Send(ctx, bidi.Text("first message"))
		var ie *bidi.SendInterruptedError
		if !errors.Is(err, errEntropy) || errors.As(err, &ie) {
			t.Fatalf("Send = %v, want the source's error, session intact", err)
		}
		src.mu.Lock()
		src.fail = false
		src.mu.Unlock()
		roundTrip(t, sess, "second message")
		sess.CloseSend()
		drainEOF(t, sess)
	})
}

// overlapReader is a PaddingSource that is not safe for concurrent use
// and notices when it is used so: each Read takes a while.
type overlapReader struct {
	busy, overlapped atomic.Bool
	reads            atomic.Int32
}

func (r *overlapReader) Read(p []byte) (int, error) {
	if !r.busy.CompareAndSwap(false, true) {
		r.overlapped.Store(true)
		return len(p), nil
	}
	defer r.busy.Store(false)
	r.reads.Add(1)
	time.Sleep(200 * time.Microsecond)
	clear(p)
	return len(p), nil
}

// TestPaddingSourceSharedBySessions: the sessions of a Client share
// Options.PaddingSource, and the Client serialises their reads, so a
// reader that is not safe for concurrent use works (and go test -race
// sees no race).
func TestPaddingSourceSharedBySessions(t *testing.T) {
	srv := newServer(t, biditest.HandlerFunc(func(st *biditest.Stream) {
		for {
			if _, err := st.RecvPart(); err != nil {
				return
			}
		}
	}))
	src := &overlapReader{}
	// Parts padded to 4 KiB: every Send reads the source.
	c := srv.Client(func(o *bidi.Options) { o.PaddingSource = src; o.Padding = bidi.FixedBucket(4096) })
	ctx := testCtx(t)
	const sessions, sends = 4, 25
	var wg sync.WaitGroup
	for range sessions {
		sess := open(t, c, ctx)
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range sends {
				if err := sess.Send(ctx, bidi.Text("x")); err != nil {
					t.Error(err)
					return
				}
			}
			sess.CloseSend()
		}()
	}
	wg.Wait()
	if src.overlapped.Load() {
		t.Fatal("PaddingSource was read concurrently")
	}
	if n := src.reads.Load(); n < sessions*sends {
		t.Fatalf("PaddingSource read %d times, want at least %d", n, sessions*sends)
	}
}
