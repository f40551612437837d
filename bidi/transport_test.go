package bidi_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"

	"github.com/sagemaker-bidi/sagemaker-bidi/bidi"
	"github.com/sagemaker-bidi/sagemaker-bidi/bidi/biditest"
)

// defaultTransportClient returns a client for srv on the SDK's own HTTP/2
// engine, trusting srv, with base as endpoint ("" means srv.URL).
func defaultTransportClient(srv *biditest.Server, base string, optFns ...func(*bidi.Options)) *bidi.Client {
	if base == "" {
		base = srv.URL
	}
	return srv.Client(append([]func(*bidi.Options){func(o *bidi.Options) {
		o.BaseEndpoint = aws.String(base)
	}}, optFns...)...)
}

// TestDeadPeerDetected: when the peer stops answering (a proxy that
// swallows every byte), the HTTP/2 PING health check fails the session in
// bounded time with an error matching ErrDeadPeer.
func TestDeadPeerDetected(t *testing.T) {
	srv := newServer(t, biditest.Echo())
	proxy := newStallProxy(t, srv.Listener.Addr().String())
	c := defaultTransportClient(srv, "https://"+proxy.Addr(), func(o *bidi.Options) {
		o.HealthCheckInterval = 100 * time.Millisecond
		o.HealthCheckTimeout = 200 * time.Millisecond
	})
	ctx := testCtx(t)
	sess := open(t, c, ctx)
	roundTrip(t, sess, "alive")

	proxy.Stall()
	start := time.Now()
	_, err := sess.Recv(ctx)
	elapsed := time.Since(start)
	if !errors.Is(err, bidi.ErrDeadPeer) {
		t.Fatalf("Recv = %v, want an error matching ErrDeadPeer", err)
	}
	// Bounded: the test's context would have ended Recv otherwise. How
	// long it took is the machine's business, not an outcome.
	t.Logf("dead peer detected after %v", elapsed)
	if err := sess.Send(ctx, bidi.Text("x")); !errors.Is(err, bidi.ErrDeadPeer) {
		t.Fatalf("Send = %v, want ErrDeadPeer", err)
	}
}

// dialCounter counts the connections a client dials.
type dialCounter struct{ n atomic.Int64 }

func (d *dialCounter) option(o *bidi.Options) {
	o.DialContext = func(ctx context.Context, network, addr string) (net.Conn, error) {
		d.n.Add(1)
		var dialer net.Dialer
		return dialer.DialContext(ctx, network, addr)
	}
}

func (d *dialCounter) count() int { return int(d.n.Load()) }

// openConcurrent opens n sessions at once and checks that all of them are
// answered while all are open.
func openConcurrent(t *testing.T, c *bidi.Client, ctx context.Context, n int) []*bidi.Session {
	t.Helper()
	sessions := make([]*bidi.Session, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sess, err := c.Open(ctx, &bidi.OpenInput{EndpointName: "ep"})
			if err != nil {
				t.Errorf("Open %d: %v", i, err)
				return
			}
			sessions[i] = sess
			if err := sess.Send(ctx, bidi.Text("hi")); err != nil {
				t.Errorf("Send %d: %v", i, err)
				return
			}
			if m, err := sess.Recv(ctx); err != nil || string(m.Data) != "hi" {
				t.Errorf("Recv %d: %q, %v", i, m.Data, err)
			}
		}()
	}
	wg.Wait()
	t.Cleanup(func() {
		for _, s := range sessions {
			if s != nil {
				s.Close()
			}
		}
	})
	if t.Failed() {
		t.FailNow()
	}
	return sessions
}

// TestMaxConcurrentStreamsOpensConnections: sessions beyond a
// connection's MaxConcurrentStreams go to new connections, one dial at a
// time: 7 sessions opened at once with a server limit of 2 cost at most
// ceil(7/2)+1 dials.
func TestMaxConcurrentStreamsOpensConnections(t *testing.T) {
	srv := newServer(t, biditest.Echo(), func(s *biditest.Server) { s.MaxConcurrentStreams = 2 })
	var dials dialCounter
	c := defaultTransportClient(srv, "", dials.option)
	ctx := testCtx(t)
	sessions := openConcurrent(t, c, ctx, 7)
	if n := dials.count(); n < 4 || n > 5 {
		t.Fatalf("%d sessions cost %d dials with MaxConcurrentStreams 2, want 4 or 5", len(sessions), n)
	}
	t.Logf("7 sessions on %d connections", dials.count())
}

