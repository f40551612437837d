package transport

import (
	"bytes"
	"context"
	"errors"
	"io"
	"math"
	"net"
	"net/http"
	"sync/atomic"
	"testing"

	"golang.org/x/net/http2"
)

// TestStreamWindowUpdateOverflow: WINDOW_UPDATE(stream, 2^31-1) twice
// after the response head (which deadlocked net/http's bundled client).
// That stream is reset with FLOW_CONTROL_ERROR; the connection and its
// other stream keep working, and a later stream uses the same connection.
func TestStreamWindowUpdateOverflow(t *testing.T) {
	rst := make(chan frame, 1)
	srv := newTestServer(t, serverOpts{}, func(sc *serverConn) {
		sc.handshake()
		a, b := sc.headers(), sc.headers()
		sc.writeHeaders(a.StreamID, 200, false)
		sc.writeHeaders(b.StreamID, 200, false)
		sc.writeWindowUpdate(a.StreamID, math.MaxInt32)
		sc.writeWindowUpdate(a.StreamID, math.MaxInt32)
		rst <- sc.reset(a.StreamID)
		body := sc.body(b.StreamID)
		sc.writeData(b.StreamID, true, body)
		c := sc.headers()
		sc.writeHeaders(c.StreamID, 200, true)
		sc.drain()
	})
	var dials atomic.Int32
	tr := newTransport(t, testConfig(&dials))
	ctx := testCtx(t)
	stA, err := tr.NewStream(ctx, srv.url, nil, newBody(10))
	if err != nil {
		t.Fatal(err)
	}
	bodyB := newBody(100)
	stB, err := tr.NewStream(ctx, srv.url, nil, bodyB)
	if err != nil {
		t.Fatal(err)
	}
	if f := <-rst; f.Code != http2.ErrCodeFlowControl {
		t.Errorf("server saw %v, want RST_STREAM(FLOW_CONTROL_ERROR)", f)
	}
	var se *StreamError
	if _, err := readAllAfterResponse(ctx, stA); !errors.As(err, &se) || se.Remote || se.Code != http2.ErrCodeFlowControl {
		t.Fatalf("stream A: %v, want a local *StreamError(FLOW_CONTROL_ERROR)", err)
	}
	if err := bodyB.write(ctx, []byte("still alive")); err != nil {
		t.Fatal(err)
	}
	bodyB.end()
	if b, err := readAllAfterResponse(ctx, stB); err != io.EOF || string(b) != "still alive" {
		t.Fatalf("stream B: %q, %v", b, err)
	}
	stC, err := tr.NewStream(ctx, srv.url, nil, bodyOf(""))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := readAllAfterResponse(ctx, stC); err != io.EOF {
		t.Fatalf("stream C: %v", err)
	}
	if n := dials.Load(); n != 1 {
		t.Errorf("%d dials, want 1", n)
	}
}

// TestConnWindowUpdateOverflow: a WINDOW_UPDATE that overflows the
// connection window is a connection error: the server gets GOAWAY
// (FLOW_CONTROL_ERROR), the streams a *ConnError, and the next stream a
// new connection.
func TestConnWindowUpdateOverflow(t *testing.T) {
	goAway := make(chan frame, 1)
	srv := newTestServer(t, serverOpts{}, func(sc *serverConn) {
		sc.handshake()
		h := sc.headers()
		if sc.n > 1 {
			sc.writeHeaders(h.StreamID, 200, true)
			sc.drain()
			return
		}
		sc.writeHeaders(h.StreamID, 200, false)
		sc.writeWindowUpdate(0, math.MaxInt32)
		goAway <- sc.goAway()
		if !sc.eof() {
			t.Errorf("connection still open after GOAWAY")
		}
	})
	var dials atomic.Int32
	tr := newTransport(t, testConfig(&dials))
	ctx := testCtx(t)
	st, err := tr.NewStream(ctx, srv.url, nil, newBody(10))
	if err != nil {
		t.Fatal(err)
	}
	var ce *ConnError
	if _, err := readAllAfterResponse(ctx, st); !errors.As(err, &ce) || ce.Remote || ce.Code != http2.ErrCodeFlowControl {
		t.Fatalf("stream: %v, want a *ConnError(FLOW_CONTROL_ERROR)", err)
	}
	if f := <-goAway; f.Code != http2.ErrCodeFlowControl || f.LastID != 0 {
		t.Errorf("server saw %v (last stream %d), want GOAWAY(0, FLOW_CONTROL_ERROR)", f, f.LastID)
	}
	st2, err := tr.NewStream(ctx, srv.url, nil, bodyOf(""))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := readAllAfterResponse(ctx, st2); err != io.EOF {
		t.Fatalf("next stream: %v", err)
	}
	if n := dials.Load(); n != 2 {
		t.Errorf("%d dials, want 2", n)
	}
}

