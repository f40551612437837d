// Package memnet is a network in memory for tests that run servers and
// their clients in a testing/synctest bubble.
//
// A Listener's connections are pairs of buffered pipes in memory, the
// far ends of those its DialContext makes. A goroutine blocked reading or
// writing one waits on channels, which a bubble sees (a loopback socket's
// waits it does not), so the bubble's clock can move past it: a test's
// timers, pacing and quiet periods then take no real time and fire
// exactly when due. Each direction buffers 256 KiB, as a socket would:
// both ends may write first, and a writer whose peer stops reading waits
// once the buffer is full (or until its write deadline).
//
// Give a Listener to a server (net/http, biditest) and its DialContext
// to the clients (bidi.Options.DialContext, an http.Transport's), all
// inside the bubble.
package memnet

import (
	"context"
	"net"
)

// A Listener accepts the connections its DialContext makes. It is safe
// for concurrent use.
type Listener struct {
	conns  chan net.Conn
	closed context.Context    // done once Close was called
	stop   context.CancelFunc // Close
}

// Listen returns a new Listener. Call it in the bubble that uses it.
func Listen() *Listener {
	closed, stop := context.WithCancel(context.Background())
	return &Listener{conns: make(chan net.Conn), closed: closed, stop: stop}
}

// Accept returns the server's end of the next dial, or net.ErrClosed
// once the Listener is closed.
func (l *Listener) Accept() (net.Conn, error) {
	select {
	case c := <-l.conns:
		return c, nil
	case <-l.closed.Done():
	}
	return nil, net.ErrClosed
}

// Close stops Accept and the dials still waiting for it; the connections
// already made stay open.
func (l *Listener) Close() error {
	l.stop()
	return nil
}

// Addr returns 127.0.0.1:8443, the loopback address a test server's
// certificate names, whatever was dialled.
func (l *Listener) Addr() net.Addr { return &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 8443} }

// DialContext connects to the Listener, whatever the network and
// address: it returns the client's end of a connection once Accept has
// taken the other. It fails with an error matching net.ErrClosed when
// the Listener is closed, or with ctx's error when ctx ends first.
func (l *Listener) DialContext(ctx context.Context, network, addr string) (net.Conn, error) {
	client, server := newConnPair(&net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 49152}, l.Addr())
	select {
	case l.conns <- server:
		return client, nil
	case <-l.closed.Done():
	case <-ctx.Done():
		client.Close()
		server.Close()
		return nil, ctx.Err()
	}
	client.Close()
	server.Close()
	return nil, &net.OpError{Op: "dial", Net: network, Err: net.ErrClosed}
}
