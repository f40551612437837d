package relay

import (
	"bufio"
	"bytes"
	"io"
	"net"
	"net/http"
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
// Hijack returns the connection with the relay's smaller buffers.
// Unwrap lets http.ResponseController reach the original.
type smallBufWriter struct{ http.ResponseWriter }

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
	br := bufio.NewReaderSize(conn, connReadBuf)
	if n := brw.Reader.Buffered(); n > 0 {
		// The early bytes go into the new reader's buffer, where
		// coder/websocket looks for them (it re-wraps the connection
		// behind what is buffered). The one Read of the bytes.Reader
		// fills it without touching the connection.
		early, _ := brw.Reader.Peek(n)
		br = bufio.NewReaderSize(io.MultiReader(bytes.NewReader(bytes.Clone(early)), conn), max(connReadBuf, n))
		if _, err := br.Peek(n); err != nil {
			conn.Close()
			return nil, nil, err
		}
	}
	return conn, bufio.NewReadWriter(br, bufio.NewWriterSize(conn, connWriteBuf)), nil
}