// TestZeroWindows: a server whose initial stream window is 0. A stream
// sends only what its own window allows (stream B gets 100 bytes of
// window, stream A none, and A's DATA never comes); sends block, and the
// stream's context (A) and Close (B) unblock them. Each stall is counted
// (SendStalls).
func TestZeroWindows(t *testing.T) {
	rst := make(chan frame, 2)
	gotB := make(chan []byte, 1)
	srv := newTestServer(t, serverOpts{}, func(sc *serverConn) {
		sc.handshake(http2.Setting{ID: http2.SettingInitialWindowSize, Val: 0})
		a, b := sc.headers(), sc.headers()
		sc.writeHeaders(a.StreamID, 200, false)
		sc.writeHeaders(b.StreamID, 200, false)
		sc.writeWindowUpdate(b.StreamID, 100)
		var got []byte
		for len(got) < 100 {
			f, err := sc.readFrame()
			if err != nil {
				sc.fatalf("%v", err)
			}
			if f.Type == http2.FrameData {
				if f.StreamID != b.StreamID {
					sc.fatalf("DATA on stream %d, which has no window", f.StreamID)
				}
				got = append(got, f.Data...)
			}
		}
		sc.ping() // no more DATA before the round trip ends
		gotB <- got
		for range 2 {
			f := sc.expect("RST_STREAM", func(f frame) bool {
				if f.Type == http2.FrameData && len(f.Data) > 0 {
					sc.fatalf("DATA beyond the window: %v", f)
				}
				return f.Type == http2.FrameRSTStream
			})
			rst <- f
		}
		sc.drain()
	})
	tr := newTransport(t, testConfig(nil))
	ctx := testCtx(t)
	actx, cancelA := context.WithCancel(ctx)
	bodyA, bodyB := newBody(10), newBody(10)
	stA, err := tr.NewStream(actx, srv.url, nil, bodyA)
	if err != nil {
		t.Fatal(err)
	}
	stB, err := tr.NewStream(ctx, srv.url, nil, bodyB)
	if err != nil {
		t.Fatal(err)
	}
	msg := bytes.Repeat([]byte("b"), 1000)
	errA, errB := make(chan error, 1), make(chan error, 1)
	go func() { errA <- bodyA.write(ctx, msg) }()
	go func() { errB <- bodyB.write(ctx, msg) }()
	if got := <-gotB; !bytes.Equal(got, msg[:100]) {
		t.Fatalf("server got %d bytes of B, want its window of 100", len(got))
	}
	// Both streams wait with bytes to send and no window, and each
	// stall was counted: A's one, B's two (before its WINDOW_UPDATE and
	// after the 100 bytes), a stall counting once or twice. The
	// connection's window was never used up.
	waitFor(t, "the stalls counted", func() bool {
		a, b := stA.SendStalls(), stB.SendStalls()
		return a == 1 && b >= 2 && b <= 4
	})
	select {
	case err := <-errA:
		t.Fatalf("write on A returned %v with no window", err)
	case err := <-errB:
		t.Fatalf("write on B returned %v with its window used", err)
	default:
	}
	cancelA()
	if err := <-errA; !errors.Is(err, errBodyClosed) {
		t.Errorf("write on A = %v, want the body closed by the reset", err)
	}
	stB.Close()
	if err := <-errB; !errors.Is(err, errBodyClosed) {
		t.Errorf("write on B = %v, want the body closed by Close", err)
	}
	ids := map[uint32]bool{}
	for range 2 {
		f := <-rst
		if f.Code != http2.ErrCodeCancel {
			t.Errorf("server saw %v, want CANCEL", f)
		}
		ids[f.StreamID] = true
	}
	if !ids[stA.ID()] || !ids[stB.ID()] {
		t.Errorf("resets of streams %v, want %d and %d", ids, stA.ID(), stB.ID())
	}
}