// TestDialsWhenOpeningAtOnce: N sessions opened at once cost at most
// ceil(N / streams per connection) + 1 dials: sessions wait for the one
// connection being dialed instead of dialing their own.
func TestDialsWhenOpeningAtOnce(t *testing.T) {
	for _, tc := range []struct{ n, perConn int }{{60, 10}, {5, 1}} {
		t.Run(fmt.Sprintf("%d sessions, %d per connection", tc.n, tc.perConn), func(t *testing.T) {
			srv := newServer(t, biditest.Echo())
			var dials dialCounter
			c := defaultTransportClient(srv, "", dials.option, func(o *bidi.Options) { o.MaxStreamsPerConnection = tc.perConn })
			openConcurrent(t, c, testCtx(t), tc.n)
			if want := (tc.n+tc.perConn-1)/tc.perConn + 1; dials.count() > want || dials.count() < want-1 {
				t.Fatalf("%d dials, want %d or %d", dials.count(), want-1, want)
			}
		})
	}
}

// TestManySessionsFewConnections: one client carries many concurrent
// sessions over a shared connection.
func TestManySessionsFewConnections(t *testing.T) {
	srv := newServer(t, biditest.Echo())
	var dials dialCounter
	c := defaultTransportClient(srv, "", dials.option)
	ctx := testCtx(t)
	openConcurrent(t, c, ctx, 1)               // establish the connection
	sessions := openConcurrent(t, c, ctx, 100) // then 100 more at once
	if n := dials.count(); n != 1 {
		t.Fatalf("%d sessions used %d connections", len(sessions)+1, n)
	}
}

// TestCloseIdleConnections: once its sessions are closed, a client's
// connections close at once on CloseIdleConnections, and none of its
// goroutines survive; a connection with a session is left alone.
func TestCloseIdleConnections(t *testing.T) {
	srv := newServer(t, biditest.Echo())
	var dials dialCounter
	c := defaultTransportClient(srv, "", dials.option, func(o *bidi.Options) { o.MaxStreamsPerConnection = 1 })
	ctx := testCtx(t)
	a, b := open(t, c, ctx), open(t, c, ctx)
	roundTrip(t, a, "a")
	roundTrip(t, b, "b")
	a.Close()
	c.CloseIdleConnections()
	roundTrip(t, b, "b still works")
	b.CloseSend()
	drainEOF(t, b)
	b.Close()
	c.CloseIdleConnections()
	waitNoEngineGoroutines(t, 5*time.Second)
	if dials.count() != 2 {
		t.Fatalf("%d dials, want 2", dials.count())
	}
}

// TestIdleConnTimeout: a connection without sessions closes by itself.
//
// On a synctest clock, exactly: the connection's goroutines are there a
// nanosecond before IdleConnTimeout has passed since its last stream
// closed, and gone at it.
func TestIdleConnTimeout(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const idle = 10 * time.Second
		srv, dial := newMemServer(t, biditest.Echo())
		c := srv.Client(dial, func(o *bidi.Options) { o.IdleConnTimeout = idle })
		ctx := testCtx(t)
		s := open(t, c, ctx)
		roundTrip(t, s, "x")
		time.Sleep(3 * time.Second) // busy connections are not idle
		roundTrip(t, s, "y")
		s.Close()
		time.Sleep(idle - time.Nanosecond)
		synctest.Wait()
		if len(engineGoroutines()) == 0 {
			t.Fatal("the connection closed before it was idle for IdleConnTimeout")
		}
		time.Sleep(time.Nanosecond)
		synctest.Wait()
		if gs := engineGoroutines(); len(gs) > 0 {
			t.Fatalf("%d engine goroutines left after IdleConnTimeout:\n%s", len(gs), strings.Join(gs, "\n\n"))
		}
	})
}

// TestSharedHTTPClientTimeout: an aws.Config whose HTTP client has a
// whole-request Timeout (common when it is shared with other AWS clients)
// does not cut streams: the engine takes only its trusted roots.
func TestSharedHTTPClientTimeout(t *testing.T) {
	srv := newServer(t, biditest.Echo())
	cfg := srv.AWSConfig()
	hc := *srv.AWSConfig().HTTPClient.(*http.Client)
	hc.Timeout = 50 * time.Millisecond
	cfg.HTTPClient = &hc
	c := bidi.NewFromConfig(cfg)
	ctx := testCtx(t)
	sess := open(t, c, ctx)
	deadline := time.Now().Add(4 * hc.Timeout)
	for i := 0; time.Now().Before(deadline); i++ {
		roundTrip(t, sess, fmt.Sprint("message ", i))
	}
	sess.CloseSend()
	drainEOF(t, sess)
}

// TestGoAway: after a GOAWAY, running sessions finish and new ones open
// on a new connection.
func TestGoAway(t *testing.T) {
	srv := newServer(t, biditest.Echo())
	c := defaultTransportClient(srv, "")
	ctx := testCtx(t)
	old := open(t, c, ctx)
	roundTrip(t, old, "before")
	srv.GoAway()
	fresh := open(t, c, ctx)
	roundTrip(t, fresh, "new")
	roundTrip(t, old, "after")
	for _, s := range []*bidi.Session{old, fresh} {
		s.CloseSend()
		drainEOF(t, s)
	}
}
