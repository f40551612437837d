package memnet

import (
	"io"
	"net"
	"os"
	"sync"
	"time"
)

// bufferBytes is how much one direction of a connection holds before a
// Write waits for the reader, as a socket's buffers do: both ends of a
// protocol may write first (an HTTP/2 client's preface, its server's
// SETTINGS) without deadlocking, and a peer that stops reading stalls
// its writer once the buffer is full.
const bufferBytes = 256 << 10

// pipe is one direction of a connection: bytes written at one end, read
// at the other. Its waits are on channels, which a synctest bubble sees.
type pipe struct {
	mu      sync.Mutex
	buf     []byte
	rclosed bool          // the reading end was closed
	wclosed bool          // the writing end was closed
	changed chan struct{} // closed and replaced when any of the above changes
}

func newPipe() *pipe { return &pipe{changed: make(chan struct{})} }

// notifyLocked wakes every waiter. p.mu is held.
func (p *pipe) notifyLocked() {
	close(p.changed)
	p.changed = make(chan struct{})
}

// deadline is one of a conn's deadlines.
type deadline struct {
	mu      sync.Mutex
	at      time.Time
	changed chan struct{} // closed and replaced when at changes
}

func newDeadline() *deadline { return &deadline{changed: make(chan struct{})} }

func (d *deadline) set(t time.Time) {
	d.mu.Lock()
	d.at = t
	close(d.changed)
	d.changed = make(chan struct{})
	d.mu.Unlock()
}

// wait blocks until woken, the deadline changes or it passes; it
// reports whether the deadline passed (now or before).
func (d *deadline) wait(woken <-chan struct{}) (expired bool) {
	d.mu.Lock()
	at, changed := d.at, d.changed
	d.mu.Unlock()
	var timeout <-chan time.Time // nil, which never fires, without a deadline
	if !at.IsZero() {
		wait := time.Until(at)
		if wait <= 0 {
			return true
		}
		t := time.NewTimer(wait)
		defer t.Stop()
		timeout = t.C
	}
	select {
	case <-woken:
	case <-changed:
	case <-timeout:
		return true
	}
	return false
}

// conn is one end of a connection.
type conn struct {
	in, out       *pipe // read from in, write to out
	rdl, wdl      *deadline
	local, remote net.Addr
	closeOnce     sync.Once
}

// newConnPair returns the two ends of a connection.
func newConnPair(clientAddr, serverAddr net.Addr) (client, server *conn) {
	up, down := newPipe(), newPipe()
	client = &conn{in: down, out: up, rdl: newDeadline(), wdl: newDeadline(), local: clientAddr, remote: serverAddr}
	server = &conn{in: up, out: down, rdl: newDeadline(), wdl: newDeadline(), local: serverAddr, remote: clientAddr}
	return client, server
}

// Read reads what the other end wrote; io.EOF once it closed and all of
// it was read.
func (c *conn) Read(b []byte) (int, error) {
	p := c.in
	for {
		p.mu.Lock()
		switch {
		case p.rclosed:
			p.mu.Unlock()
			return 0, c.opError("read", net.ErrClosed)
		case len(p.buf) > 0:
			n := copy(b, p.buf)
			p.buf = p.buf[n:]
			if len(p.buf) == 0 {
				p.buf = nil
			}
			p.notifyLocked()
			p.mu.Unlock()
			return n, nil
		case p.wclosed:
			p.mu.Unlock()
			return 0, io.EOF
		case len(b) == 0:
			p.mu.Unlock()
			return 0, nil
		}
		woken := p.changed
		p.mu.Unlock()
		if c.rdl.wait(woken) {
			return 0, c.opError("read", os.ErrDeadlineExceeded)
		}
	}
}

// Write writes b for the other end, waiting while bufferBytes are unread.
func (c *conn) Write(b []byte) (int, error) {
	p := c.out
	written := 0
	for {
		p.mu.Lock()
		switch {
		case p.wclosed:
			p.mu.Unlock()
			return written, c.opError("write", net.ErrClosed)
		case p.rclosed:
			p.mu.Unlock()
			return written, c.opError("write", io.ErrClosedPipe)
		case written == len(b):
			p.mu.Unlock()
			return written, nil
		case len(p.buf) < bufferBytes:
			n := min(len(b)-written, bufferBytes-len(p.buf))
			p.buf = append(p.buf, b[written:written+n]...)
			written += n
			p.notifyLocked()
			p.mu.Unlock()
			continue
		}
		woken := p.changed
		p.mu.Unlock()
		if c.wdl.wait(woken) {
			return written, c.opError("write", os.ErrDeadlineExceeded)
		}
	}
}

// Close closes this end: its reads and writes fail, the other end reads
// what was written and then io.EOF, and its writes fail.
func (c *conn) Close() error {
	c.closeOnce.Do(func() {
		for _, p := range []*pipe{c.in, c.out} {
			p.mu.Lock()
			if p == c.in {
				p.rclosed = true
				p.buf = nil
			} else {
				p.wclosed = true
			}
			p.notifyLocked()
			p.mu.Unlock()
		}
	})
	return nil
}

// LocalAddr and RemoteAddr return this end's address and the other's.
func (c *conn) LocalAddr() net.Addr  { return c.local }
func (c *conn) RemoteAddr() net.Addr { return c.remote }

// SetDeadline, SetReadDeadline and SetWriteDeadline behave as net.Conn
// says: a wait past its deadline fails with os.ErrDeadlineExceeded.
func (c *conn) SetDeadline(t time.Time) error {
	c.rdl.set(t)
	c.wdl.set(t)
	return nil
}

func (c *conn) SetReadDeadline(t time.Time) error  { c.rdl.set(t); return nil }
func (c *conn) SetWriteDeadline(t time.Time) error { c.wdl.set(t); return nil }

func (c *conn) opError(op string, err error) error {
	return &net.OpError{Op: op, Net: "memnet", Source: c.local, Addr: c.remote, Err: err}
}
