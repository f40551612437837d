package bidi

import (
	"io"
	"sync"
	"sync/atomic"
)

// pumpBytes bounds what a pumpSource reads ahead of Recv; beyond it the
// pump stops reading and HTTP/2 flow control holds the service back.
const pumpBytes = 256 << 10

// pumpSource adapts a blocking response body (net/http's, with
// Options.HTTPClient) to respSource: a goroutine of its own reads the
// body ahead, at most pumpBytes, until it ends or Close is called.
type pumpSource struct {
	body   io.ReadCloser
	notify atomic.Pointer[func()] // see SetNotify
	space  chan struct{}          // cap 1: ReadNow made room
	done   chan struct{}          // closed once err is set
	stop   chan struct{}          // closed by Close

	mu  sync.Mutex // guards buf, off, err
	buf []byte     // buf[off:] is read, not yet taken
	off int
	err error // the body's end: io.EOF or its error

	closeOnce sync.Once
}

func newPumpSource(body io.ReadCloser) *pumpSource {
	p := &pumpSource{
		body:  body,
		space: make(chan struct{}, 1),
		done:  make(chan struct{}),
		stop:  make(chan struct{}),
	}
	go p.pump()
	return p
}

// pump reads the body until it ends; it is the source's goroutine.
func (p *pumpSource) pump() {
	var chunk [32 << 10]byte
	for {
		p.mu.Lock()
		full := len(p.buf)-p.off >= pumpBytes
		p.mu.Unlock()
		if full {
			select {
			case <-p.space:
				continue
			case <-p.stop:
				p.finish(errBodyDone)
				return
			}
		}
		n, err := p.body.Read(chunk[:])
		p.mu.Lock()
		if p.off == len(p.buf) {
			p.buf, p.off = p.buf[:0], 0
		}
		p.buf = append(p.buf, chunk[:n]...)
		p.mu.Unlock()
		if err != nil {
			p.finish(err)
			return
		}
		p.wake()
	}
}

// wake calls the reader's notification, if set.
func (p *pumpSource) wake() {
	if f := p.notify.Load(); f != nil {
		(*f)()
	}
}

// finish records the body's end and wakes the reader.
func (p *pumpSource) finish(err error) {
	p.mu.Lock()
	p.err = err
	p.mu.Unlock()
	close(p.done)
	p.wake()
}

// ReadNow implements respSource.
func (p *pumpSource) ReadNow(b []byte) (int, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.off < len(p.buf) {
		n := copy(b, p.buf[p.off:])
		p.off += n
		if p.off == len(p.buf) {
			p.buf, p.off = p.buf[:0], 0
		}
		signal(p.space)
		return n, nil
	}
	return 0, p.err
}

// SetNotify implements respSource.
func (p *pumpSource) SetNotify(f func()) { p.notify.Store(&f) }

// Done implements respSource.
func (p *pumpSource) Done() <-chan struct{} { return p.done }

// Close stops the pump and closes the body.
func (p *pumpSource) Close() error {
	p.closeOnce.Do(func() { close(p.stop) })
	return p.body.Close()
}
