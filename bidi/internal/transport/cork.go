package transport

import (
	"net"
	"sync"

	"github.com/sagemaker-bidi/sagemaker-bidi/internal/bufpool"
)

// corkLimit is how much a corked connection holds before it writes
// anyway.
const corkLimit = 256 << 10

// corkKeep is the largest batch buffer a connection keeps between
// batches; a larger one goes back to corkPool, so that an idle connection
// holds a few KiB whatever it carried, and busy ones share buffers.
const corkKeep = 16 << 10

var corkPool = bufpool.Pool{Keep: corkKeep}

// corkedConn is the TCP connection under TLS. crypto/tls writes each
// record (at most 16 KiB of payload) with a system call of its own; while
// the connection's writer produces a batch of frames, the connection is
// corked and the records collect here, to go out in one system call when
// the writer flushes (or every corkLimit bytes). Writes from elsewhere
// (the TLS handshake, alerts, a key update answered by the read loop) go
// straight through unless they come during a batch, in which case they
// join it in order.
type corkedConn struct {
	net.Conn

	mu     sync.Mutex // guards the fields below and serialises writes
	corked bool
	buf    []byte
	handle *[]byte // buf's corkPool handle, if it came from the pool
	err    error   // sticky write error of a corked batch
}

// Write implements net.Conn.
func (c *corkedConn) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.corked {
		return c.Conn.Write(p)
	}
	if c.err != nil {
		return 0, c.err
	}
	if c.buf == nil {
		c.buf, c.handle = corkPool.Get()
	}
	c.buf = append(bufpool.Grow(c.buf, len(p)), p...)
	if len(c.buf) >= corkLimit {
		if err := c.flushLocked(); err != nil {
			return 0, err
		}
	}
	return len(p), nil
}

// cork starts a batch.
func (c *corkedConn) cork() {
	c.mu.Lock()
	c.corked = true
	c.mu.Unlock()
}

// uncork ends the batch: what it holds is written now, and a large
// buffer goes back to the pool.
func (c *corkedConn) uncork() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.corked = false
	err := c.flushLocked()
	corkPool.Release(&c.buf, &c.handle)
	return err
}

func (c *corkedConn) flushLocked() error {
	if c.err != nil {
		return c.err
	}
	if len(c.buf) == 0 {
		return nil
	}
	_, err := c.Conn.Write(c.buf)
	c.buf = c.buf[:0]
	if err != nil {
		c.err = err
	}
	return err
}
