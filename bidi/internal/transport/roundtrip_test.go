package transport

import (
	"context"
	"errors"
	"io"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"
)

// TestRoundTrip: the request head as sent (pseudo-headers first, regular
// names in lower case, no Host or Content-Length), the response head, a
// body each way, END_STREAM each way and a clean io.EOF; over TLS and
// h2c.
func TestRoundTrip(t *testing.T) {
	for _, useTLS := range []bool{true, false} {
		name := "h2c"
		if useTLS {
			name = "tls"
		}
		t.Run(name, func(t *testing.T) {
			type seen struct {
				head frame
				body []byte
			}
			got := make(chan seen, 1)
			srv := newTestServer(t, serverOpts{TLS: useTLS}, func(sc *serverConn) {
				sc.handshake()
				h := sc.headers()
				if h.EndStream {
					sc.fatalf("request HEADERS with END_STREAM")
				}
				sc.writeHeaders(h.StreamID, 200, false, "content-type", "application/x", "x-resp", "a", "x-resp", "b")
				body := sc.body(h.StreamID)
				sc.writeData(h.StreamID, false, []byte("echo:"))
				sc.writeData(h.StreamID, true, body)
				got <- seen{h, body}
				sc.drain()
			})
			tr := newTransport(t, testConfig(nil))
			ctx := testCtx(t)
			u := *srv.url
			u.RawQuery = "a=1&b=2"
			hdr := http.Header{
				"Host":           {"evil"},
				"Content-Length": {"12"},
				"Content-Type":   {"application/vnd.amazon.eventstream"},
				"X-Amz-Date":     {"20250101T000000Z"},
				"Authorization":  {"AWS4-HMAC-SHA256 Credential=x"},
				"Connection":     {"close"},
			}
			body := bodyOf("hello server")
			st, err := tr.NewStream(ctx, &u, hdr, body)
			if err != nil {
				t.Fatal(err)
			}
			status, header, err := st.Response(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if status != 200 || header.Get("Content-Type") != "application/x" || strings.Join(header["X-Resp"], ",") != "a,b" {
				t.Errorf("response %d %v", status, header)
			}
			b, err := readAll(st)
			if err != io.EOF || string(b) != "echo:hello server" {
				t.Fatalf("read %q, %v; want the echo and io.EOF", b, err)
			}
			<-st.Done()
			if err := st.Err(); err != nil {
				t.Errorf("Err = %v after a clean end", err)
			}
			s := <-got
			if string(s.body) != "hello server" {
				t.Errorf("server got body %q", s.body)
			}
			want := []hpack.HeaderField{
				{Name: ":method", Value: "POST"},
				{Name: ":scheme", Value: srv.url.Scheme},
				{Name: ":authority", Value: srv.url.Host},
				{Name: ":path", Value: "/invocations?a=1&b=2"},
			}
			if len(s.head.Fields) < len(want) {
				t.Fatalf("request fields %v", s.head.Fields)
			}
			for i, w := range want {
				if f := s.head.Fields[i]; f.Name != w.Name || f.Value != w.Value {
					t.Errorf("field %d = %s: %s, want %s: %s", i, f.Name, f.Value, w.Name, w.Value)
				}
			}
			regular := map[string]string{}
			for _, f := range s.head.Fields[len(want):] {
				if strings.HasPrefix(f.Name, ":") || f.Name != strings.ToLower(f.Name) {
					t.Errorf("field %q after the pseudo-headers", f.Name)
				}
				regular[f.Name] = f.Value
			}
			for _, banned := range []string{"host", "content-length", "connection"} {
				if _, ok := regular[banned]; ok {
					t.Errorf("request carries %q", banned)
				}
			}
			if regular["content-type"] != "application/vnd.amazon.eventstream" || regular["x-amz-date"] == "" || regular["authorization"] == "" {
				t.Errorf("regular fields %v", regular)
			}
			select {
			case <-body.closeC: // Close runs in a goroutine of its own
			case <-ctx.Done():
				t.Fatal("body never closed")
			}
			if n := body.closes.Load(); n != 1 {
				t.Errorf("body closed %d times", n)
			}
		})
	}
}

// TestResetAtEveryPoint: RST_STREAM from the server before the response
// head, after it, and in the middle of the body. The error is a
// *StreamError with Remote set, after the bytes received before it.
func TestResetAtEveryPoint(t *testing.T) {
	for _, tc := range []struct {
		name string
		data []string // DATA frames before the reset; nil: no response head
	}{
		{"before headers", nil},
		{"after headers", []string{}},
		{"mid-body", []string{"part one,", "part two"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := newTestServer(t, serverOpts{}, func(sc *serverConn) {
				sc.handshake()
				h := sc.headers()
				if tc.data != nil {
					sc.writeHeaders(h.StreamID, 200, false)
					for _, d := range tc.data {
						sc.writeData(h.StreamID, false, []byte(d))
					}
				}
				sc.writeReset(h.StreamID, http2.ErrCodeInternal)
				// The connection stays usable.
				h = sc.headers()
				sc.writeHeaders(h.StreamID, 200, true)
				sc.drain()
			})
			tr := newTransport(t, testConfig(nil))
			ctx := testCtx(t)
			st, err := tr.NewStream(ctx, srv.url, nil, newBody(10))
			if err != nil {
				t.Fatal(err)
			}
			var se *StreamError
			status, _, err := st.Response(ctx)
			if tc.data == nil {
				if !errors.As(err, &se) || !se.Remote || se.Code != http2.ErrCodeInternal || errors.Is(err, ErrRefused) {
					t.Fatalf("Response = %d, %v; want a remote *StreamError", status, err)
				}
			} else {
				if err != nil {
					t.Fatal(err)
				}
				<-st.Done() // the reset arrived: the bytes before must still be readable
				b, err := readAll(st)
				if !errors.As(err, &se) || !se.Remote || se.Code != http2.ErrCodeInternal {
					t.Fatalf("Read error %v; want a remote *StreamError", err)
				}
				if want := strings.Join(tc.data, ""); string(b) != want {
					t.Errorf("read %q before the reset, want %q", b, want)
				}
			}
			st.Close()
			st2, err := tr.NewStream(ctx, srv.url, nil, bodyOf(""))
			if err != nil {
				t.Fatal(err)
			}
			if _, _, err := st2.Response(ctx); err != nil {
				t.Fatal(err)
			}
			if _, err := readAll(st2); err != io.EOF {
				t.Fatalf("second stream: %v", err)
			}
		})
	}
}

// TestBodyFailsAfterTheServerEnded: the server ends its response and
// resets the stream with NO_ERROR (as a server that answered before the
// request ended does) while the writer is inside the body's ReadNow, which
// then fails because the engine closed the body meanwhile. That failure
// is the engine's own doing, not the body's: the response stays whole,
// its bytes readable up to io.EOF. (Before, the writer reset the stream
// with the body's error and so dropped the response bytes buffered for
// a reader that had not come yet.)
func TestBodyFailsAfterTheServerEnded(t *testing.T) {
	sendEnd := make(chan struct{})
	second := make(chan struct{})
	srv := newTestServer(t, serverOpts{}, func(sc *serverConn) {
		sc.handshake()
		h := sc.headers()
		sc.writeHeaders(h.StreamID, 200, false)
		<-sendEnd
		sc.writeData(h.StreamID, true, []byte("the answer"))
		sc.writeReset(h.StreamID, http2.ErrCodeNo)
		sc.headers() // the next stream's: the writer is past the first body's failure
		close(second)
		sc.drain()
	})
	tr := newTransport(t, testConfig(nil))
	ctx := testCtx(t)
	body := &gatedBody{testBody: newBody(10), entered: make(chan struct{}), open: make(chan struct{})}
	st, err := tr.NewStream(ctx, srv.url, nil, body)
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := st.Response(ctx); err != nil {
		t.Fatal(err)
	}
	body.armed.Store(true)
	if err := body.write(ctx, []byte("x")); err != nil {
		t.Fatal(err)
	}
	<-body.entered // the writer is in ReadNow
	close(sendEnd)
	<-body.closeC // the reset arrived: the engine closed the body
	close(body.open)
	st2, err := tr.NewStream(ctx, srv.url, nil, bodyOf(""))
	if err != nil {
		t.Fatal(err)
	}
	defer st2.Close()
	select {
	case <-second:
	case <-ctx.Done():
		t.Fatal("the second stream's HEADERS never reached the server")
	}
	if n := st.Buffered(); n != len("the answer") {
		t.Errorf("Buffered = %d after the body failed, want the %d bytes of the answer", n, len("the answer"))
	}
	if b, err := readAll(st); err != io.EOF || string(b) != "the answer" {
		t.Fatalf("read %q, %v; want the answer and io.EOF", b, err)
	}
	if err := st.Err(); err != nil {
		t.Errorf("Err = %v after a clean end", err)
	}
}

// gatedBody is a testBody whose ReadNow, once armed, waits inside the
// engine's writer until the test opens the gate, and which fails every
// read once the engine closed it (as a session's request body does).
type gatedBody struct {
	*testBody
	armed   atomic.Bool
	entered chan struct{}
	open    chan struct{}
}

func (b *gatedBody) ReadNow(p []byte) (int, error) {
	if b.armed.CompareAndSwap(true, false) {
		close(b.entered)
		<-b.open
	}
	b.mu.Lock()
	closed := b.closed
	b.mu.Unlock()
	if closed {
		return 0, errBodyClosed
	}
	return b.testBody.ReadNow(p)
}

// TestCancelWaitingForSlot: the context of NewStream ends while it waits
// for a connection (the only connection is full and the dial of the next
// one stalls). NewStream returns the context's error; the connection
// dialed for it, which nobody uses, closes after the idle timeout.
func TestCancelWaitingForSlot(t *testing.T) {
	release := make(chan struct{})
	idleClosed := make(chan bool, 1)
	srv := newTestServer(t, serverOpts{}, func(sc *serverConn) {
		if sc.n == 2 {
			<-release // the second dial stalls
			sc.handshake()
			idleClosed <- sc.eof()
			return
		}
		sc.handshake()
		h := sc.headers()
		sc.writeHeaders(h.StreamID, 200, false)
		sc.drain()
	})
	var dials atomic.Int32
	cfg := testConfig(&dials)
	cfg.MaxStreamsPerConn = 1
	cfg.IdleTimeout = 50 * time.Millisecond
	tr := newTransport(t, cfg)
	ctx := testCtx(t)
	st1, err := tr.NewStream(ctx, srv.url, nil, newBody(10))
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := st1.Response(ctx); err != nil {
		t.Fatal(err)
	}
	wctx, cancel := context.WithCancel(ctx)
	errc := make(chan error, 1)
	go func() {
		_, err := tr.NewStream(wctx, srv.url, nil, newBody(10))
		errc <- err
	}()
	p := poolOf(t, tr, srv)
	waitFor(t, "a waiter", func() bool { p.mu.Lock(); defer p.mu.Unlock(); return len(p.waiters) == 1 && p.dialing })
	cancel()
	if err := <-errc; !errors.Is(err, context.Canceled) {
		t.Fatalf("NewStream = %v, want context.Canceled", err)
	}
	close(release)
	if !<-idleClosed {
		t.Errorf("the connection dialed for the cancelled waiter did not close when idle")
	}
	st1.Close()
}

// TestCancel: the context of NewStream ends while the stream waits for
// the response, and while streaming. The server sees RST_STREAM(CANCEL),
// the caller gets the context's error, and the slot is free again: the
// connection's only slot serves the next stream, without a new dial.
func TestCancel(t *testing.T) {
	resets := make(chan frame, 4)
	srv := newTestServer(t, serverOpts{}, func(sc *serverConn) {
		sc.handshake()
		for {
			f, err := sc.readFrame()
			if err != nil {
				return
			}
			switch {
			case f.Type == http2.FrameHeaders && f.field("x-test") == "stream":
				sc.writeHeaders(f.StreamID, 200, false)
				sc.writeData(f.StreamID, false, []byte("some"))
			case f.Type == http2.FrameHeaders && f.field("x-test") == "end":
				sc.writeHeaders(f.StreamID, 200, true)
			case f.Type == http2.FrameRSTStream:
				resets <- f
			}
		}
	})
	var dials atomic.Int32
	cfg := testConfig(&dials)
	cfg.MaxStreamsPerConn = 1
	tr := newTransport(t, cfg)
	ctx := testCtx(t)
	check := func(t *testing.T, st *Stream) {
		t.Helper()
		select {
		case f := <-resets:
			if f.StreamID != st.ID() || f.Code != http2.ErrCodeCancel {
				t.Errorf("server saw %v, want RST_STREAM(CANCEL) on stream %d", f, st.ID())
			}
		case <-ctx.Done():
			t.Fatal("no RST_STREAM")
		}
	}
	t.Run("waiting for the response", func(t *testing.T) {
		sctx, cancel := context.WithCancel(ctx)
		st, err := tr.NewStream(sctx, srv.url, http.Header{"X-Test": {"wait"}}, newBody(10))
		if err != nil {
			t.Fatal(err)
		}
		cancel()
		if _, _, err := st.Response(ctx); !errors.Is(err, context.Canceled) {
			t.Fatalf("Response = %v, want context.Canceled", err)
		}
		check(t, st)
	})
	t.Run("streaming", func(t *testing.T) {
		sctx, cancel := context.WithCancel(ctx)
		st, err := tr.NewStream(sctx, srv.url, http.Header{"X-Test": {"stream"}}, newBody(10))
		if err != nil {
			t.Fatal(err)
		}
		if _, _, err := st.Response(ctx); err != nil {
			t.Fatal(err)
		}
		buf := make([]byte, 4)
		if n, err := readFull(st, buf); n != 4 || err != nil {
			t.Fatalf("read %d, %v", n, err)
		}
		errc := make(chan error, 1)
		go func() { _, err := readWait(st, buf); errc <- err }()
		cancel()
		if err := <-errc; !errors.Is(err, context.Canceled) {
			t.Fatalf("Read = %v, want context.Canceled", err)
		}
		check(t, st)
	})
	st, err := tr.NewStream(ctx, srv.url, http.Header{"X-Test": {"end"}}, bodyOf(""))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := readAllAfterResponse(ctx, st); err != io.EOF {
		t.Fatalf("last stream: %v", err)
	}
	if n := dials.Load(); n != 1 {
		t.Errorf("%d dials, want 1: the slots of cancelled streams are reused", n)
	}
}

func readAllAfterResponse(ctx context.Context, st *Stream) ([]byte, error) {
	if _, _, err := st.Response(ctx); err != nil {
		return nil, err
	}
	return readAll(st)
}

// poolOf returns the pool of the server's endpoint.
func poolOf(t *testing.T, tr *Transport, srv *testServer) *pool {
	t.Helper()
	e, err := endpointOf(srv.url)
	if err != nil {
		t.Fatal(err)
	}
	p := tr.pool(e)
	if p == nil {
		t.Fatal("transport closed")
	}
	return p
}
