package transport

import (
	"context"
	"errors"
	"io"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/net/http2"
)

// stallConn is a TCP connection whose writes, once stall is set, block
// until it is closed, ignoring deadlines: a peer that stopped reading,
// seen from a writer that no deadline would rescue.
type stallConn struct {
	net.Conn
	stall     atomic.Bool
	stalled   chan struct{} // closed when the first write blocks
	stallOnce sync.Once
	closed    chan struct{}
	closeOnce sync.Once
}

func (c *stallConn) Write(p []byte) (int, error) {
	if !c.stall.Load() {
		return c.Conn.Write(p)
	}
	c.stallOnce.Do(func() { close(c.stalled) })
	<-c.closed
	return 0, net.ErrClosed
}

func (c *stallConn) Close() error {
	c.closeOnce.Do(func() { close(c.closed) })
	return c.Conn.Close()
}

// stalledStream opens a stream over TLS whose connection's writer is then
// blocked in a write to the TCP connection, for good.
func stalledStream(t *testing.T, cfg Config) (*Transport, *Stream) {
	t.Helper()
	srv := newTestServer(t, serverOpts{TLS: true}, func(sc *serverConn) {
		sc.handshake(http2.Setting{ID: http2.SettingInitialWindowSize, Val: 1 << 20})
		sc.writeWindowUpdate(0, 1<<20)
		h := sc.headers()
		sc.writeHeaders(h.StreamID, 200, false)
		sc.drain()
	})
	sc := make(chan *stallConn, 1)
	cfg.DialContext = func(ctx context.Context, network, addr string) (net.Conn, error) {
		nc, err := (&net.Dialer{}).DialContext(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		c := &stallConn{Conn: nc, stalled: make(chan struct{}), closed: make(chan struct{})}
		sc <- c
		return c, nil
	}
	tr := newTransport(t, cfg)
	ctx := testCtx(t)
	body := newBody(64 << 10)
	st, err := tr.NewStream(ctx, srv.url, nil, body)
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := st.Response(ctx); err != nil {
		t.Fatal(err)
	}
	c := <-sc
	c.stall.Store(true)
	if err := body.write(ctx, make([]byte, 32<<10)); err != nil {
		t.Fatal(err)
	}
	select {
	case <-c.stalled:
	case <-ctx.Done():
		t.Fatal("the writer never wrote the body")
	}
	return tr, st
}

// TestCloseWithStalledWriter: a connection whose peer stopped reading
// closes at once, whoever closes it: the writer, blocked in a TCP write,
// holds the lock TLS's close_notify would wait on (for its 5 s close
// timeout) and no deadline frees it here. CloseIdleConnections returns
// and the health check's ErrDeadPeer reaches the stream; the engine's
// goroutines exit (checked at cleanup).
func TestCloseWithStalledWriter(t *testing.T) {
	t.Run("CloseIdleConnections", func(t *testing.T) {
		t.Parallel()
		tr, st := stalledStream(t, testConfig(nil))
		st.Close() // the connection is idle; its writer is still blocked
		done := make(chan struct{})
		go func() {
			tr.CloseIdleConnections()
			close(done)
		}()
		select {
		case <-done:
		case <-testCtx(t).Done():
			t.Fatal("CloseIdleConnections blocked on a connection whose writer is stalled")
		}
	})
	t.Run("health check", func(t *testing.T) {
		t.Parallel()
		cfg := testConfig(nil)
		cfg.PingInterval, cfg.PingTimeout = 20*time.Millisecond, 20*time.Millisecond
		_, st := stalledStream(t, cfg)
		if _, err := readAll(st); !errors.Is(err, ErrDeadPeer) {
			t.Fatalf("Read = %v, want ErrDeadPeer", err)
		}
	})
}

// TestNotifyTakesLock: a stream's notify callback runs with no lock of
// the engine held, so one that takes a lock of the caller's cannot
// deadlock the connection against a caller that holds that lock while it
// calls into the stream. Here the connection fails (the server leaves)
// while the caller holds its lock; the callback waits for that lock while
// the caller closes the stream, which takes the connection's lock.
func TestNotifyTakesLock(t *testing.T) {
	t.Parallel()
	leave := make(chan struct{})
	srv := newTestServer(t, serverOpts{}, func(sc *serverConn) {
		sc.handshake()
		h := sc.headers()
		sc.writeHeaders(h.StreamID, 200, false)
		<-leave
		sc.raw.Close()
	})
	tr := newTransport(t, testConfig(nil))
	ctx := testCtx(t)
	st, err := tr.NewStream(ctx, srv.url, nil, newBody(10))
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := st.Response(ctx); err != nil {
		t.Fatal(err)
	}
	var (
		mu      sync.Mutex // the caller's lock
		waited  int        // guarded by mu: the callback got the lock
		armed   atomic.Bool
		calls   atomic.Int32
		entered = make(chan struct{})
		left    = make(chan struct{}) // the callback returned
	)
	st.SetNotify(func() {
		// The first notification after the server left (on the read
		// loop) takes the caller's lock; later ones (Close's own, on the
		// caller's goroutine) do not.
		if !armed.Load() || calls.Add(1) > 1 {
			return
		}
		close(entered)
		mu.Lock()
		waited++
		mu.Unlock()
		close(left)
	})
	mu.Lock()
	armed.Store(true)
	close(leave)
	select {
	case <-entered: // the callback waits for mu
	case <-ctx.Done():
		mu.Unlock()
		t.Fatal("no notification after the connection failed")
	}
	closed := make(chan struct{})
	go func() {
		st.Close() // takes the connection's lock
		close(closed)
	}()
	select {
	case <-closed:
	case <-ctx.Done():
		mu.Unlock() // ends the deadlock, so that the test can end
		t.Fatal("Close deadlocked against a notify callback waiting for the caller's lock")
	}
	mu.Unlock()
	if _, err := readAll(st); err == nil || err == io.EOF {
		t.Fatalf("Read = %v, want the connection's failure", err)
	}
	<-left
	mu.Lock()
	defer mu.Unlock()
	if waited != 1 {
		t.Fatalf("the callback took the caller's lock %d times, want 1", waited)
	}
}
