package transport

import (
	"context"
	"crypto/tls"
	"errors"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"golang.org/x/net/http2"
)

// TestSilentPeers: a server that accepts TCP and never sends SETTINGS,
// one that never answers the TLS handshake, and a proxy that never answers
// CONNECT. The dial fails exactly DialTimeout after it began (on a
// synctest clock) with a *ConnError matching context.DeadlineExceeded,
// not ErrNotHTTP2 (nor a bare i/o timeout).
func TestSilentPeers(t *testing.T) {
	for _, tc := range []struct {
		name  string
		tls   bool
		proxy bool
	}{
		{"no SETTINGS", false, false},
		{"stalled TLS handshake", true, false},
		{"stalled proxy", false, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				srv := newTestServer(t, serverOpts{TLS: tc.tls, Mem: true}, func(sc *serverConn) {
					io.Copy(io.Discard, sc.raw) // reads, never answers
				})
				cfg := testConfig(nil)
				cfg.DialTimeout = 200 * time.Millisecond
				cfg.DialContext = srv.dial
				target := srv.url
				if tc.proxy {
					proxy := &url.URL{Scheme: "http", Host: srv.url.Host}
					cfg.Proxy = func(*http.Request) (*url.URL, error) { return proxy, nil }
					target = &url.URL{Scheme: "https", Host: "endpoint.invalid", Path: "/"}
				}
				tr := newTransport(t, cfg)
				start := time.Now()
				_, err := tr.NewStream(testCtx(t), target, nil, newBody(10))
				elapsed := time.Since(start)
				var ce *ConnError
				if !errors.As(err, &ce) || !errors.Is(err, context.DeadlineExceeded) || errors.Is(err, ErrNotHTTP2) {
					t.Fatalf("NewStream = %v, want a *ConnError matching context.DeadlineExceeded", err)
				}
				if elapsed != cfg.DialTimeout {
					t.Errorf("failed after %v, want DialTimeout %v", elapsed, cfg.DialTimeout)
				}
			})
		})
	}
}

// TestTLSAlertAfterHandshake: a server that requires a client certificate
// the client does not have completes the TLS 1.3 handshake, then sends
// the certificate-required alert instead of SETTINGS. That is a TLS
// failure with the alert in the chain, not ErrNotHTTP2.
func TestTLSAlertAfterHandshake(t *testing.T) {
	t.Parallel()
	srv := newTestServer(t, serverOpts{TLS: true, RequireClientCert: true}, func(sc *serverConn) {
		io.Copy(io.Discard, sc.nc) // the handshake fails on the server's side
	})
	tr := newTransport(t, testConfig(nil))
	_, err := tr.NewStream(testCtx(t), srv.url, nil, newBody(10))
	var ce *ConnError
	var oe *net.OpError
	if !errors.As(err, &ce) || errors.Is(err, ErrNotHTTP2) || !errors.As(err, &oe) || oe.Op != "remote error" {
		t.Fatalf("NewStream = %v, want a *ConnError wrapping the TLS alert, not ErrNotHTTP2", err)
	}
	if !strings.Contains(err.Error(), "certificate required") {
		t.Errorf("NewStream = %v, want the alert named", err)
	}
}

// TestNotHTTP2: peers that speak something else fail the dial with
// ErrNotHTTP2: HTTP/1.1 servers over TLS (ALPN without h2) and
// cleartext, a TLS server without ALPN, and a TLS server reached with an
// http:// URL.
func TestNotHTTP2(t *testing.T) {
	h1 := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	h1.EnableHTTP2 = false
	h1.Config.ErrorLog = log.New(io.Discard, "", 0) // the failed ALPN handshakes
	h1.StartTLS()
	t.Cleanup(h1.Close)
	h1c := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	t.Cleanup(h1c.Close)
	h1URL, _ := url.Parse(h1.URL)
	h1cURL, _ := url.Parse(h1c.URL)
	noALPN := newTestServer(t, serverOpts{TLS: true, NextProtos: []string{}}, func(sc *serverConn) {
		sc.nc.(*tls.Conn).Handshake()
		sc.drain()
	})
	tlsSrv := newTestServer(t, serverOpts{TLS: true}, func(sc *serverConn) {
		sc.nc.(*tls.Conn).Handshake() // fails: the client speaks HTTP/2 in clear
	})
	h2cURL := *tlsSrv.url
	h2cURL.Scheme = "http"

	for _, tc := range []struct {
		name string
		u    *url.URL
		tls  *tls.Config
	}{
		{"HTTP/1.1 over TLS", h1URL, h1.Client().Transport.(*http.Transport).TLSClientConfig},
		{"HTTP/1.1 cleartext", h1cURL, nil},
		{"TLS without ALPN", noALPN.url, nil},
		{"TLS server, http URL", &h2cURL, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := testConfig(nil)
			if tc.tls != nil {
				cfg.TLSConfig = tc.tls
			}
			tr := newTransport(t, cfg)
			_, err := tr.NewStream(testCtx(t), tc.u, nil, newBody(10))
			if !errors.Is(err, ErrNotHTTP2) {
				t.Fatalf("NewStream = %v, want ErrNotHTTP2", err)
			}
		})
	}
}

