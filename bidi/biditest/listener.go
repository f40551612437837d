package biditest

import (
	"context"
	"errors"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"
)

// A generation is one http.Server serving the connections accepted while
// it is current. GoAway shuts the current generation down gracefully
// (GOAWAY on its connections) and starts a new one on the same listener,
// so that clients can reconnect.
type generation struct {
	srv *http.Server
	ln  *genListener
}

// startGenerationLocked starts a new current generation. s.mu is held.
func (s *Server) startGenerationLocked() {
	g := &generation{}
	g.ln = &genListener{s: s, gen: g, done: make(chan struct{})}
	protocols := new(http.Protocols)
	protocols.SetHTTP1(true) // accepted only to be rejected with a clear error
	if s.H2C {
		protocols.SetUnencryptedHTTP2(true)
	} else {
		protocols.SetHTTP2(true)
	}
	streams := int(s.MaxConcurrentStreams)
	if streams == 0 {
		streams = defaultMaxConcurrentStreams
	}
	g.srv = &http.Server{
		Handler:   http.HandlerFunc(s.serveHTTP),
		TLSConfig: s.tlsConfig,
		Protocols: protocols,
		HTTP2: &http.HTTP2Config{
			MaxConcurrentStreams:      streams,
			MaxReceiveBufferPerStream: s.MaxReceiveBufferPerStream,
		},
		// Bounds the TLS handshake (and, with H2C, the preface).
		ReadHeaderTimeout: s.handshakeTimeout(),
		IdleTimeout:       s.idleTimeout(),
		ErrorLog:          s.ErrorLog,
		BaseContext: func(net.Listener) context.Context {
			return s.ctx
		},
	}
	s.gen = g
	s.gens = append(s.gens, g)
	s.bg.Add(1)
	go func() {
		defer s.bg.Done()
		if s.H2C {
			g.srv.Serve(g.ln)
		} else {
			g.srv.ServeTLS(g.ln, "", "")
		}
	}()
}

// acceptLoop accepts connections on s.Listener and hands them to whichever
// generation is accepting. Like http.Server.Serve, it retries an accept
// that failed with a temporary error (the descriptor limit reached, say)
// after a backoff of 5 ms doubling up to a second, logging the first
// failure of a run and the recovery (a few runs a minute at most); it
// stops on any other error. A
// connection over MaxConnections is closed at once.
func (s *Server) acceptLoop() {
	defer s.bg.Done()
	var delay time.Duration // of the current run of failures; 0 when none
	failures := 0
	for {
		c, err := s.Listener.Accept()
		if err != nil {
			if s.ctx.Err() != nil || s.stopping.Load() {
				return
			}
			if !isTemporary(err) {
				s.ErrorLog.Printf("biditest: accept: %v; no more connections are accepted", err)
				return
			}
			if failures == 0 {
				s.limitLog.printf(s.ErrorLog, "accept", "biditest: accept: %v; retrying with backoff", err)
			}
			failures++
			delay = acceptBackoff(delay)
			t := time.NewTimer(delay)
			select {
			case <-t.C:
			case <-s.ctx.Done():
				t.Stop()
				return
			}
			continue
		}
		if failures > 0 {
			s.limitLog.printf(s.ErrorLog, "accepting", "biditest: accepting again after %d failed accepts", failures)
			failures, delay = 0, 0
		}
		tc := newTrackedConn(s, c)
		s.mu.Lock()
		if s.closed {
			s.mu.Unlock()
			c.Close()
			continue
		}
		if limit := s.maxConnections(); limit > 0 && len(s.conns) >= limit {
			s.mu.Unlock()
			c.Close()
			s.limitLog.printf(s.ErrorLog, "connections", "biditest: connection from %s closed: the server holds MaxConnections (%d) already", c.RemoteAddr(), limit)
			continue
		}
		s.conns[tc] = struct{}{}
		s.mu.Unlock()
		select {
		case s.acceptCh <- tc:
		case <-s.ctx.Done():
			tc.Close()
		}
	}
}

// isTemporary reports whether an accept error is worth retrying: the
// process or system ran out of descriptors or buffers, or a connection
// was aborted before it was accepted.
func isTemporary(err error) bool {
	var te interface{ Temporary() bool }
	return errors.As(err, &te) && te.Temporary()
}

// acceptBackoff returns the delay after a failed accept that followed one
// of prev: 5 ms, doubling, at most a second.
func acceptBackoff(prev time.Duration) time.Duration {
	if prev == 0 {
		return 5 * time.Millisecond
	}
	return min(2*prev, time.Second)
}

// genListener is the net.Listener of one generation: it takes connections
// from the accept loop until it is closed.
type genListener struct {
	s    *Server
	gen  *generation
	done chan struct{}
	once sync.Once
}

func (l *genListener) Accept() (net.Conn, error) {
	select {
	case c := <-l.s.acceptCh:
		l.s.mu.Lock()
		c.gen = l.gen
		l.s.mu.Unlock()
		return c, nil
	case <-l.done:
		return nil, net.ErrClosed
	}
}

func (l *genListener) Close() error {
	l.once.Do(func() { close(l.done) })
	return nil
}

func (l *genListener) Addr() net.Addr { return l.s.Listener.Addr() }

// trackedConn is a server connection (below TLS) that the server can close
// abruptly, pause, and whose writes it counts, to know when a GOAWAY went
// out.
type trackedConn struct {
	net.Conn
	s      *Server
	gen    *generation // guarded by s.mu
	writes atomic.Uint64
	closed atomic.Bool
	done   chan struct{} // closed by Close
}

func newTrackedConn(s *Server, c net.Conn) *trackedConn {
	return &trackedConn{Conn: c, s: s, done: make(chan struct{})}
}

// wait blocks while the server's connections are paused.
func (c *trackedConn) wait() error {
	gate := c.s.paused.Load()
	if gate == nil {
		return nil
	}
	select {
	case <-*gate:
		return nil
	case <-c.done:
		return net.ErrClosed
	}
}

func (c *trackedConn) Read(b []byte) (int, error) {
	if err := c.wait(); err != nil {
		return 0, err
	}
	return c.Conn.Read(b)
}

func (c *trackedConn) Write(b []byte) (int, error) {
	if err := c.wait(); err != nil {
		return 0, err
	}
	n, err := c.Conn.Write(b)
	if n > 0 {
		c.writes.Add(1)
	}
	return n, err
}

func (c *trackedConn) Close() error {
	if c.closed.CompareAndSwap(false, true) {
		close(c.done)
		c.s.mu.Lock()
		delete(c.s.conns, c)
		c.s.mu.Unlock()
	}
	return c.Conn.Close()
}
