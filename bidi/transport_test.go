package bidi_test

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"net/http/httptrace"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"

	"github.com/sagemaker-bidi/sagemaker-bidi/bidi"
	"github.com/sagemaker-bidi/sagemaker-bidi/bidi/biditest"
)

// defaultTransportClient returns a client for srv that uses the package's
// default HTTP client construction (NewHTTPClient), trusting srv, with
// base as endpoint ("" means srv.URL).
func defaultTransportClient(srv *biditest.Server, base string, optFns ...func(*bidi.HTTPClientOptions)) *bidi.Client {
	pool := x509.NewCertPool()
	pool.AddCert(srv.Certificate())
	hc := bidi.NewHTTPClient(append([]func(*bidi.HTTPClientOptions){func(o *bidi.HTTPClientOptions) {
		o.TLSConfig = &tls.Config{RootCAs: pool}
	}}, optFns...)...)
	if base == "" {
		base = srv.URL
	}
	return srv.Client(func(o *bidi.Options) {
		o.HTTPClient = hc
		o.BaseEndpoint = aws.String(base)
	})
}

// TestDeadPeerDetected: when the peer stops answering (a proxy that
// swallows every byte), the HTTP/2 PING health check fails the session in
// bounded time with an error matching ErrDeadPeer.
func TestDeadPeerDetected(t *testing.T) {
	srv := newServer(t, biditest.Echo())
	proxy := newStallProxy(t, srv.Listener.Addr().String())
	c := defaultTransportClient(srv, "https://"+proxy.Addr(), func(o *bidi.HTTPClientOptions) {
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
	if elapsed > 3*time.Second {
		t.Fatalf("dead peer detected after %v", elapsed)
	}
	t.Logf("dead peer detected after %v", elapsed)
	if err := sess.Send(ctx, bidi.Text("x")); !errors.Is(err, bidi.ErrDeadPeer) {
		t.Fatalf("Send = %v, want ErrDeadPeer", err)
	}
}

// connCounter counts the distinct connections requests were sent on.
type connCounter struct {
	mu    sync.Mutex
	conns map[string]bool
}

func (c *connCounter) ctx(parent context.Context) context.Context {
	return httptrace.WithClientTrace(parent, &httptrace.ClientTrace{GotConn: func(info httptrace.GotConnInfo) {
		c.mu.Lock()
		defer c.mu.Unlock()
		if c.conns == nil {
			c.conns = map[string]bool{}
		}
		c.conns[info.Conn.LocalAddr().String()] = true
	}})
}

func (c *connCounter) count() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.conns)
}

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

// TestMaxConcurrentStreamsOpensConnections: with the default transport,
// sessions beyond a connection's MaxConcurrentStreams go to new
// connections instead of waiting.
func TestMaxConcurrentStreamsOpensConnections(t *testing.T) {
	srv := newServer(t, biditest.Echo(), func(s *biditest.Server) { s.MaxConcurrentStreams = 2 })
	c := defaultTransportClient(srv, "")
	var cc connCounter
	ctx := cc.ctx(testCtx(t))
	short, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	sessions := openConcurrent(t, c, short, 7)
	if n := cc.count(); n < 4 {
		t.Fatalf("%d sessions on %d connections with MaxConcurrentStreams 2, want at least 4 connections", len(sessions), n)
	}
	t.Logf("7 sessions on %d connections", cc.count())
}

// TestManySessionsFewConnections: one client carries many concurrent
// sessions over a shared connection.
func TestManySessionsFewConnections(t *testing.T) {
	srv := newServer(t, biditest.Echo())
	c := defaultTransportClient(srv, "")
	var cc connCounter
	ctx := cc.ctx(testCtx(t))
	openConcurrent(t, c, ctx, 1)               // establish the connection
	sessions := openConcurrent(t, c, ctx, 100) // then 100 more at once
	if n := cc.count(); n > 2 {
		t.Fatalf("%d sessions used %d connections", len(sessions)+1, n)
	}
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
