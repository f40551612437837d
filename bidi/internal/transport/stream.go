package transport

import (
	"context"
	"errors"
	"io"
	"net/http"
	"sync"
	"sync/atomic"

	"golang.org/x/net/http2"

	"github.com/sagemaker-bidi/sagemaker-bidi/eventstream"
)

// Body is a request body that the connection's writer pulls from. The
// writer never blocks on it: ReadNow copies what is ready, and the body
// calls the function given to Bind when more is ready. A Body is used by
// one stream only.
type Body interface {
	// Bind gives the body the function to call whenever it has bytes (or
	// its end) ready that an earlier ReadNow did not return. Bind is
	// called once, before any ReadNow; ready may be called from any
	// goroutine, at any time, any number of times.
	Bind(ready func())

	// ReadNow copies up to len(p) ready bytes into p without blocking. It
	// returns eventstream.ErrWouldBlock, and n == 0, when nothing is
	// ready (the spelling of the response side's Read and Peek), and
	// io.EOF (possibly with n > 0) after the last byte of the body. Any
	// other error makes the engine reset the stream with that cause,
	// unless the engine closed the body meanwhile: a ReadNow may run
	// concurrently with Close (the stream ended while the writer was
	// reading it), and its error then changes nothing. The engine never
	// calls it with an empty p.
	ReadNow(p []byte) (n int, err error)

	// Close is called once when the engine stops reading the body: the
	// body ended, the stream was reset or its connection closed.
	Close() error
}

// A Stream is one HTTP/2 request/response exchange on a connection.
//
// Concurrency: Read, Peek and Discard are for one goroutine at a time;
// Response, Close and Err may be called from any goroutine. Its mu is never held with the
// connection's (doc.go). The connection's read loop fills
// the receive buffer, its writer pulls the body; neither ever waits for
// the application.
type Stream struct {
	cc   *conn
	id   uint32 // set under cc.mu when the stream is registered
	body Body

	// Request head, encoded and then dropped by the writer.
	head *requestHead

	// Guarded by cc.mu.
	sendWindow  int32 // what the peer lets us send on this stream
	queued      bool  // in cc.ready or the writer's rotation (never in both, never twice)
	flowBlocked bool  // waiting for a WINDOW_UPDATE to send
	headersSent bool  // the writer wrote HEADERS
	localDone   bool  // END_STREAM or RST_STREAM queued or sent: no more DATA
	remoteDone  bool  // END_STREAM or RST_STREAM received
	removed     bool  // no longer in cc.streams
	bodyClosed  bool  // the engine stopped reading the body (its Close is called, or was)

	// sendStalls counts the times the writer used up the stream's send
	// window or found it used up (written under cc.mu, read without it;
	// see SendStalls). connStallsBase is the connection's
	// count when the stream was made (set once by newStream).
	sendStalls     atomic.Uint32
	connStallsBase uint32

	activeWin uint32 // the writer's activity window that last counted the stream; the writer's

	respReady chan struct{} // closed once the head (status, header) or err is set
	status    int           // the response head's :status, set once by the read loop before respReady; 0: none
	header    http.Header   // the response head's fields, set with status

	done chan struct{} // closed when the stream is over (err set or EOF)

	stopCancel func() bool // stops the context.AfterFunc watching ctx

	// Guarded by mu: the receive side.
	mu         sync.Mutex
	rbuf       recvBuffer
	recvWindow int32                  // what the peer may still send
	unacked    int32                  // bytes read by the application not yet given back
	eof        bool                   // END_STREAM received
	err        error                  // terminal error; reads fail with it once rbuf is empty
	notifyFn   atomic.Pointer[func()] // see SetNotify
	doneClosed bool
	respClosed bool
}

type requestHead struct {
	method, scheme, authority, path string
	header                          http.Header
}

func newStream(cc *conn, body Body, head *requestHead) *Stream {
	s := &Stream{
		cc:        cc,
		body:      body,
		head:      head,
		respReady: make(chan struct{}),
		done:      make(chan struct{}),
	}
	s.recvWindow = cc.t.cfg.streamWindow()
	s.connStallsBase = cc.sendStalls.Load()
	return s
}

// ID returns the stream's HTTP/2 identifier.
func (s *Stream) ID() uint32 { return s.id }

