package transport

import (
	"context"
	"crypto/tls"
	"net/http"
	"net/url"
	"sync"
	"time"

	"github.com/sagemaker-bidi/sagemaker-bidi/internal/backoff"
)

// A Transport opens HTTP/2 streams on pooled connections, one pool per
// endpoint. It is safe for concurrent use.
type Transport struct {
	cfg       Config
	tlsConfig *tls.Config
	ctx       context.Context // ended by Close; bounds dials
	cancel    context.CancelFunc

	mu     sync.Mutex
	pools  map[endpoint]*pool
	closed bool
}

// New returns a Transport configured by cfg.
func New(cfg Config) *Transport {
	t := &Transport{cfg: cfg, pools: make(map[endpoint]*pool)}
	if cfg.TLSConfig != nil {
		t.tlsConfig = cfg.TLSConfig.Clone()
	} else {
		t.tlsConfig = &tls.Config{}
	}
	t.tlsConfig.NextProtos = []string{"h2"}
	if t.tlsConfig.MinVersion == 0 {
		t.tlsConfig.MinVersion = tls.VersionTLS12
	}
	t.ctx, t.cancel = context.WithCancel(context.Background())
	return t
}

// NewStream opens a stream for req: it waits for a connection with a free
// slot (dialing one if needed), registers the stream and queues its
// HEADERS; the connection's writer then pulls body. It returns without
// waiting for the response (see [Stream.Response]). ctx bounds the wait
// and the stream's whole life: when ctx ends, the stream is reset.
func (t *Transport) NewStream(ctx context.Context, u *url.URL, header http.Header, body Body) (*Stream, error) {
	e, err := endpointOf(u)
	if err != nil {
		return nil, err
	}
	p := t.pool(e)
	if p == nil {
		return nil, ErrClosed
	}
	cc, err := p.acquire(ctx)
	if err != nil {
		return nil, err
	}
	head := &requestHead{method: http.MethodPost, scheme: u.Scheme, authority: u.Host, path: u.RequestURI(), header: header}
	s := newStream(cc, body, head)
	body.Bind(func() { cc.bodyReady(s) })
	if err := cc.openStream(s); err != nil {
		p.changed()
		return nil, err
	}
	stop := context.AfterFunc(ctx, func() { s.cancel(context.Cause(ctx)) })
	s.mu.Lock()
	if s.doneClosed {
		s.mu.Unlock()
		stop()
	} else {
		s.stopCancel = stop
		s.mu.Unlock()
	}
	return s, nil
}

func (t *Transport) pool(e endpoint) *pool {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.closed {
		return nil
	}
	p := t.pools[e]
	if p == nil {
		p = &pool{t: t, e: e}
		t.pools[e] = p
	}
	return p
}

// CloseIdleConnections closes every connection that carries no stream.
func (t *Transport) CloseIdleConnections() {
	t.mu.Lock()
	pools := make([]*pool, 0, len(t.pools))
	for _, p := range t.pools {
		pools = append(pools, p)
	}
	t.mu.Unlock()
	for _, p := range pools {
		p.closeIdle()
	}
}

// Close closes every connection and fails their streams; later NewStream
// calls fail with ErrClosed.
func (t *Transport) Close() {
	t.mu.Lock()
	t.closed = true
	pools := t.pools
	t.pools = nil
	t.mu.Unlock()
	t.cancel()
	for _, p := range pools {
		p.closeAll()
	}
}

// pool is the set of connections to one endpoint.
//
// Lock order: Transport.mu, then pool.mu, then conn.mu (doc.go).
type pool struct {
	t *Transport
	e endpoint

	mu       sync.Mutex
	conns    []*conn
	waiters  []*waiter // FIFO
	dialing  bool      // a dial is in flight (at most one)
	closed   bool      // Transport.Close: no more waiters or connections
	failures int       // consecutive failed or refused dials, or connections that processed no stream
	refusals int       // consecutive connections that allowed no stream
	nextDial time.Time // no dial before, after failures
}

type waiter struct {
	ch chan acquired // cap 1
}

type acquired struct {
	cc  *conn
	err error
}

// acquire returns a connection with a slot reserved for a new stream.
func (p *pool) acquire(ctx context.Context) (*conn, error) {
	if err := ctx.Err(); err != nil {
		return nil, context.Cause(ctx)
	}
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return nil, ErrClosed
	}
	if cc := p.pickLocked(); cc != nil {
		p.mu.Unlock()
		return cc, nil
	}
	w := &waiter{ch: make(chan acquired, 1)}
	p.waiters = append(p.waiters, w)
	p.maybeDialLocked()
	p.mu.Unlock()
	select {
	case a := <-w.ch:
		return a.cc, a.err
	case <-ctx.Done():
		p.mu.Lock()
		removed := false
		for i, x := range p.waiters {
			if x == w {
				p.waiters = append(p.waiters[:i], p.waiters[i+1:]...)
				removed = true
				break
			}
		}
		p.mu.Unlock()
		if !removed {
			if a := <-w.ch; a.cc != nil {
				a.cc.releaseSlot()
			}
		}
		return nil, context.Cause(ctx)
	}
}

// pickLocked reserves a slot on the first connection with room: streams
// fill connections in order, so that few connections carry them. p.mu is
// held.
func (p *pool) pickLocked() *conn {
	for _, cc := range p.conns {
		cc.mu.Lock()
		if cc.capacityLocked() > 0 {
			cc.reserveLocked()
			cc.mu.Unlock()
			return cc
		}
		cc.mu.Unlock()
	}
	return nil
}

