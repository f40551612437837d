package transport

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/net/http2"
)

// TestRefusedStream: RST_STREAM(REFUSED_STREAM) matches ErrRefused.
func TestRefusedStream(t *testing.T) {
	srv := newTestServer(t, serverOpts{}, func(sc *serverConn) {
		sc.handshake()
		h := sc.headers()
		sc.writeReset(h.StreamID, http2.ErrCodeRefusedStream)
		sc.drain()
	})
	tr := newTransport(t, testConfig(nil))
	ctx := testCtx(t)
	st, err := tr.NewStream(ctx, srv.url, nil, newBody(10))
	if err != nil {
		t.Fatal(err)
	}
	_, _, err = st.Response(ctx)
	var se *StreamError
	if !errors.Is(err, ErrRefused) || !errors.As(err, &se) || !se.Remote {
		t.Fatalf("Response = %v, want a remote *StreamError matching ErrRefused", err)
	}
}

// TestNoStreamsAllowed: a server that allows no streams
// (SETTINGS_MAX_CONCURRENT_STREAMS 0) on every connection. Concurrent
// NewStream calls fail with a refusal after a bounded number of dials,
// not a storm.
func TestNoStreamsAllowed(t *testing.T) {
	srv := newTestServer(t, serverOpts{}, func(sc *serverConn) {
		sc.handshake(http2.Setting{ID: http2.SettingMaxConcurrentStreams, Val: 0})
		sc.drain()
	})
	var dials atomic.Int32
	tr := newTransport(t, testConfig(&dials))
	ctx := testCtx(t)
	const callers = 3
	errs := make(chan error, callers)
	start := time.Now()
	for range callers {
		go func() {
			_, err := tr.NewStream(ctx, srv.url, nil, newBody(10))
			errs <- err
		}()
	}
	for range callers {
		if err := <-errs; !errors.Is(err, ErrRefused) {
			t.Errorf("NewStream = %v, want ErrRefused", err)
		}
	}
	if n := dials.Load(); n > DefaultMaxRefusals+1 {
		t.Errorf("%d dials for %d callers, want at most %d", n, callers, DefaultMaxRefusals+1)
	}
	t.Logf("%d dials in %v", dials.Load(), time.Since(start))
}

// TestGoAwayLastStreamZero: a server that answers every stream with
// GOAWAY(last stream 0). Each stream is refused (safe to send again), one
// dial per attempt, and the dial backoff grows from one attempt to the
// next instead of starting over with each connection.
func TestGoAwayLastStreamZero(t *testing.T) {
	srv := newTestServer(t, serverOpts{}, func(sc *serverConn) {
		sc.handshake()
		sc.headers()
		sc.writeGoAway(0, http2.ErrCodeNo)
		sc.drain()
	})
	var dials atomic.Int32
	tr := newTransport(t, testConfig(&dials))
	ctx := testCtx(t)
	p := poolOf(t, tr, srv)
	const attempts = 4
	for i := range attempts {
		st, err := tr.NewStream(ctx, srv.url, nil, newBody(10))
		if err == nil {
			_, _, err = st.Response(ctx)
		}
		if !errors.Is(err, ErrRefused) {
			t.Fatalf("attempt %d: %v, want ErrRefused", i, err)
		}
		waitFor(t, "the refusal counted", func() bool { p.mu.Lock(); defer p.mu.Unlock(); return p.failures == i+1 })
	}
	if n := dials.Load(); n != attempts {
		t.Errorf("%d dials for %d attempts", n, attempts)
	}
}