// Response waits for the final response head and returns its status
// (200 and up) and header fields, canonicalised as net/http does. It
// returns the stream's error if the stream failed first, or ctx's cause.
// The header belongs to the stream: the caller may keep it but not
// modify it.
func (s *Stream) Response(ctx context.Context) (status int, header http.Header, err error) {
	select {
	case <-s.respReady:
	case <-ctx.Done():
		return 0, nil, context.Cause(ctx)
	}
	if s.status != 0 {
		return s.status, s.header, nil
	}
	return 0, nil, s.Err()
}

// Err returns the stream's terminal error, or nil.
func (s *Stream) Err() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.err
}

// Done is closed when the stream is over: ended cleanly or failed.
func (s *Stream) Done() <-chan struct{} { return s.done }

// Read reads the response body without waiting: it copies the bytes
// that are ready, or returns 0, [eventstream.ErrWouldBlock] when no byte,
// end or error is ready yet; the function given to SetNotify is called
// when that may have changed. After the bytes received before it, Read
// returns io.EOF after the peer's END_STREAM, or the stream's error after
// a reset or a connection failure. ErrWouldBlock is the stream's one way
// of saying "nothing yet" (Peek says it the same way), so a Stream is an
// [eventstream.Peeker] that a Decoder reads as it is. Read, Peek and
// Discard are for one reader at a time.
func (s *Stream) Read(p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	s.mu.Lock()
	if s.rbuf.len() > 0 {
		n := s.rbuf.read(p)
		inc := s.consumedLocked(int32(n))
		s.mu.Unlock()
		if inc > 0 {
			s.cc.queueWindowUpdate(s, uint32(inc))
		}
		return n, nil
	}
	defer s.mu.Unlock()
	return 0, s.endLocked()
}

// ReadAll waits for the rest of the response body, up to max bytes, and
// returns it: with a nil error after the peer's END_STREAM (or once it
// has max bytes), else with the stream's error, which its context ending
// makes. It is for short bodies read whole, an error document, by a
// caller that never called SetNotify; it replaces any function given to
// SetNotify.
func (s *Stream) ReadAll(max int) ([]byte, error) {
	wake := make(chan struct{}, 1)
	s.SetNotify(func() {
		select {
		case wake <- struct{}{}:
		default:
		}
	})
	var b []byte
	buf := make([]byte, min(max, 4096))
	for len(b) < max {
		n, err := s.Read(buf[:min(len(buf), max-len(b))])
		b = append(b, buf[:n]...)
		switch {
		case err == eventstream.ErrWouldBlock:
			<-wake
		case err == io.EOF:
			return b, nil
		case err != nil:
			return b, err
		}
	}
	return b, nil
}

// endLocked returns what a read finds once the buffered bytes are read:
// the stream's error, io.EOF after the peer's END_STREAM, or
// eventstream.ErrWouldBlock while more may come. s.mu is held.
func (s *Stream) endLocked() error {
	switch {
	case s.err != nil:
		return s.err
	case s.eof:
		return io.EOF
	}
	return eventstream.ErrWouldBlock
}

// Peek lends the response bytes that are ready and contiguous in memory
// (a prefix of what Read would return), without consuming them. They
// stay in place, unchanged, until the next Peek, Discard or Read, even if
// the stream is closed meanwhile. With no bytes ready it returns what
// Read would: io.EOF, the stream's error, or eventstream.ErrWouldBlock
// while more may come.
func (s *Stream) Peek() ([]byte, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.rbuf.len() > 0 {
		return s.rbuf.peek(), nil
	}
	return nil, s.endLocked()
}

// Discard consumes the first n bytes of what Peek returned, as reading
// them would (the window they took is given back to the peer).
func (s *Stream) Discard(n int) {
	s.mu.Lock()
	if !s.rbuf.lent {
		// Closed meanwhile: the bytes were dropped.
		s.mu.Unlock()
		return
	}
	s.rbuf.discard(n)
	inc := s.consumedLocked(int32(n))
	s.mu.Unlock()
	if inc > 0 {
		s.cc.queueWindowUpdate(s, uint32(inc))
	}
}

// SetNotify makes the stream call f whenever bytes, the end or an error
// may have become ready for Read: f decides whom to wake. f is called from the
// connection's read loop and other goroutines (Close's caller among
// them), with no lock of the engine held; it should not block, since the
// read loop waits for it. Calls may be spurious, and data may be ready already
// when SetNotify is called.
func (s *Stream) SetNotify(f func()) { s.notifyFn.Store(&f) }

// Buffered returns how many response bytes the stream holds that no
// read has taken yet.
func (s *Stream) Buffered() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.rbuf.len()
}

