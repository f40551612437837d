package bidi_test

import (
	"context"
	"net"
	"sync"
	"testing"

	"github.com/sagemaker-bidi/sagemaker-bidi/bidi"
	"github.com/sagemaker-bidi/sagemaker-bidi/bidi/biditest"
)

// memNet is a network in memory for tests run in a testing/synctest
// bubble: it is a biditest server's Listener, and its DialContext is the
// client's. Each dial is a net.Pipe, whose blocked reads and writes are
// waits the bubble sees (a loopback socket's are not), so that a bubble's
// clock can move past them.
type memNet struct {
	conns     chan net.Conn
	done      chan struct{}
	closeOnce sync.Once
}

func newMemNet() *memNet {
	return &memNet{conns: make(chan net.Conn), done: make(chan struct{})}
}

// Accept returns the server's end of the next dial.
func (n *memNet) Accept() (net.Conn, error) {
	select {
	case c := <-n.conns:
		return c, nil
	case <-n.done:
		return nil, net.ErrClosed
	}
}

// Close stops Accept; the connections it returned stay open.
func (n *memNet) Close() error {
	n.closeOnce.Do(func() { close(n.done) })
	return nil
}

// Addr is the loopback address a biditest server's certificate names.
func (n *memNet) Addr() net.Addr { return &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 8443} }

// DialContext connects to the listener, whatever the address.
func (n *memNet) DialContext(ctx context.Context, network, addr string) (net.Conn, error) {
	client, server := net.Pipe()
	select {
	case n.conns <- server:
		return client, nil
	case <-n.done:
		return nil, &net.OpError{Op: "dial", Net: network, Err: net.ErrClosed}
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// newMemServer is newServer on a memNet, and the option that makes a
// client dial it.
func newMemServer(t *testing.T, h biditest.Handler, setup ...func(*biditest.Server)) (*biditest.Server, func(*bidi.Options)) {
	t.Helper()
	n := newMemNet()
	srv := newServer(t, h, append([]func(*biditest.Server){func(s *biditest.Server) { s.Listener = n }}, setup...)...)
	return srv, func(o *bidi.Options) { o.DialContext = n.DialContext }
}
