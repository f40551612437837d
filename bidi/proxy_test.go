package bidi_test

import (
	"io"
	"net"
	"sync"
	"testing"
)

// stallProxy is a TCP proxy on loopback that can stop forwarding: after
// Stall, bytes in either direction are swallowed and the connections stay
// open, like a peer that hangs or a network path that blackholes traffic.
type stallProxy struct {
	ln      net.Listener
	target  string
	stalled chan struct{}
	once    sync.Once
	closed  chan struct{}

	mu    sync.Mutex
	conns []net.Conn
	wg    sync.WaitGroup
}

func newStallProxy(t *testing.T, target string) *stallProxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &stallProxy{ln: ln, target: target, stalled: make(chan struct{}), closed: make(chan struct{})}
	p.wg.Add(1)
	go p.accept()
	t.Cleanup(p.Close)
	return p
}

// Addr returns the proxy's host:port.
func (p *stallProxy) Addr() string { return p.ln.Addr().String() }

// Stall stops forwarding for good.
func (p *stallProxy) Stall() { p.once.Do(func() { close(p.stalled) }) }

func (p *stallProxy) accept() {
	defer p.wg.Done()
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		u, err := net.Dial("tcp", p.target)
		if err != nil {
			c.Close()
			continue
		}
		p.mu.Lock()
		p.conns = append(p.conns, c, u)
		p.mu.Unlock()
		p.wg.Add(2)
		go p.pipe(u, c)
		go p.pipe(c, u)
	}
}

func (p *stallProxy) pipe(dst io.Writer, src io.Reader) {
	defer p.wg.Done()
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		select {
		case <-p.stalled:
			// Swallow everything from now on, keeping the connection.
			for {
				if _, err := src.Read(buf); err != nil {
					return
				}
			}
		default:
		}
		if n > 0 {
			if _, werr := dst.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			return
		}
	}
}

// Close closes the listener and every connection and waits for the
// forwarding goroutines.
func (p *stallProxy) Close() {
	p.ln.Close()
	p.mu.Lock()
	for _, c := range p.conns {
		c.Close()
	}
	p.mu.Unlock()
	p.wg.Wait()
}
