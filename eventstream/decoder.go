package eventstream

import (
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"io"
	"math"
)

// DecoderOptions holds the limits a [Decoder] enforces. They are checked
// from the prelude, before the rest of a message is read or any buffer is
// grown for it.
type DecoderOptions struct {
	// MaxPayloadLen is the largest payload accepted. Zero means
	// DefaultMaxPayloadLen (24 MiB).
	MaxPayloadLen int
	// MaxHeadersLen is the largest header block accepted. Zero means
	// DefaultMaxHeadersLen (128 KiB).
	MaxHeadersLen int
	// MaxHeaders is the largest number of headers in one message. Zero
	// means DefaultMaxHeaders (1024, the limit of aws-c-event-stream): a
	// 128 KiB header block of tiny headers would otherwise decode into
	// tens of thousands of entries.
	MaxHeaders int
}

// A Decoder reads messages from an io.Reader.
//
// The decoder owns one buffer that it grows, as bytes arrive, to the
// largest message seen (within its limits) and reuses; it reads ahead into
// that buffer, so it may consume bytes past the message it returns. The
// *Message returned by Decode, its headers and its payload alias that
// buffer: they are valid until the next call to Decode or Reset. A Decoder
// is not safe for concurrent use.
type Decoder struct {
	r      io.Reader
	opts   DecoderOptions
	buf    []byte // buffered input: buf[start:end] is unread
	start  int
	end    int
	msg    Message
	names  nameCache
	offset int64 // stream offset of buf[start]
	err    error // sticky read error
}

// NewDecoder returns a Decoder reading from r. Options adjust its limits.
func NewDecoder(r io.Reader, optFns ...func(*DecoderOptions)) *Decoder {
	d := &Decoder{r: r}
	for _, fn := range optFns {
		fn(&d.opts)
	}
	if d.opts.MaxPayloadLen <= 0 {
		d.opts.MaxPayloadLen = DefaultMaxPayloadLen
	}
	if d.opts.MaxHeadersLen <= 0 {
		d.opts.MaxHeadersLen = DefaultMaxHeadersLen
	}
	if d.opts.MaxHeaders <= 0 {
		d.opts.MaxHeaders = DefaultMaxHeaders
	}
	return d
}

// Reset makes d read from r, discarding buffered input and keeping its
// buffers and limits.
func (d *Decoder) Reset(r io.Reader) {
	d.r = r
	d.start, d.end = 0, 0
	d.offset = 0
	d.err = nil
	d.msg.Reset()
}

// Offset returns the number of bytes of the stream consumed by decoded
// messages so far.
func (d *Decoder) Offset() int64 { return d.offset }

// Decode reads the next message. It returns io.EOF when the stream ends
// cleanly between messages, and an error wrapping io.ErrUnexpectedEOF when
// it ends inside one. Limit violations, CRC mismatches and malformed
// headers are returned as typed errors; after such an error the stream is
// no longer framed and the decoder should be discarded or Reset.
func (d *Decoder) Decode() (*Message, error) {
	if err := d.fill(preludeLen); err != nil {
		if err == io.EOF && d.end == d.start {
			return nil, io.EOF
		}
		return nil, d.truncated(err)
	}
	p := d.buf[d.start : d.start+preludeLen]
	total, headersLen, err := checkPrelude(p, d.opts)
	if err != nil {
		return nil, err
	}
	if err := d.fill(total); err != nil {
		return nil, d.truncated(err)
	}
	frame := d.buf[d.start : d.start+total]
	if err := decodeFrame(frame, headersLen, d.opts.MaxHeaders, &d.msg, &d.names); err != nil {
		return nil, err
	}
	d.start += total
	d.offset += int64(total)
	return &d.msg, nil
}

func (d *Decoder) truncated(err error) error {
	if err == io.EOF || err == io.ErrUnexpectedEOF {
		return fmt.Errorf("eventstream: stream ended inside a message at offset %d (%d of its bytes read): %w", d.offset, d.end-d.start, io.ErrUnexpectedEOF)
	}
	return err
}

// minBufferLen is the initial size of a decoder's buffer.
const minBufferLen = 4096