// TestConnWindowNeverUpdated: a server that never gives back connection
// window receives exactly 65,535 bytes; the send then blocks until
// Transport.Close.
func TestConnWindowNeverUpdated(t *testing.T) {
	got := make(chan int, 1)
	srv := newTestServer(t, serverOpts{}, func(sc *serverConn) {
		sc.handshake(http2.Setting{ID: http2.SettingInitialWindowSize, Val: 1 << 20})
		h := sc.headers()
		sc.writeHeaders(h.StreamID, 200, false)
		n := 0
		for n < 65535 {
			f := sc.expect("DATA", func(f frame) bool { return f.Type == http2.FrameData })
			n += len(f.Data)
		}
		sc.ping()
		got <- n
		sc.drain()
	})
	tr := New(testConfig(nil))
	defer checkNoEngineGoroutines(t)
	ctx := testCtx(t)
	body := newBody(4096)
	if _, err := tr.NewStream(ctx, srv.url, nil, body); err != nil {
		t.Fatal(err)
	}
	errc := make(chan error, 1)
	go func() { errc <- body.write(ctx, make([]byte, 100000)) }()
	if n := <-got; n != 65535 {
		t.Errorf("server received %d bytes, want the connection window of 65535", n)
	}
	tr.Close()
	if err := <-errc; !errors.Is(err, errBodyClosed) {
		t.Errorf("write = %v, want the body closed by Transport.Close", err)
	}
}

// TestDataBeyondStreamWindow: a server that sends more than the stream
// window gets RST_STREAM(FLOW_CONTROL_ERROR); within the window, the
// window is given back as the application reads.
func TestDataBeyondStreamWindow(t *testing.T) {
	rst := make(chan frame, 1)
	srv := newTestServer(t, serverOpts{}, func(sc *serverConn) {
		sc.handshake()
		// Stream 1: the window, given back as the client reads.
		h := sc.headers()
		sc.writeHeaders(h.StreamID, 200, false)
		sc.writeData(h.StreamID, false, make([]byte, 1000))
		f := sc.expect("WINDOW_UPDATE", func(f frame) bool { return f.Type == http2.FrameWindowUpdate && f.StreamID == h.StreamID })
		sc.writeData(h.StreamID, true, make([]byte, f.Increment))
		// Stream 3: one byte too many.
		h = sc.headers()
		sc.writeHeaders(h.StreamID, 200, false)
		sc.writeData(h.StreamID, false, make([]byte, 1001))
		rst <- sc.reset(h.StreamID)
		sc.drain()
	})
	cfg := testConfig(nil)
	cfg.StreamWindow = 1000
	tr := newTransport(t, cfg)
	ctx := testCtx(t)
	st, err := tr.NewStream(ctx, srv.url, nil, bodyOf(""))
	if err != nil {
		t.Fatal(err)
	}
	if b, err := readAllAfterResponse(ctx, st); err != io.EOF || len(b) <= 1000 {
		t.Fatalf("read %d bytes, %v; want more than the window and io.EOF", len(b), err)
	}
	st, err = tr.NewStream(ctx, srv.url, nil, bodyOf(""))
	if err != nil {
		t.Fatal(err)
	}
	if f := <-rst; f.Code != http2.ErrCodeFlowControl {
		t.Errorf("server saw %v, want RST_STREAM(FLOW_CONTROL_ERROR)", f)
	}
	var se *StreamError
	if _, err := readAllAfterResponse(ctx, st); !errors.As(err, &se) || se.Remote || se.Code != http2.ErrCodeFlowControl {
		t.Fatalf("got %v, want a local *StreamError(FLOW_CONTROL_ERROR)", err)
	}
}