// changed serves waiters after a connection gained room.
func (p *pool) changed() {
	if p == nil {
		return
	}
	p.mu.Lock()
	p.serveLocked()
	p.mu.Unlock()
}

// serveLocked hands reserved slots to waiters in order, and dials when
// some are left. p.mu is held.
func (p *pool) serveLocked() {
	for len(p.waiters) > 0 {
		cc := p.pickLocked()
		if cc == nil {
			break
		}
		w := p.waiters[0]
		p.waiters[0] = nil
		p.waiters = p.waiters[1:]
		w.ch <- acquired{cc: cc}
	}
	if len(p.waiters) == 0 {
		p.waiters = nil
	}
	p.maybeDialLocked()
}

// maybeDialLocked starts a dial if sessions wait and none is in flight.
// p.mu is held.
func (p *pool) maybeDialLocked() {
	if p.dialing || len(p.waiters) == 0 || p.t.ctx.Err() != nil {
		return
	}
	p.dialing = true
	go p.dial(time.Until(p.nextDial))
}

// dial opens a connection after delay and hands its slots to waiters.
// A failed dial fails the waiters of the moment and delays the next one.
func (p *pool) dial(delay time.Duration) {
	backoff.Sleep(p.t.ctx, delay) // cut short by Transport.Close
	cc, err := p.t.dial(p.t.ctx, p.e)
	if h := p.t.cfg.Hooks; h != nil && h.Dialed != nil {
		h.Dialed(p.e.addr, err)
	}
	p.mu.Lock()
	p.dialing = false
	if err == nil && p.closed {
		// Transport.Close ran during the dial: the connection is not
		// pooled, and nobody waits for it.
		p.mu.Unlock()
		cc.closeSocket()
		return
	}
	if err != nil {
		if p.closed || p.t.ctx.Err() != nil {
			err = ErrClosed // the dial failed because Transport.Close ran
		}
		p.failedLocked()
		ws := p.waiters
		p.waiters = nil
		p.mu.Unlock()
		for _, w := range ws {
			w.ch <- acquired{err: err}
		}
		return
	}
	cc.p = p
	cc.start()
	cc.mu.Lock()
	zero := cc.capacityLocked() == 0
	cc.mu.Unlock()
	if zero {
		// The server allows no stream: a refusal. Close the connection,
		// back off, and after DefaultMaxRefusals give up on the waiters.
		p.failedLocked()
		p.refusals++
		var ws []*waiter
		if p.refusals >= DefaultMaxRefusals {
			p.refusals = 0
			ws, p.waiters = p.waiters, nil
		}
		p.mu.Unlock()
		cc.fail(ErrClosed)
		for _, w := range ws {
			w.ch <- acquired{err: &refusedError{reason: "the server allows no concurrent streams (SETTINGS_MAX_CONCURRENT_STREAMS 0)"}}
		}
		p.mu.Lock()
		p.maybeDialLocked()
		p.mu.Unlock()
		return
	}
	// failures is reset only once the connection processes a stream
	// (succeeded): a server that accepts connections and sends every one
	// away (GOAWAY with last stream ID 0) meets a growing backoff.
	p.refusals = 0
	p.conns = append(p.conns, cc)
	p.serveLocked()
	// Waiters that gave up during the dial leave it without a stream:
	// it is idle from the start.
	cc.mu.Lock()
	cc.slotFreedLocked()
	cc.mu.Unlock()
	p.mu.Unlock()
}

// succeeded records that a connection processed a stream: the dial
// backoff starts again from zero.
func (p *pool) succeeded() {
	p.mu.Lock()
	p.failures = 0
	p.mu.Unlock()
}

// failedLocked records a failed or refused dial: the next waits a
// jittered, exponentially growing delay. p.mu is held.
func (p *pool) failedLocked() {
	p.failures++
	p.nextDial = time.Now().Add(backoff.Delay(p.failures, refusalBackoffBase, refusalBackoffMax))
}

// refused records a connection that the server sent away before
// processing any stream.
func (p *pool) refused() {
	p.mu.Lock()
	p.failedLocked()
	p.mu.Unlock()
}

// remove drops a closed connection from the pool.
func (p *pool) remove(cc *conn) {
	p.mu.Lock()
	for i, x := range p.conns {
		if x == cc {
			p.conns = append(p.conns[:i], p.conns[i+1:]...)
			break
		}
	}
	p.serveLocked()
	p.mu.Unlock()
}

func (p *pool) closeIdle() {
	p.mu.Lock()
	var idle []*conn
	for _, cc := range p.conns {
		cc.mu.Lock()
		if cc.slots == 0 && cc.err == nil {
			cc.closing = true // no slot is reserved on it from now on
			idle = append(idle, cc)
		}
		cc.mu.Unlock()
	}
	p.mu.Unlock()
	for _, cc := range idle {
		cc.fail(ErrClosed)
	}
}

func (p *pool) closeAll() {
	p.mu.Lock()
	p.closed = true
	conns := append([]*conn(nil), p.conns...)
	ws := p.waiters
	p.waiters = nil
	p.mu.Unlock()
	for _, w := range ws {
		w.ch <- acquired{err: ErrClosed}
	}
	for _, cc := range conns {
		cc.fail(ErrClosed)
	}
}
