package bidi_test

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"strings"
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
		biditest.Echo().ServeBidi(st)
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
// some parts were taken aborts the session with SendInterruptedError. The
// context ends once flow control holds the request back, so parts were
// taken, whatever the machine's speed.
func TestSendInterruptedMidMessage(t *testing.T) {
	srv := newServer(t, biditest.HandlerFunc(func(st *biditest.Stream) {
		st.Accept()
		<-st.Context().Done()
	}), func(s *biditest.Server) { s.MaxReceiveBufferPerStream = 64 << 10 })
	ctx := testCtx(t)
	sess := open(t, srv.Client(func(o *bidi.Options) { o.MaxPartSize = 1 << 10 }), ctx)
	short, cancel := context.WithCancel(ctx)
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- sess.Send(short, bidi.Binary(make([]byte, 1<<20))) }()
	awaitSendState(t, ctx, done, "flow control holding the Send back", func() bool { return bidi.FlowBlocked(sess) })
	cancel()
	err := <-done
	var ie *bidi.SendInterruptedError
	if !errors.As(err, &ie) || !errors.Is(err, context.Canceled) || !errors.Is(err, bidi.ErrSendInterrupted) {
		t.Fatalf("Send = %v, want an error matching ErrSendInterrupted wrapping Canceled", err)
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
	// The handler echoes each message once answer is closed.
	answer := make(chan struct{})
	handler := biditest.HandlerFunc(func(st *biditest.Stream) {
		st.Accept()
		select {
		case <-answer:
		case <-st.Context().Done():
			return
		}
		biditest.Echo().ServeBidi(st)
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
		close(answer)
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
		goBlocked(t, "(*Session).Recv", func() { _, err := sess.Recv(ctx); errc <- err })
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
		goBlocked(t, "(*Session).Recv", func() { _, err := sess.Recv(ctx); recvErr <- err })
		goBlocked(t, "(*Session).Send", func() {
			for {
				if err := sess.Send(ctx, bidi.Binary(make([]byte, 8<<10))); err != nil {
					sendErr <- err
					return
				}
			}
		})
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

// TestRecvWithoutDeadline: a Recv whose context is never done
// (context.Background, which waits on the session alone) and which found
// nothing to read still returns when the session ends, whichever way: a
// reply, the model's clean end, a reset, the session's context, Close.
func TestRecvWithoutDeadline(t *testing.T) {
	ctx := testCtx(t)
	// The handler answers, then acts on what the test sends to act.
	act := make(chan string, 1)
	srv := newServer(t, biditest.HandlerFunc(func(st *biditest.Stream) {
		st.Accept()
		select {
		case a := <-act:
			switch a {
			case "reply":
				st.Send(bidi.Text("late"))
				<-st.Context().Done()
			case "end":
			case "reset":
				st.Reset()
			}
		case <-st.Context().Done():
		}
	}))
	for _, tc := range []struct {
		name  string
		end   func(sess *bidi.Session, cancel context.CancelFunc)
		check func(m bidi.Message, err error) bool
		want  string
	}{
		{"reply", func(*bidi.Session, context.CancelFunc) { act <- "reply" },
			func(m bidi.Message, err error) bool { return err == nil && string(m.Data) == "late" }, `"late"`},
		{"model ends", func(*bidi.Session, context.CancelFunc) { act <- "end" },
			func(_ bidi.Message, err error) bool { return err == io.EOF }, "io.EOF"},
		{"reset", func(*bidi.Session, context.CancelFunc) { act <- "reset" },
			func(_ bidi.Message, err error) bool { return err != nil && err != io.EOF }, "an error"},
		{"session context", func(_ *bidi.Session, cancel context.CancelFunc) { cancel() },
			func(_ bidi.Message, err error) bool { return errors.Is(err, context.Canceled) }, "context.Canceled"},
		{"Close", func(sess *bidi.Session, _ context.CancelFunc) { sess.Close() },
			func(_ bidi.Message, err error) bool { return errors.Is(err, bidi.ErrSessionClosed) }, "ErrSessionClosed"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sctx, cancel := context.WithCancel(ctx)
			defer cancel()
			sess := open(t, srv.Client(noRetry), sctx)
			if _, err := sess.Response(ctx); err != nil {
				t.Fatalf("Response: %v", err)
			}
			type result struct {
				m   bidi.Message
				err error
			}
			got := make(chan result, 1)
			goBlocked(t, "(*Session).Recv", func() {
				m, err := sess.Recv(context.Background())
				got <- result{m, err}
			})
			tc.end(sess, cancel)
			select {
			case r := <-got:
				if !tc.check(r.m, r.err) {
					t.Fatalf("pending Recv = %q, %v; want %s", r.m.Data, r.err, tc.want)
				}
			case <-ctx.Done():
				t.Fatal("the pending Recv did not return")
			}
		})
	}
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
	// The pause is the subject, not an ordering: the window in which a
	// read the Client failed to serialise would overlap this one.
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
	c := srv.Client(func(o *bidi.Options) { o.PaddingSource = src; o.Padding = fixedBucket(4096) })
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

// gateSource is a PaddingSource whose reads succeed, except that read
// number at (from 1) closes entered and waits for gate; once the gate is
// open, that read and every later one return fail (nil: they succeed).
// It records the largest read asked of it.
type gateSource struct {
	at      int32
	fail    error
	entered chan struct{}
	gate    chan struct{}
	once    sync.Once
	reads   atomic.Int32
	largest atomic.Int64 // reads do not overlap
}

func newGateSource(t *testing.T, at int32, fail error) *gateSource {
	g := &gateSource{at: at, fail: fail, entered: make(chan struct{}), gate: make(chan struct{})}
	t.Cleanup(g.open) // release a blocked read before the sessions close
	return g
}

func (g *gateSource) Read(p []byte) (int, error) {
	n := g.reads.Add(1)
	if n == g.at {
		close(g.entered)
		<-g.gate
	}
	if int64(len(p)) > g.largest.Load() {
		g.largest.Store(int64(len(p)))
	}
	if n >= g.at && g.fail != nil {
		return 0, g.fail
	}
	clear(p)
	return len(p), nil
}

// open opens the gate; calling it again does nothing.
func (g *gateSource) open() { g.once.Do(func() { close(g.gate) }) }

// waitEntered waits for the gated read to start.
func (g *gateSource) waitEntered(t *testing.T) {
	t.Helper()
	select {
	case <-g.entered:
	case <-time.After(5 * time.Second):
		t.Fatal("the PaddingSource's gated read did not start")
	}
}

// TestSendMidMessageAfterStreamEnd: the service sends messages and a
// ModelStreamError and ends the stream, while nobody receives and a
// fragmented Send is between two parts. The stream being over, nothing
// half-sent can reach the model: whether the next part fails to encode
// (the PaddingSource fails) or not, Send returns the reason the stream
// ended (a stand-in wrapping ErrStreamEnded, since Recv has not decoded
// the reason yet), not a SendInterruptedError, and does not abort the
// session, so Recv still returns every message and then the reason.
func TestSendMidMessageAfterStreamEnd(t *testing.T) {
	isMSE := func(err error) bool {
		var mse *bidi.ModelStreamError
		return errors.As(err, &mse) && mse.ErrorCode_ == "E"
	}
	for _, tc := range []struct {
		name     string
		messages int
		fail     error
	}{
		{"40 messages, source fails", 40, errEntropy},
		{"40 messages, source works", 40, nil},
		{"100 messages, source fails", 100, errEntropy},
		{"100 messages, source works", 100, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// 8-byte parts, each padded with 4 KiB read from the source:
			// the second part's read waits for the gate, and the service
			// ends the stream once it has the first part and the Send is
			// in that read (before, a slow Send could see the end first
			// and never read).
			src := newGateSource(t, 2, tc.fail)
			srv := newServer(t, biditest.HandlerFunc(func(st *biditest.Stream) {
				if _, err := st.RecvPart(); err != nil { // the first part
					return
				}
				select {
				case <-src.entered:
				case <-st.Context().Done():
					return
				}
				for i := 0; i < tc.messages; i++ {
					st.Send(bidi.Text(fmt.Sprint(i)))
				}
				st.SendException("ModelStreamError", []byte(`{"Message":"container died","ErrorCode":"E"}`))
			}))
			c := srv.Client(func(o *bidi.Options) {
				o.MaxPartSize = 8
				o.PaddingSource = src
				o.Padding = func(int) int { return 4096 }
			})
			ctx := testCtx(t)
			sess := open(t, c, ctx)
			sendErr := make(chan error, 1)
			go func() { sendErr <- sess.Send(ctx, bidi.Binary(make([]byte, 8*10))) }()
			src.waitEntered(t)
			want := func(what string, err error) {
				t.Helper()
				var ie *bidi.SendInterruptedError
				if errors.As(err, &ie) {
					t.Fatalf("%s = %v, want the reason the stream ended", what, err)
				}
				if !errors.Is(err, bidi.ErrStreamEnded) {
					t.Fatalf("%s = %v, want the reason the stream ended", what, err)
				}
			}
			// Another Send waits for the send lock until the send side
			// fails: the session has seen the end of the stream.
			want("concurrent Send", within(t, "concurrent Send", func() error { return sess.Send(ctx, bidi.Text("x")) }))
			src.open()
			want("interrupted Send", within(t, "interrupted Send", func() error { return <-sendErr }))
			for i := 0; i < tc.messages; i++ {
				if m, err := sess.Recv(ctx); err != nil || string(m.Data) != fmt.Sprint(i) {
					t.Fatalf("Recv %d = %q, %v", i, m.Data, err)
				}
			}
			if _, err := sess.Recv(ctx); !isMSE(err) {
				t.Fatalf("Recv after the messages = %v, want *ModelStreamError", err)
			}
			if err := sess.Send(ctx, bidi.Text("x")); !isMSE(err) {
				t.Fatalf("Send after Recv = %v, want *ModelStreamError", err)
			}
		})
	}
}

// TestPaddingSourceWaitBounded: while a read of the shared PaddingSource
// blocks in one session, another session's Send waiting for its turn is
// still bounded by its context (before its first part is queued: ctx's
// error, session intact; after: SendInterruptedError) and by Close.
func TestPaddingSourceWaitBounded(t *testing.T) {
	srv := newServer(t, biditest.Echo())
	src := newGateSource(t, 1, nil)
	// An 8-byte part carries no padding; any other part 4 KiB, read from
	// the source.
	c := srv.Client(func(o *bidi.Options) {
		o.MaxPartSize = 8
		o.PaddingSource = src
		o.Padding = func(n int) int {
			if n == 8 {
				return 0
			}
			return 4096
		}
	})
	ctx := testCtx(t)
	a, b, cl, d := open(t, c, ctx), open(t, c, ctx), open(t, c, ctx), open(t, c, ctx)
	aErr := make(chan error, 1)
	go func() { aErr <- a.Send(ctx, bidi.Text("a")) }()
	src.waitEntered(t) // a's read holds the source

	var ie *bidi.SendInterruptedError
	err := within(t, "Send with an expired context", func() error {
		short, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
		defer cancel()
		return b.Send(short, bidi.Text("b"))
	})
	if !errors.Is(err, context.DeadlineExceeded) || errors.As(err, &ie) {
		t.Fatalf("Send before its first part = %v, want DeadlineExceeded, session intact", err)
	}

	err = within(t, "Send with an expired context mid-message", func() error {
		short, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
		defer cancel()
		return d.Send(short, bidi.Binary(make([]byte, 8+3))) // the 8-byte part is queued
	})
	if !errors.As(err, &ie) || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Send after its first part = %v, want *SendInterruptedError wrapping DeadlineExceeded", err)
	}

	clErr := make(chan error, 1)
	goBlocked(t, "(*Session).Send", func() { clErr <- cl.Send(ctx, bidi.Text("c")) })
	cl.Close()
	if err := within(t, "Send after Close", func() error { return <-clErr }); !errors.Is(err, bidi.ErrSessionClosed) {
		t.Fatalf("Send waiting for the source after Close = %v, want ErrSessionClosed", err)
	}

	src.open()
	if err := within(t, "Send holding the source", func() error { return <-aErr }); err != nil {
		t.Fatalf("Send holding the source: %v", err)
	}
	if m, err := a.Recv(ctx); err != nil || string(m.Data) != "a" {
		t.Fatalf("Recv = %q, %v", m.Data, err)
	}
	roundTrip(t, b, "b again")
}

// TestPaddingSourceReadSize: as Options.PaddingSource documents, no read
// of the source asks for more than 4 KiB, even for the largest padding.
func TestPaddingSourceReadSize(t *testing.T) {
	srv := newServer(t, biditest.Echo())
	src := newGateSource(t, -1, nil) // never waits
	c := srv.Client(func(o *bidi.Options) {
		o.PaddingSource = src
		o.Padding = func(int) int { return 32767 }
	})
	ctx := testCtx(t)
	sess := open(t, c, ctx)
	for range 3 {
		roundTrip(t, sess, "x")
	}
	if n := src.largest.Load(); n == 0 || n > 4096 {
		t.Fatalf("largest read of the PaddingSource: %d bytes, want 1 to 4096", n)
	}
}

// TestSendStalledBetweenParts: a Send whose context has ended before it
// queues its part, on a session held back by flow control while replies
// wait unread, gets the same explanation as one whose context ends while
// it waits for room. A stalled Send meets its context's end there,
// between two parts, when the window opened for a moment (under load, 1
// run of TestSendStalledByUnreadReplies in about 30 got the bare
// "context canceled"). The model here sends one reply and never reads,
// so that the stall lasts; small messages, so that each Send is one part
// and the session survives the one whose wait its context ends.
func TestSendStalledBetweenParts(t *testing.T) {
	t.Parallel()
	srv := newServer(t, biditest.HandlerFunc(func(st *biditest.Stream) {
		if st.Send(bidi.Text("unread")) == nil {
			<-st.Context().Done()
		}
	}))
	ctx := testCtx(t)
	sess := open(t, srv.Client(), ctx)
	sendCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	done := make(chan error, 1)
	go func() {
		for {
			if err := sess.Send(sendCtx, bidi.Binary(make([]byte, 1024))); err != nil {
				done <- err
				return
			}
		}
	}()
	// For good once true: nothing reads.
	awaitSendState(t, ctx, done, "the stall", func() bool { return bidi.StalledByUnreadReplies(sess) })
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("the stalled Send = %v, want it to match context.Canceled", err)
	}
	// sendCtx has ended: this Send meets it before it queues anything.
	err := sess.Send(sendCtx, bidi.Binary(make([]byte, 1024)))
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("Send with an ended context = %v, want it to match context.Canceled", err)
	}
	mustExplainStall(t, "Send with an ended context on a stalled session", err)
}