// TestPaddingGivenBack: padding is flow-controlled but never read; the
// client gives it back at once, even when the application reads nothing.
func TestPaddingGivenBack(t *testing.T) {
	inc := make(chan uint32, 1)
	srv := newTestServer(t, serverOpts{}, func(sc *serverConn) {
		sc.handshake()
		h := sc.headers()
		sc.writeHeaders(h.StreamID, 200, false)
		pad := make([]byte, 200)
		for range 4 {
			sc.write(func() error { return sc.fr.WriteDataPadded(h.StreamID, false, []byte("x"), pad) })
		}
		f := sc.expect("WINDOW_UPDATE", func(f frame) bool { return f.Type == http2.FrameWindowUpdate && f.StreamID == h.StreamID })
		inc <- f.Increment
		sc.drain()
	})
	cfg := testConfig(nil)
	cfg.StreamWindow = 1000
	tr := newTransport(t, cfg)
	ctx := testCtx(t)
	st, err := tr.NewStream(ctx, srv.url, nil, newBody(10))
	if err != nil {
		t.Fatal(err)
	}
	if n := <-inc; n < 250 {
		t.Errorf("window update of %d", n)
	}
	st.Close()
}

// TestDataOnClosedStreamRefundsConnWindow: DATA for a stream the client
// already reset still counts against the connection window, and the
// client gives that window back: a server sending four windows' worth on
// a dead stream, within its connection window, never stalls, and the
// connection still carries a new stream.
func TestDataOnClosedStreamRefundsConnWindow(t *testing.T) {
	flooded := make(chan struct{})
	srv := newTestServer(t, serverOpts{}, func(sc *serverConn) {
		sc.handshake()
		h := sc.headers()
		sc.writeHeaders(h.StreamID, 200, false)
		sc.reset(h.StreamID)
		window, sent := 65535, 0
		chunk := make([]byte, 16384)
		for sent < 4*65535 {
			if window < len(chunk) {
				f := sc.expect("connection WINDOW_UPDATE", func(f frame) bool { return f.Type == http2.FrameWindowUpdate && f.StreamID == 0 })
				window += int(f.Increment)
				continue
			}
			sc.writeData(h.StreamID, false, chunk)
			window -= len(chunk)
			sent += len(chunk)
		}
		close(flooded)
		h = sc.headers()
		sc.writeHeaders(h.StreamID, 200, false)
		sc.writeData(h.StreamID, true, []byte("fine"))
		sc.drain()
	})
	cfg := testConfig(nil)
	cfg.ConnWindow = 65535
	tr := newTransport(t, cfg)
	ctx := testCtx(t)
	st, err := tr.NewStream(ctx, srv.url, nil, newBody(10))
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := st.Response(ctx); err != nil {
		t.Fatal(err)
	}
	st.Close()
	<-flooded
	st, err = tr.NewStream(ctx, srv.url, http.Header{}, bodyOf(""))
	if err != nil {
		t.Fatal(err)
	}
	if b, err := readAllAfterResponse(ctx, st); err != io.EOF || string(b) != "fine" {
		t.Fatalf("new stream: %q, %v", b, err)
	}
}

// TestWindowUpdateOnClosedStreamWhileOpening: a WINDOW_UPDATE for a stream
// that is over is ignored, and telling that stream from one never opened
// reads the next stream ID under the lock that openStream writes it under
// (a data race under -race before). The conn is not started: the test
// plays the read loop itself.
func TestWindowUpdateOnClosedStreamWhileOpening(t *testing.T) {
	t.Parallel()
	tr := newTransport(t, testConfig(nil))
	c1, c2 := net.Pipe()
	defer c1.Close()
	defer c2.Close()
	cc := newConn(tr, endpoint{scheme: "http", addr: "x:80", host: "x"}, c1)
	cc.nextID = 3 // stream 1 was opened and is over
	const opens = 2000
	done := make(chan struct{})
	go func() {
		defer close(done)
		for range opens {
			cc.mu.Lock()
			cc.reserveLocked()
			cc.mu.Unlock()
			if err := cc.openStream(newStream(cc, nil, nil)); err != nil {
				t.Errorf("openStream: %v", err)
				return
			}
		}
	}()
	f := &http2.WindowUpdateFrame{FrameHeader: http2.FrameHeader{Type: http2.FrameWindowUpdate, StreamID: 1}, Increment: 1}
	for {
		select {
		case <-done:
			if got := cc.nextID; got != 3+2*opens {
				t.Fatalf("next stream ID %d, want %d", got, 3+2*opens)
			}
			return
		default:
		}
		if err := cc.onWindowUpdate(f); err != nil {
			t.Fatalf("WINDOW_UPDATE on a closed stream: %v", err)
		}
	}
}
