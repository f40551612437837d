package relay

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"math"
	"net"
	"net/http"
	"sync/atomic"
	"time"
)

// A relayed connection's WebSocket reads and writes go through the
// bufio.Reader and Writer that the upgrade's Hijack returns, for the
// whole call. net/http's are 4 KiB each; the relay hands coder/websocket
// smaller ones, which for a thousand calls is several MiB less:
//
//   - connReadBuf: a frame header and the start of its payload; a
//     payload larger than what is buffered is read from the socket
//     straight into the message's buffer, so a smaller buffer costs at
//     most one more read per message;
//   - connWriteBuf: a frame is a header and its payload, flushed at
//     once; one that fits (a 20 ms frame of 16 kHz audio, 640 B, or a
//     short JSON event) is one write to the socket, a larger one two.
const (
	connReadBuf  = 1 << 10
	connWriteBuf = 1 << 10
)

// smallBufWriter is the ResponseWriter the relay upgrades through: its
// Hijack returns the connection, as a *clientConn, with the relay's
// smaller buffers, and stores it in *conn if conn is set. Unwrap lets
// http.ResponseController reach the original.
type smallBufWriter struct {
	http.ResponseWriter
	conn **clientConn
}

func (w smallBufWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// WriteHeaderNow passes coder/websocket's call on to a ResponseWriter
// that holds the status back until it is called (gin's does), so that
// the 101 is written before the hijack.
func (w smallBufWriter) WriteHeaderNow() {
	if h, ok := w.ResponseWriter.(interface{ WriteHeaderNow() }); ok {
		h.WriteHeaderNow()
	}
}

// Hijack hijacks the underlying ResponseWriter (or the one it wraps) and
// replaces its buffers.
// Bytes the server had read past the request (the client's first frames,
// sent before the 101 arrived) are kept: they are what the new reader
// has buffered. Anything buffered for writing is flushed first.
func (w smallBufWriter) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	// ResponseController finds the Hijacker behind wrappers that have
	// Unwrap, as coder/websocket would have.
	conn, brw, err := http.NewResponseController(w.ResponseWriter).Hijack()
	if err != nil {
		return nil, nil, err
	}
	if err := brw.Writer.Flush(); err != nil {
		conn.Close()
		return nil, nil, err
	}
	cc := newClientConn(conn)
	br := bufio.NewReaderSize(cc, connReadBuf)
	if n := brw.Reader.Buffered(); n > 0 {
		// The early bytes go into the new reader's buffer, where
		// coder/websocket looks for them (it re-wraps the connection
		// behind what is buffered). The one Read of the bytes.Reader
		// fills it without touching the connection.
		early, _ := brw.Reader.Peek(n)
		br = bufio.NewReaderSize(io.MultiReader(bytes.NewReader(bytes.Clone(early)), cc), max(connReadBuf, n))
		if _, err := br.Peek(n); err != nil {
			conn.Close()
			return nil, nil, err
		}
	}
	if w.conn != nil {
		*w.conn = cc
	}
	return cc, bufio.NewReadWriter(br, bufio.NewWriterSize(cc, connWriteBuf)), nil
}

// What the relay reads of a client once it closes the WebSocket itself.
// The close handshake (coder/websocket's Close) reads what the client
// sent before it saw the relay's close frame, and discards it, until the
// client's close frame arrives; it reads a frame's payload whatever its
// announced length, a byte at a time, and its own 5 s bound does not
// stop that. A client that announced a frame of a TiB could keep a CPU
// busy for as long as it streamed.
//
//   - closeReadLimit bounds the bytes read once the relay began a
//     graceful close: a client's frames in flight and its close frame
//     fit, and a client that sends more is dropped without its close;
//   - closeWait bounds the time, against a client that trickles.
//
// A client that broke the protocol gets neither: nothing more is read
// (see call.failConn).
const (
	closeReadLimit = 64 << 10
	closeWait      = 5 * time.Second
)

// errCloseReadLimit is what a clientConn's Read returns once it has read
// what its limit allows.
var errCloseReadLimit = errors.New("relay: client sent too much during the close handshake")

// clientConn is a client's connection as the relay hands it to
// coder/websocket: a net.Conn whose reads can be limited, so that the
// close handshake reads a bounded number of bytes. left is what reads
// may still take: unlimited until limitReads sets it, and used up at 0
// or below (a read that was under way when limitReads set it may count
// past 0). Read is called by one goroutine at a time (coder/websocket's
// read lock).
type clientConn struct {
	net.Conn
	left atomic.Int64
}

// unlimited is a clientConn's left before limitReads.
const unlimited = math.MaxInt64

func newClientConn(c net.Conn) *clientConn {
	cc := &clientConn{Conn: c}
	cc.left.Store(unlimited)
	return cc
}

// Read reads from the connection, within the limit if one is set.
func (c *clientConn) Read(p []byte) (int, error) {
	left := c.left.Load()
	if left == unlimited {
		return c.Conn.Read(p)
	}
	if left <= 0 {
		return 0, errCloseReadLimit
	}
	if int64(len(p)) > left {
		p = p[:left]
	}
	n, err := c.Conn.Read(p)
	c.left.Add(-int64(n))
	return n, err
}

// limitReads lets the connection's reads take at most n more bytes,
// within closeWait from now. With n 0 a read in progress fails at once
// too.
func (c *clientConn) limitReads(n int64) {
	c.left.Store(n)
	deadline := time.Now().Add(closeWait)
	if n == 0 {
		deadline = time.Unix(1, 0) // past: every read fails at once
	}
	c.Conn.SetReadDeadline(deadline)
}