// SendStalls returns a count that changes, since the stream was made,
// each time its request body is held back by flow control: the writer
// used up the stream's window or its connection's, or found one used up
// with bytes to send (a stall may count more than once). Comparing two
// counts tells whether such a stall began between them, however briefly
// it lasted; a new stream's is 0. It takes no lock.
func (s *Stream) SendStalls() uint32 {
	return s.sendStalls.Load() + s.cc.sendStalls.Load() - s.connStallsBase
}

// SendBlocked reports whether the request body cannot move for want of
// flow-control window: the peer has not granted more, on the stream or
// on the connection, and the stream is still sending.
func (s *Stream) SendBlocked() bool {
	cc := s.cc
	cc.mu.Lock()
	defer cc.mu.Unlock()
	return !s.localDone && s.headersSent && (s.sendWindow <= 0 || cc.sendWindow <= 0)
}

// consumedLocked records n bytes read and returns the window increment to
// send, if the unacknowledged bytes reached a quarter of the window.
// s.mu is held.
func (s *Stream) consumedLocked(n int32) int32 {
	if s.eof || s.err != nil {
		return 0
	}
	s.unacked += n
	if s.unacked < s.cc.t.cfg.streamWindow()/4 {
		return 0
	}
	inc := s.unacked
	s.unacked = 0
	s.recvWindow += inc
	return inc
}

func (s *Stream) wake() {
	if f := s.notifyFn.Load(); f != nil {
		(*f)()
	}
}

// Close ends the stream from this side: unless both sides had ended it,
// it is reset with CANCEL. Buffered response bytes are dropped. Close is
// safe to call more than once.
func (s *Stream) Close() error {
	s.cancel(errStreamClosed)
	return nil
}

var errStreamClosed = errors.New("stream closed")

// cancel resets the stream (CANCEL) with err as the error of pending and
// later reads, unless it is over already.
func (s *Stream) cancel(err error) {
	s.fail(err)
	s.mu.Lock()
	s.rbuf.release() // this side gave up: nobody reads them
	s.mu.Unlock()
	s.cc.resetStream(s, http2.ErrCodeCancel)
}

// fail sets the stream's terminal error unless it ended first, and wakes
// every waiter. The bytes received before stay readable: Read returns
// them, then the error. It does not touch the connection.
func (s *Stream) fail(err error) {
	s.mu.Lock()
	if s.err == nil && !s.eof {
		s.err = err
	}
	s.closeDoneLocked()
	s.mu.Unlock()
	s.wake()
}

// closeDoneLocked closes done and respReady. s.mu is held.
func (s *Stream) closeDoneLocked() {
	if !s.respClosed {
		s.respClosed = true
		close(s.respReady)
	}
	if !s.doneClosed {
		s.doneClosed = true
		close(s.done)
		if s.stopCancel != nil {
			s.stopCancel()
		}
	}
}

// onData takes a DATA frame's payload (data, its flow-controlled length
// n including padding). It returns a stream error if the peer exceeded
// the stream window, else the window increment to send now (padding,
// which is never read, is given back as if it had been read). Called by
// the read loop, which then wakes the reader; END_STREAM is recorded
// apart (onEnd), once the stream has left the connection.
func (s *Stream) onData(data []byte, n int32) (int32, error) {
	s.mu.Lock()
	if n > s.recvWindow {
		s.mu.Unlock()
		return 0, errFlowControl
	}
	s.recvWindow -= n
	var inc int32
	if s.err == nil && !s.eof {
		if pad := n - int32(len(data)); pad > 0 {
			inc = s.consumedLocked(pad)
		}
		s.rbuf.write(data)
	}
	s.mu.Unlock()
	return inc, nil
}

var errFlowControl = errors.New("peer exceeded the stream's flow-control window")

// onEnd records END_STREAM from the peer (on HEADERS).
func (s *Stream) onEnd() {
	s.mu.Lock()
	if s.err == nil {
		s.eof = true
	}
	s.closeDoneLocked()
	s.mu.Unlock()
	s.wake()
}

// onResponse publishes the response head.
func (s *Stream) onResponse(status int, header http.Header) {
	s.mu.Lock()
	if !s.respClosed {
		s.status, s.header = status, header
		s.respClosed = true
		close(s.respReady)
	}
	s.mu.Unlock()
}

// gotResponse reports whether the response head arrived.
func (s *Stream) gotResponse() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.status != 0
}