// fill reads until at least n unread bytes are buffered. The buffer grows
// at most twofold per step, as bytes arrive, so a prelude that claims a
// large message costs memory only once its bytes are actually received.
func (d *Decoder) fill(n int) error {
	if d.end-d.start >= n {
		return nil
	}
	if d.err != nil {
		return d.err
	}
	if len(d.buf)-d.start < n && d.start > 0 && len(d.buf) >= n {
		// Slide the unread bytes to the front: the message fits.
		d.end = copy(d.buf, d.buf[d.start:d.end])
		d.start = 0
	}
	for empty := 0; d.end-d.start < n; {
		if d.end == len(d.buf) {
			d.grow(n)
		}
		m, err := d.r.Read(d.buf[d.end:])
		d.end += m
		if err != nil {
			d.err = err
			if d.end-d.start >= n {
				return nil
			}
			return err
		}
		if m > 0 {
			empty = 0
		} else if empty++; empty >= 100 {
			d.err = io.ErrNoProgress
			return d.err
		}
	}
	return nil
}

// grow replaces a full buffer by one up to twice as large (at least
// minBufferLen), but no larger than needed for n unread bytes, holding the
// unread bytes at its front.
func (d *Decoder) grow(n int) {
	size := max(minBufferLen, min(n, 2*len(d.buf)))
	if size <= len(d.buf) {
		// Only possible when the unread bytes do not start at the front.
		d.end = copy(d.buf, d.buf[d.start:d.end])
		d.start = 0
		return
	}
	nb := make([]byte, size)
	d.end = copy(nb, d.buf[d.start:d.end])
	d.start = 0
	d.buf = nb
}

// checkPrelude validates a 12-byte prelude against the limits and returns
// the total and header lengths.
func checkPrelude(p []byte, opts DecoderOptions) (total, headersLen int, err error) {
	t := binary.BigEndian.Uint32(p[0:])
	h := binary.BigEndian.Uint32(p[4:])
	want := binary.BigEndian.Uint32(p[8:])
	if got := crc32.Checksum(p[:8], crcTable); got != want {
		return 0, 0, &ChecksumError{Checksum: PreludeChecksum, Want: want, Got: got}
	}
	if t < Overhead {
		return 0, 0, &LengthError{Err: ErrInvalidLength, Length: int64(t), Limit: Overhead}
	}
	if uint64(t) > math.MaxInt {
		// Only on 32-bit platforms, where the limits would let it pass.
		return 0, 0, &LengthError{Err: ErrPayloadTooLarge, Length: int64(t), Limit: math.MaxInt}
	}
	if uint64(h) > uint64(t)-Overhead {
		return 0, 0, &LengthError{Err: ErrInvalidLength, Length: int64(h), Limit: int64(t) - Overhead}
	}
	if int64(h) > int64(opts.MaxHeadersLen) {
		return 0, 0, &LengthError{Err: ErrHeadersTooLarge, Length: int64(h), Limit: int64(opts.MaxHeadersLen)}
	}
	if pl := int64(t) - Overhead - int64(h); pl > int64(opts.MaxPayloadLen) {
		return 0, 0, &LengthError{Err: ErrPayloadTooLarge, Length: pl, Limit: int64(opts.MaxPayloadLen)}
	}
	return int(t), int(h), nil
}

// decodeFrame checks the message CRC of a whole frame and parses it into m.
func decodeFrame(frame []byte, headersLen, maxHeaders int, m *Message, names *nameCache) error {
	total := len(frame)
	want := binary.BigEndian.Uint32(frame[total-4:])
	if got := crc32.Update(0, crcTable, frame[:total-4]); got != want {
		return &ChecksumError{Checksum: MessageChecksum, Want: want, Got: got}
	}
	h, err := decodeHeaders(frame[preludeLen:preludeLen+headersLen], m.Headers, maxHeaders, names)
	m.Headers = h
	if err != nil {
		return err
	}
	m.Payload = frame[preludeLen+headersLen : total-4 : total-4]
	return nil
}

// Unmarshal decodes the single message that occupies all of b into m,
// using the default limits. m's headers and payload alias b; the capacity
// of m.Headers is reused, so decoding into the same Message again does not
// allocate. It is the way
// to decode the inner message carried by a signed envelope.
func Unmarshal(b []byte, m *Message) error {
	if len(b) < preludeLen {
		return fmt.Errorf("eventstream: %d bytes cannot hold a message: %w", len(b), io.ErrUnexpectedEOF)
	}
	total, headersLen, err := checkPrelude(b[:preludeLen], DecoderOptions{MaxPayloadLen: DefaultMaxPayloadLen, MaxHeadersLen: DefaultMaxHeadersLen})
	if err != nil {
		return err
	}
	if total > len(b) {
		return fmt.Errorf("eventstream: message of %d bytes in a buffer of %d: %w", total, len(b), io.ErrUnexpectedEOF)
	}
	if total < len(b) {
		return &LengthError{Err: ErrInvalidLength, Length: int64(len(b)), Limit: int64(total)}
	}
	return decodeFrame(b, headersLen, DefaultMaxHeaders, m, nil)
}