// TestGracefulGoAway: GOAWAY(last stream N) refuses the streams above N;
// stream N finishes on the old connection, which then closes; new
// streams go to a new connection.
func TestGracefulGoAway(t *testing.T) {
	oldClosed := make(chan bool, 1)
	srv := newTestServer(t, serverOpts{}, func(sc *serverConn) {
		sc.handshake()
		if sc.n > 1 {
			h := sc.headers()
			sc.writeHeaders(h.StreamID, 200, true)
			sc.drain()
			return
		}
		a, b := sc.headers(), sc.headers()
		if a.StreamID != 1 || b.StreamID != 3 {
			sc.fatalf("streams %d, %d", a.StreamID, b.StreamID)
		}
		sc.writeHeaders(1, 200, false)
		sc.writeGoAway(1, http2.ErrCodeNo)
		body := sc.body(1)
		sc.writeData(1, true, body)
		sc.goAway()
		oldClosed <- sc.eof()
	})
	var dials atomic.Int32
	tr := newTransport(t, testConfig(&dials))
	ctx := testCtx(t)
	body1 := newBody(100)
	st1, err := tr.NewStream(ctx, srv.url, nil, body1)
	if err != nil {
		t.Fatal(err)
	}
	st3, err := tr.NewStream(ctx, srv.url, nil, newBody(10))
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := st3.Response(ctx); !errors.Is(err, ErrRefused) {
		t.Fatalf("stream 3: %v, want ErrRefused", err)
	}
	st5, err := tr.NewStream(ctx, srv.url, nil, bodyOf(""))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := readAllAfterResponse(ctx, st5); err != io.EOF {
		t.Fatalf("stream on the new connection: %v", err)
	}
	if st5.ID() != 1 || dials.Load() != 2 {
		t.Errorf("new stream has ID %d after %d dials; want 1 on a second connection", st5.ID(), dials.Load())
	}
	body1.write(ctx, []byte("finishing"))
	body1.end()
	if b, err := readAllAfterResponse(ctx, st1); err != io.EOF || string(b) != "finishing" {
		t.Fatalf("stream 1: %q, %v", b, err)
	}
	if !<-oldClosed {
		t.Errorf("the old connection did not close after its last stream")
	}
}

// TestStreamLimits: the server's SETTINGS_MAX_CONCURRENT_STREAMS and the
// client's MaxStreamsPerConn are never exceeded on a connection, and N
// streams opened at once cost at most ceil(N/limit)+1 dials. The server
// holds every stream open until all N are open, so the limits are tested
// under full load.
func TestStreamLimits(t *testing.T) {
	for _, tc := range []struct {
		serverMax, clientCap, n int
	}{
		{serverMax: 2, n: 7},
		{clientCap: 1, n: 3},
		{clientCap: 4, n: 10},
		{serverMax: 3, clientCap: 2, n: 5},
	} {
		t.Run(fmt.Sprintf("server%d-client%d-n%d", tc.serverMax, tc.clientCap, tc.n), func(t *testing.T) {
			limit := tc.serverMax
			if tc.clientCap > 0 && (limit == 0 || tc.clientCap < limit) {
				limit = tc.clientCap
			}
			var (
				mu      sync.Mutex
				total   int // streams opened, on all connections
				maxOpen int // most streams open at once on one connection
			)
			release := make(chan struct{})
			srv := newTestServer(t, serverOpts{}, func(sc *serverConn) {
				var settings []http2.Setting
				if tc.serverMax > 0 {
					settings = append(settings, http2.Setting{ID: http2.SettingMaxConcurrentStreams, Val: uint32(tc.serverMax)})
				}
				sc.handshake(settings...)
				frames := sc.frames()
				var ids []uint32 // all open: none ends before release
				for {
					select {
					case f, ok := <-frames:
						if !ok {
							return
						}
						if f.Type != http2.FrameHeaders {
							continue
						}
						ids = append(ids, f.StreamID)
						sc.writeHeaders(f.StreamID, 200, false)
						mu.Lock()
						total++
						maxOpen = max(maxOpen, len(ids))
						if total == tc.n {
							close(release)
						}
						mu.Unlock()
					case <-release:
						for _, id := range ids {
							sc.writeData(id, true, nil)
						}
						for range frames {
						}
						return
					}
				}
			})
			var dials atomic.Int32
			cfg := testConfig(&dials)
			cfg.MaxStreamsPerConn = tc.clientCap
			tr := newTransport(t, cfg)
			ctx := testCtx(t)
			var wg sync.WaitGroup
			for range tc.n {
				wg.Add(1)
				go func() {
					defer wg.Done()
					st, err := tr.NewStream(ctx, srv.url, http.Header{}, bodyOf("x"))
					if err != nil {
						t.Error(err)
						return
					}
					if _, err := readAllAfterResponse(ctx, st); err != io.EOF {
						t.Error(err)
					}
				}()
			}
			wg.Wait()
			if maxOpen > limit {
				t.Errorf("%d streams open at once on a connection, limit %d", maxOpen, limit)
			}
			if d, bound := int(dials.Load()), (tc.n+limit-1)/limit+1; d > bound {
				t.Errorf("%d dials for %d streams, want at most %d", d, tc.n, bound)
			}
		})
	}
}