// TestSendStalledByUnreadReplies: a large Send to a model that echoes,
// with nobody calling Recv, stalls for good once the replies fill the
// response's window and the model stops taking the request. When its
// context ends, the error says so: flow control, and the unread replies
// (still matching the context's error).
func TestSendStalledByUnreadReplies(t *testing.T) {
	t.Parallel()
	srv := newServer(t, biditest.Echo())
	ctx := testCtx(t)
	sess := open(t, srv.Client(), ctx)
	sendCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- sess.Send(sendCtx, bidi.Binary(make([]byte, 8<<20))) }()
	// Wait for the state itself (bounded by the test's context): the
	// request held back while replies wait unread.
	awaitSendState(t, ctx, done, "the stall", func() bool { return bidi.StalledByUnreadReplies(sess) })
	cancel()
	err := <-done
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("Send = %v, want it to match context.Canceled", err)
	}
	mustExplainStall(t, "Send", err)
}

// TestSendStallBeforeTheWindowOpens: a Send waits behind a flow-control
// stall (replies unread, the model taking no more); then, before its
// context ends, the model reads a little more, so that the window is open
// and the queue empty when it does. Send still explains the stall, which
// the engine counted while the Send ran. (It looked only at the window and
// the queue at the end; under load a late WINDOW_UPDATE left the
// context's bare error.)
func TestSendStallBeforeTheWindowOpens(t *testing.T) {
	readMore := make(chan struct{})
	srv := newServer(t, biditest.HandlerFunc(func(st *biditest.Stream) {
		if st.Send(bidi.Text("a reply nobody reads")) != nil {
			return
		}
		<-readMore
		// What the model reads, the server gives back as window: more
		// than the client's queue holds, so that the window stays open.
		for n := 0; n < 256<<10; {
			p, err := st.RecvPart()
			if err != nil {
				return
			}
			n += len(p.Data)
		}
		<-st.Context().Done()
	}))
	ctx := testCtx(t)
	sess := open(t, srv.Client(), ctx)
	sendCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	// The Send's next wait after the model read more is held until the
	// window is open, the writer has taken the queue and the context
	// has ended.
	var armed atomic.Bool
	paused, resume := make(chan struct{}), make(chan struct{})
	release := sync.OnceFunc(func() { close(resume) })
	defer release() // a failed test lets the Send go
	defer bidi.SetSendWaitHook(func(s *bidi.Session) {
		if s == sess && armed.CompareAndSwap(true, false) {
			close(paused)
			<-resume
		}
	})()
	done := make(chan error, 1)
	go func() { done <- sess.Send(sendCtx, bidi.Binary(make([]byte, 8<<20))) }()
	awaitSendState(t, ctx, done, "the stall", func() bool { return bidi.StalledByUnreadReplies(sess) })
	armed.Store(true)
	close(readMore)
	select {
	case <-paused:
	case err := <-done:
		t.Fatalf("Send = %v before it waited again", err)
	}
	awaitSendState(t, ctx, done, "the window open and the queue taken", func() bool {
		return !bidi.FlowBlocked(sess) && bidi.SendBacklog(sess) == 0
	})
	cancel()
	release()
	err := <-done
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("Send = %v, want it to match context.Canceled", err)
	}
	mustExplainStall(t, "Send", err)
}

// awaitSendState waits until cond holds for a Send running on another
// goroutine (done receives its result), failing the test if the Send
// returns first or ctx ends. The engine signals no such state, so cond
// is looked at again every millisecond; the outcome is cond's, never the
// interval's.
func awaitSendState(t *testing.T, ctx context.Context, done <-chan error, what string, cond func() bool) {
	t.Helper()
	for !cond() {
		select {
		case err := <-done:
			t.Fatalf("Send = %v before %s", err, what)
		case <-ctx.Done():
			t.Fatalf("never saw %s", what)
		case <-time.After(time.Millisecond):
		}
	}
}

// mustExplainStall fails the test unless err, what's error, explains a
// flow-control stall behind unread replies.
func mustExplainStall(t *testing.T, what string, err error) {
	t.Helper()
	for _, want := range []string{"flow control", "unread", "Recv"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("%s = %q, want it to mention %q", what, err, want)
		}
	}
}
