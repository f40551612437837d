package wsframe

import (
	"bufio"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"net"
	"time"
)

// DefaultMaxFrameSize is the frame size limit of a [Conn] when none is
// set: 16 MiB.
const DefaultMaxFrameSize = 16 << 20

// Frame is one frame as read by [Conn.ReadFrame].
type Frame struct {
	Fin     bool
	Opcode  Opcode
	Payload []byte
}

// Conn is the client side of a WebSocket connection, frame by frame.
//
// Concurrency: one goroutine may read (ReadFrame) while another writes
// (WriteFrame); neither method may be called by two goroutines at once.
// Close and the deadline setters may be called at any time, and unblock a
// pending read or write as net.Conn's do.
type Conn struct {
	nc       net.Conn
	br       *bufio.Reader
	bw       *bufio.Writer
	rand     io.Reader
	maxFrame int64

	rbuf     []byte // payload of the last frame read
	rmessage bool   // a fragmented message is being read
	wmessage bool   // a fragmented message is being written
	scratch  []byte // masking buffer
}

// NewConn returns a Conn over nc, an established WebSocket connection on
// the client side; br, if not nil, holds bytes already read from nc (the
// frames a server sent right after its handshake response). maxFrame
// bounds the payload of a frame read (0 means [DefaultMaxFrameSize]);
// masking keys come from rnd (nil means crypto/rand).
func NewConn(nc net.Conn, br *bufio.Reader, maxFrame int64, rnd io.Reader) *Conn {
	if br == nil {
		br = bufio.NewReaderSize(nc, 4096)
	}
	if maxFrame <= 0 {
		maxFrame = DefaultMaxFrameSize
	}
	if rnd == nil {
		rnd = rand.Reader
	}
	return &Conn{
		nc:       nc,
		br:       br,
		bw:       bufio.NewWriterSize(nc, 4096),
		rand:     rnd,
		maxFrame: maxFrame,
		scratch:  make([]byte, 4096),
	}
}

// ReadFrame reads the next frame. Its Payload is unmasked and valid until
// the next call to ReadFrame. The checks listed in the package
// documentation are made before the payload is read: a violation is a
// [*ProtocolError], an oversize frame a [*FrameTooLargeError]. A
// connection that ends between frames returns io.EOF, inside one
// io.ErrUnexpectedEOF. After an error the connection must not be read
// again.
func (c *Conn) ReadFrame() (Frame, error) {
	h, err := ReadHeader(c.br)
	if err != nil {
		return Frame{}, err
	}
	if err := c.checkRead(h); err != nil {
		return Frame{}, err
	}
	n := int(h.Length)
	if cap(c.rbuf) < n {
		c.rbuf = make([]byte, n)
	}
	// Shrink a buffer grown by one large frame once frames are small again.
	if cap(c.rbuf) > 1<<20 && n < 64<<10 {
		c.rbuf = make([]byte, n, 64<<10)
	}
	p := c.rbuf[:n]
	if _, err := io.ReadFull(c.br, p); err != nil {
		return Frame{}, unexpected(err)
	}
	if h.Opcode == OpText || h.Opcode == OpBinary || h.Opcode == OpContinuation {
		c.rmessage = !h.Fin
	}
	return Frame{Fin: h.Fin, Opcode: h.Opcode, Payload: p}, nil
}

// checkRead applies RFC 6455's rules to a header received from a server.
func (c *Conn) checkRead(h Header) error {
	switch {
	case h.Rsv != 0:
		return &ProtocolError{Reason: fmt.Sprintf("reserved bits %03b set without a negotiated extension", h.Rsv)}
	case !h.Opcode.known():
		return &ProtocolError{Reason: "reserved " + h.Opcode.String()}
	case h.Masked:
		return &ProtocolError{Reason: "masked frame from the server"}
	case h.Opcode.IsControl() && !h.Fin:
		return &ProtocolError{Reason: "fragmented " + h.Opcode.String() + " frame"}
	case h.Opcode.IsControl() && h.Length > MaxControlPayload:
		return &ProtocolError{Reason: fmt.Sprintf("%s frame of %d bytes (at most %d)", h.Opcode, h.Length, MaxControlPayload)}
	case h.Opcode == OpContinuation && !c.rmessage:
		return &ProtocolError{Reason: "continuation frame outside a fragmented message"}
	case (h.Opcode == OpText || h.Opcode == OpBinary) && c.rmessage:
		return &ProtocolError{Reason: h.Opcode.String() + " frame inside a fragmented message"}
	case h.Length > c.maxFrame:
		return &FrameTooLargeError{Length: h.Length, Limit: c.maxFrame}
	}
	return nil
}

// errWriteOrder reports a data frame written out of fragmentation order.
var errWriteOrder = errors.New("wsframe: data frame out of fragmentation order")

// WriteFrame writes one masked frame with the given FIN bit, opcode and
// payload, and flushes it. payload is not modified. Control frames must
// have fin set and at most [MaxControlPayload] bytes; data frames must
// follow the fragmentation order (a continuation only inside a message, a
// text or binary frame only outside one). Frames may be written while a
// fragmented message is in progress only if they are control frames.
func (c *Conn) WriteFrame(fin bool, op Opcode, payload []byte) error {
	switch {
	case !op.known():
		return fmt.Errorf("wsframe: cannot write %s", op)
	case op.IsControl() && (!fin || len(payload) > MaxControlPayload):
		return fmt.Errorf("wsframe: %s frame must be final and at most %d bytes", op, MaxControlPayload)
	case op == OpContinuation && !c.wmessage, (op == OpText || op == OpBinary) && c.wmessage:
		return errWriteOrder
	}
	h := Header{Fin: fin, Opcode: op, Masked: true, Length: int64(len(payload))}
	if _, err := io.ReadFull(c.rand, h.Mask[:]); err != nil {
		return fmt.Errorf("wsframe: reading a masking key: %w", err)
	}
	var hb [MaxHeaderLen]byte
	if _, err := c.bw.Write(AppendHeader(hb[:0], h)); err != nil {
		return err
	}
	pos := 0
	for len(payload) > 0 {
		n := copy(c.scratch, payload)
		pos = MaskBytes(h.Mask, pos, c.scratch[:n])
		if _, err := c.bw.Write(c.scratch[:n]); err != nil {
			return err
		}
		payload = payload[n:]
	}
	if err := c.bw.Flush(); err != nil {
		return err
	}
	if !op.IsControl() {
		c.wmessage = !fin
	}
	return nil
}

// SetReadDeadline sets the deadline of reads, as net.Conn's does.
func (c *Conn) SetReadDeadline(t time.Time) error { return c.nc.SetReadDeadline(t) }

// SetWriteDeadline sets the deadline of writes, as net.Conn's does.
func (c *Conn) SetWriteDeadline(t time.Time) error { return c.nc.SetWriteDeadline(t) }

// Close closes the underlying connection at once, without a close
// handshake.
func (c *Conn) Close() error { return c.nc.Close() }

// RemoteAddr returns the server's address.
func (c *Conn) RemoteAddr() net.Addr { return c.nc.RemoteAddr() }