// TestCloseFailsEverything: Transport.Close fails an open stream, a
// NewStream waiting for a connection, and every later NewStream, with
// ErrClosed; the server sees its connections closed.
func TestCloseFailsEverything(t *testing.T) {
	closed := make(chan bool, 1)
	srv := newTestServer(t, serverOpts{}, func(sc *serverConn) {
		if sc.n > 1 {
			sc.drain() // a dial that never completes
			return
		}
		sc.handshake()
		h := sc.headers()
		sc.writeHeaders(h.StreamID, 200, false)
		closed <- sc.eof()
	})
	cfg := testConfig(nil)
	cfg.MaxStreamsPerConn = 1
	tr := New(cfg)
	defer checkNoEngineGoroutines(t)
	ctx := testCtx(t)
	body := newBody(10)
	st, err := tr.NewStream(ctx, srv.url, nil, body)
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := st.Response(ctx); err != nil {
		t.Fatal(err)
	}
	readErr := make(chan error, 1)
	go func() { _, err := readAll(st); readErr <- err }()
	waitErr := make(chan error, 1)
	go func() { _, err := tr.NewStream(ctx, srv.url, nil, newBody(10)); waitErr <- err }()
	p := poolOf(t, tr, srv)
	waitFor(t, "a waiter", func() bool { p.mu.Lock(); defer p.mu.Unlock(); return len(p.waiters) == 1 && p.dialing })
	tr.Close()
	if err := <-readErr; !errors.Is(err, ErrClosed) {
		t.Errorf("Read = %v, want ErrClosed", err)
	}
	if err := <-waitErr; !errors.Is(err, ErrClosed) {
		t.Errorf("waiting NewStream = %v, want ErrClosed", err)
	}
	if _, err := tr.NewStream(ctx, srv.url, nil, newBody(10)); !errors.Is(err, ErrClosed) {
		t.Errorf("NewStream after Close = %v, want ErrClosed", err)
	}
	if !<-closed {
		t.Errorf("server connection still open")
	}
	<-body.closeC
}

// TestCloseDuringDial: Transport.Close while a dial completes. The new
// connection is not pooled (nothing outlives Close) and the caller gets
// ErrClosed.
func TestCloseDuringDial(t *testing.T) {
	srv := newTestServer(t, serverOpts{}, func(sc *serverConn) {
		sc.handshake()
		sc.drain()
	})
	var tr *Transport
	cfg := testConfig(nil)
	cfg.Hooks = &Hooks{Dialed: func(string, error) { tr.Close() }}
	tr = New(cfg)
	defer checkNoEngineGoroutines(t)
	if _, err := tr.NewStream(testCtx(t), srv.url, nil, newBody(10)); !errors.Is(err, ErrClosed) {
		t.Errorf("NewStream = %v, want ErrClosed", err)
	}
}

// TestCloseIdleConnections closes the connections without streams and
// only those.
func TestCloseIdleConnections(t *testing.T) {
	type closedConn struct {
		name string
		eof  bool
	}
	closed := make(chan closedConn, 2)
	srv := newTestServer(t, serverOpts{}, func(sc *serverConn) {
		sc.handshake()
		h := sc.headers()
		sc.writeHeaders(h.StreamID, 200, false)
		sc.writeData(h.StreamID, true, sc.body(h.StreamID))
		closed <- closedConn{h.field("x-name"), sc.eof()}
	})
	cfg := testConfig(nil)
	cfg.MaxStreamsPerConn = 1
	tr := newTransport(t, cfg)
	ctx := testCtx(t)
	bodyA := newBody(100)
	stA, err := tr.NewStream(ctx, srv.url, http.Header{"X-Name": {"busy"}}, bodyA)
	if err != nil {
		t.Fatal(err)
	}
	stB, err := tr.NewStream(ctx, srv.url, http.Header{"X-Name": {"idle"}}, bodyOf("b"))
	if err != nil {
		t.Fatal(err)
	}
	if b, err := readAllAfterResponse(ctx, stB); err != io.EOF || string(b) != "b" {
		t.Fatalf("stream B: %q, %v", b, err)
	}
	tr.CloseIdleConnections()
	if c := <-closed; c.name != "idle" || !c.eof {
		t.Fatalf("closed %+v, want the idle connection", c)
	}
	bodyA.write(ctx, []byte("a"))
	bodyA.end()
	if b, err := readAllAfterResponse(ctx, stA); err != io.EOF || string(b) != "a" {
		t.Fatalf("stream A after CloseIdleConnections: %q, %v", b, err)
	}
}