// TestDialRefused: nothing listens: a *ConnError with the network error.
func TestDialRefused(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	tr := newTransport(t, testConfig(nil))
	_, err = tr.NewStream(testCtx(t), &url.URL{Scheme: "http", Host: addr, Path: "/"}, nil, newBody(10))
	var ce *ConnError
	var oe *net.OpError
	if !errors.As(err, &ce) || !errors.As(err, &oe) {
		t.Fatalf("NewStream = %v, want a *ConnError wrapping the *net.OpError", err)
	}
}

// TestHealthCheck: with PingInterval set, a server that stops answering
// (here: reads everything, answers no PING) fails the connection with
// ErrDeadPeer within PingInterval+PingTimeout of its last frame; one
// that answers keeps it (with a PingTimeout of a second, far beyond an
// answer's delay on a loaded machine, so that the outcome is the
// server's, not the scheduler's; a check comes about every PingTimeout).
func TestHealthCheck(t *testing.T) {
	const interval = 100 * time.Millisecond
	for _, answer := range []bool{false, true} {
		name, timeout := "silent", 100*time.Millisecond
		if answer {
			name, timeout = "answering", time.Second
		}
		t.Run(name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				pinged := make(chan struct{}, 1)
				srv := newTestServer(t, serverOpts{Mem: true}, func(sc *serverConn) {
					sc.handshake()
					h := sc.headers()
					sc.writeHeaders(h.StreamID, 200, false)
					pings := 0
					for {
						f, err := sc.readFrame()
						if err != nil {
							return
						}
						if f.Type != http2.FramePing || f.Ack {
							continue
						}
						select {
						case pinged <- struct{}{}:
						default:
						}
						if !answer {
							continue
						}
						sc.write(func() error { return sc.fr.WritePing(true, f.Ping) })
						if pings++; pings == 2 {
							sc.writeData(h.StreamID, true, []byte("alive"))
						}
					}
				})
				cfg := testConfig(nil)
				cfg.PingInterval, cfg.PingTimeout = interval, timeout
				cfg.DialContext = srv.dial
				tr := newTransport(t, cfg)
				ctx := testCtx(t)
				st, err := tr.NewStream(ctx, srv.url, nil, newBody(10))
				if err != nil {
					t.Fatal(err)
				}
				if _, _, err := st.Response(ctx); err != nil {
					t.Fatal(err)
				}
				last := time.Now()
				b, err := readAll(st)
				elapsed := time.Since(last)
				select {
				case <-pinged:
				default:
					t.Errorf("the server saw no PING")
				}
				if answer {
					if err != io.EOF || string(b) != "alive" {
						t.Fatalf("read %q, %v from a server that answers PINGs", b, err)
					}
					if elapsed != 2*interval {
						t.Fatalf("the answer after %v, want %v: two PINGs answered, then the DATA", elapsed, 2*interval)
					}
					return
				}
				var ce *ConnError
				if !errors.Is(err, ErrDeadPeer) || !errors.As(err, &ce) {
					t.Fatalf("Read = %v, want a *ConnError matching ErrDeadPeer", err)
				}
				// On the bubble's clock: the PING after PingInterval of
				// silence, the verdict PingTimeout later.
				if elapsed != interval+timeout {
					t.Fatalf("ErrDeadPeer after %v, want PingInterval+PingTimeout %v", elapsed, interval+timeout)
				}
			})
		})
	}
}