// TestIdleTimeout: a connection without streams closes after
// IdleTimeout, with a GOAWAY, and leaves the pool.
func TestIdleTimeout(t *testing.T) {
	closed := make(chan bool, 1)
	srv := newTestServer(t, serverOpts{}, func(sc *serverConn) {
		sc.handshake()
		h := sc.headers()
		sc.writeHeaders(h.StreamID, 200, true)
		sc.goAway()
		closed <- sc.eof()
	})
	cfg := testConfig(nil)
	cfg.IdleTimeout = 50 * time.Millisecond
	tr := newTransport(t, cfg)
	ctx := testCtx(t)
	st, err := tr.NewStream(ctx, srv.url, nil, bodyOf(""))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := readAllAfterResponse(ctx, st); err != io.EOF {
		t.Fatal(err)
	}
	if !<-closed {
		t.Fatal("idle connection not closed")
	}
	p := poolOf(t, tr, srv)
	waitFor(t, "the pool empty", func() bool { p.mu.Lock(); defer p.mu.Unlock(); return len(p.conns) == 0 })
}

// TestGoAwayThenClose: a server that sends GOAWAY with an error code and
// closes the connection: the open stream fails with a *ConnError that
// names the GOAWAY (Remote, its code and debug data) and wraps
// io.ErrUnexpectedEOF.
func TestGoAwayThenClose(t *testing.T) {
	srv := newTestServer(t, serverOpts{}, func(sc *serverConn) {
		sc.handshake()
		h := sc.headers()
		sc.writeHeaders(h.StreamID, 200, false)
		sc.writeData(h.StreamID, false, []byte("partial"))
		sc.write(func() error { return sc.fr.WriteGoAway(h.StreamID, http2.ErrCodeEnhanceYourCalm, []byte("slow down")) })
	})
	tr := newTransport(t, testConfig(nil))
	ctx := testCtx(t)
	st, err := tr.NewStream(ctx, srv.url, nil, newBody(10))
	if err != nil {
		t.Fatal(err)
	}
	b, err := readAllAfterResponse(ctx, st)
	var ce *ConnError
	if !errors.As(err, &ce) || !ce.Remote || ce.Code != http2.ErrCodeEnhanceYourCalm || ce.Reason != "slow down" || !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Fatalf("Read = %v, want a remote *ConnError(ENHANCE_YOUR_CALM) wrapping io.ErrUnexpectedEOF", err)
	}
	if string(b) != "partial" {
		t.Errorf("read %q before the error", b)
	}
}

// TestInvalidSettings: SETTINGS values out of range are connection
// errors, in the first SETTINGS (the dial fails) and later (the streams
// fail). A MAX_FRAME_SIZE of 0 once made the writer loop forever.
func TestInvalidSettings(t *testing.T) {
	for _, tc := range []struct {
		name    string
		setting http2.Setting
		code    http2.ErrCode
		first   bool
	}{
		{"MAX_FRAME_SIZE 0 first", http2.Setting{ID: http2.SettingMaxFrameSize, Val: 0}, http2.ErrCodeProtocol, true},
		{"MAX_FRAME_SIZE 0 later", http2.Setting{ID: http2.SettingMaxFrameSize, Val: 0}, http2.ErrCodeProtocol, false},
		{"INITIAL_WINDOW_SIZE 2^31", http2.Setting{ID: http2.SettingInitialWindowSize, Val: 1 << 31}, http2.ErrCodeFlowControl, false},
		{"ENABLE_PUSH 2", http2.Setting{ID: http2.SettingEnablePush, Val: 2}, http2.ErrCodeProtocol, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := newTestServer(t, serverOpts{}, func(sc *serverConn) {
				if tc.first {
					// The client closes the connection on reading the bad
					// SETTINGS, possibly before the ACK below is written.
					sc.handshakeTolerant(tc.setting)
					sc.drain()
					return
				}
				sc.handshake()
				sc.headers()
				sc.write(func() error { return sc.fr.WriteSettings(tc.setting) })
				sc.drain()
			})
			tr := newTransport(t, testConfig(nil))
			ctx := testCtx(t)
			st, err := tr.NewStream(ctx, srv.url, nil, bodyOf("x"))
			if err == nil {
				_, _, err = st.Response(ctx)
			}
			var ce *ConnError
			if !errors.As(err, &ce) || ce.Code != tc.code {
				t.Fatalf("got %v, want a *ConnError(%v)", err, tc.code)
			}
		})
	}
}
