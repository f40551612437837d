package eventstream

import (
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"io"
	"math"
	"sync"
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

	// DiscardPayloadsOver, when positive, makes Decode skip rather than
	// buffer the payload of a message larger than it (up to
	// MaxPayloadLen): the payload streams through a small buffer and its
	// CRC is still verified, the message is returned with its headers and
	// a nil Payload, and [Decoder.Discarded] reports the payload's length.
	// It lets a reader bound what it holds in memory below what the
	// format allows without losing its place in the stream.
	DiscardPayloadsOver int
}

// A Decoder reads messages from an io.Reader.
//
// The decoder owns one buffer that it grows, as bytes arrive, to the
// largest message seen (within its limits) and reuses; it reads ahead into
// that buffer, so it may consume bytes past the message it returns. The
// *Message returned by Decode, its headers and its payload alias that
// buffer: they are valid until the next call to Decode, Shrink or Reset.
// When the reader is a [Peeker] and its next message lies whole in the
// bytes it lends, the message is decoded there instead, without a copy,
// and aliases the reader's bytes for as long. A Decoder is not safe for
// concurrent use.
type Decoder struct {
	r      io.Reader
	pk     Peeker // r, if it lends its buffered bytes
	lent   int    // bytes of pk the last message was decoded from, not yet discarded
	opts   DecoderOptions
	buf    []byte // buffered input: buf[start:end] is unread
	start  int
	end    int
	msg    Message
	names  nameCache
	offset int64 // stream offset of buf[start]
	err    error // sticky read error

	hdr       []byte // header block of a message whose payload is discarded
	skip      skipState
	discarded int     // payload length discarded by the last Decode
	reuse     int     // 1 + size class of the buffer last given back, or 0
	pooled    *[]byte // bufferPools handle of buf, if buf is pooled
}

// Peeker is a reader that can lend the bytes it has buffered. A
// [Decoder] reading from one decodes a message that lies whole in the lent
// bytes in place, instead of copying it into a buffer of its own first,
// and discards it from the reader once the caller is done with it: at the
// next Decode or Shrink (Reset leaves the old reader as it is). A message
// that the lent bytes cut off is read with Read as from any reader.
type Peeker interface {
	io.Reader
	// Peek returns a prefix of the unread bytes without consuming them.
	// They must stay unchanged and in place until Discard, Read, or the
	// next Peek. With no bytes it may return ErrWouldBlock, which Decode
	// returns at once; otherwise, and for any other error, the decoder
	// calls Read.
	Peek() ([]byte, error)
	// Discard consumes the first n bytes, n being at most the length of
	// the last Peek's result.
	Discard(n int)
}

// NewDecoder returns a Decoder reading from r. Options adjust its limits.
func NewDecoder(r io.Reader, optFns ...func(*DecoderOptions)) *Decoder {
	d := &Decoder{r: r}
	d.pk, _ = r.(Peeker)
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
	d.pk, _ = r.(Peeker)
	d.lent = 0
	d.start, d.end = 0, 0
	d.offset = 0
	d.err = nil
	d.skip = skipState{}
	d.msg.Reset()
}

// Offset returns the number of bytes of the stream consumed by decoded
// messages so far.
func (d *Decoder) Offset() int64 { return d.offset }

// Decode reads the next message. It returns io.EOF when the stream ends
// cleanly between messages, and an error wrapping io.ErrUnexpectedEOF when
// it ends inside one. Limit violations, CRC mismatches and malformed
// headers are returned as typed errors; after such an error the stream is
// no longer framed and the decoder should be discarded or Reset. When the
// reader returns [ErrWouldBlock], so does Decode, and the next call
// resumes where this one stopped.
func (d *Decoder) Decode() (*Message, error) {
	d.discarded = 0
	d.discardLent()
	if d.skip.active {
		return d.skipPayload()
	}
	if d.pk != nil && d.start == d.end && d.err == nil {
		if m, ok, err := d.decodeLent(); ok || err != nil {
			return m, err
		}
	}
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
	if lim := d.opts.DiscardPayloadsOver; lim > 0 && total-Overhead-headersLen > lim {
		return d.decodeDiscarding(total, headersLen)
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

// decodeLent decodes the next message in place in the bytes the reader
// lends, if they hold all of it; ok is false when they do not, or when its
// payload is to be discarded, and the caller reads it into the buffer
// instead. The limits and checks are those of the buffered path.
func (d *Decoder) decodeLent() (m *Message, ok bool, err error) {
	b, err := d.pk.Peek()
	if len(b) == 0 && err == ErrWouldBlock {
		return nil, false, err
	}
	if len(b) < preludeLen {
		return nil, false, nil
	}
	total, headersLen, err := checkPrelude(b, d.opts)
	if err != nil {
		return nil, false, err
	}
	if len(b) < total {
		return nil, false, nil
	}
	if lim := d.opts.DiscardPayloadsOver; lim > 0 && total-Overhead-headersLen > lim {
		return nil, false, nil
	}
	if err := decodeFrame(b[:total:total], headersLen, d.opts.MaxHeaders, &d.msg, &d.names); err != nil {
		return nil, false, err
	}
	d.lent = total
	d.offset += int64(total)
	return &d.msg, true, nil
}

// discardLent consumes the bytes of the last message decoded in place:
// the caller is done with it.
func (d *Decoder) discardLent() {
	if d.lent > 0 {
		d.pk.Discard(d.lent)
		d.lent = 0
	}
}

// truncated wraps a read error met inside a message (ErrWouldBlock is
// returned as is: the message is only incomplete so far).
func (d *Decoder) truncated(err error) error {
	if err == ErrWouldBlock {
		return err
	}
	if err == io.EOF || err == io.ErrUnexpectedEOF {
		return fmt.Errorf("eventstream: stream ended inside a message at offset %d (%d of its bytes read): %w", d.offset, d.end-d.start, io.ErrUnexpectedEOF)
	}
	if d.end > d.start {
		return fmt.Errorf("eventstream: stream failed inside a message at offset %d (%d of its bytes read): %w: %w", d.offset, d.end-d.start, io.ErrUnexpectedEOF, err)
	}
	return err
}

// Shrink gives the decoder's buffer back to a shared pool if it holds no
// unread input, so that a decoder waiting between messages holds no buffer
// and no reference to what it decoded, whatever it carried before; a
// message decoded in a [Peeker]'s lent bytes is discarded from the reader.
// The Message last returned by Decode is invalid after it. A decoder
// reading from a blocking source gives a large buffer back itself before
// it waits; one reading from a non-blocking source (see [ErrWouldBlock])
// may call Shrink once the caller is done with the message.
func (d *Decoder) Shrink() {
	d.discardLent()
	if d.start != d.end {
		return
	}
	d.dropMessage()
	if len(d.buf) > keepBufferLen {
		d.reuse, _ = bufferClass(len(d.buf))
		d.reuse++
	}
	d.putBuffer()
	d.buf, d.start, d.end = nil, 0, 0
}

// dropMessage drops every reference the last message holds to the buffer
// or to the reader's lent bytes (its payload and its header values,
// those beyond the slice's length included), so that neither outlives
// its pool while the decoder waits.
func (d *Decoder) dropMessage() {
	if h := d.msg.Headers; cap(h) <= maxKeptHeaders {
		clear(h[:cap(h)])
		d.msg.Headers = h[:0]
	} else {
		d.msg.Headers = nil
	}
	d.msg.Payload = nil
}

// maxKeptHeaders is the largest header slice an idle decoder keeps for
// reuse; a larger one (a message with many headers) is dropped rather
// than cleared after every message.
const maxKeptHeaders = 32

// Discarded returns the length of the payload the last Decode skipped
// (see DecoderOptions.DiscardPayloadsOver), or 0.
func (d *Decoder) Discarded() int { return d.discarded }

// skipState is the progress through a message whose payload is being
// discarded, kept across Decode calls that return ErrWouldBlock.
type skipState struct {
	active bool
	total  int    // the message's length
	remain int    // payload bytes still to skip (the CRC follows)
	crc    uint32 // running CRC of the bytes consumed so far
}

// decodeDiscarding starts a message whose payload is skipped: the prelude
// and headers are buffered, then the payload and message CRC stream
// through the buffer, checksummed (skipPayload).
func (d *Decoder) decodeDiscarding(total, headersLen int) (*Message, error) {
	head := preludeLen + headersLen
	if err := d.fill(head); err != nil {
		return nil, d.truncated(err)
	}
	crc := crc32.Update(0, crcTable, d.buf[d.start:d.start+head])
	d.hdr = append(d.hdr[:0], d.buf[d.start+preludeLen:d.start+head]...)
	d.start += head
	d.skip = skipState{active: true, total: total, remain: total - head - 4, crc: crc}
	return d.skipPayload()
}

// skipPayload streams the rest of a discarded message's payload through
// the buffer and checks the message CRC.
func (d *Decoder) skipPayload() (*Message, error) {
	sk := &d.skip
	consumed := func() int64 { return int64(sk.total - 4 - sk.remain) }
	for sk.remain > 0 {
		if d.end == d.start {
			if err := d.fill(1); err != nil {
				return nil, d.skipFailed(err, consumed())
			}
		}
		n := min(sk.remain, d.end-d.start)
		sk.crc = crc32.Update(sk.crc, crcTable, d.buf[d.start:d.start+n])
		d.start += n
		sk.remain -= n
	}
	if err := d.fill(4); err != nil {
		return nil, d.skipFailed(err, consumed())
	}
	want := binary.BigEndian.Uint32(d.buf[d.start:])
	d.start += 4
	d.offset += int64(sk.total)
	crc, total := sk.crc, sk.total
	*sk = skipState{}
	if crc != want {
		return nil, &ChecksumError{Checksum: MessageChecksum, Want: want, Got: crc}
	}
	h, err := decodeHeaders(d.hdr, d.msg.Headers, d.opts.MaxHeaders, &d.names)
	d.msg.Headers = h
	if err != nil {
		return nil, err
	}
	d.msg.Payload = nil
	d.discarded = total - preludeLen - len(d.hdr) - 4
	return &d.msg, nil
}

// skipFailed ends a discarded message cut by err after consumed of its
// bytes; with ErrWouldBlock it is only paused.
func (d *Decoder) skipFailed(err error, consumed int64) error {
	if err == ErrWouldBlock {
		return err
	}
	d.skip = skipState{}
	d.offset += consumed
	return d.truncated(err)
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
	// Nothing buffered and a large buffer: give it back before a read
	// that may block for long, and read into a small one, so that a
	// decoder waiting in Read holds minBufferLen, whatever it carried
	// before. A large message later takes a pooled buffer of the same
	// class again (grow).
	if d.start == d.end && len(d.buf) > keepBufferLen {
		d.Shrink()
	}
	for empty := 0; d.end-d.start < n; {
		if d.end == len(d.buf) {
			d.grow(n)
		}
		m, err := d.r.Read(d.buf[d.end:])
		d.end += m
		if err == ErrWouldBlock {
			if d.end-d.start >= n {
				return nil
			}
			return err
		}
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
	if d.reuse > 0 && len(d.buf) <= keepBufferLen {
		// The decoder gave a large buffer back while it waited: take
		// one of that class again if the pool has it, rather than
		// growing step by step from scratch.
		if b, ok := bufferPools[d.reuse-1].Get().(*[]byte); ok {
			d.end = copy(*b, d.buf[d.start:d.end])
			d.start = 0
			d.buf, d.pooled = *b, b
			return
		}
	}
	nb, np := getBuffer(size)
	d.end = copy(nb, d.buf[d.start:d.end])
	d.start = 0
	d.putBuffer()
	d.buf, d.pooled = nb, np
}

// keepBufferLen is the largest buffer a decoder keeps while it waits in a
// blocking Read; larger ones go back to bufferPools first. Shrink gives
// back any buffer.
const keepBufferLen = minBufferLen

// bufferPools holds decoder buffers larger than keepBufferLen by size
// class (a power of two, 8 KiB to 64 MiB, plus classSlack), so that
// decoders carrying large messages reuse buffers instead of each keeping
// its own.
var bufferPools [14]sync.Pool // classSize(i)

// classSlack is what a size class holds beyond its power of two: room for
// the prelude, headers and CRC of a message whose payload is a power of
// two (a 64 KiB or 16 MiB part), which would otherwise take a buffer of
// twice the size.
const classSlack = 4 << 10

// classSize returns the size of the buffers of class i.
func classSize(i int) int { return (8<<10)<<i + classSlack }

func bufferClass(size int) (int, bool) {
	for i := range bufferPools {
		if size <= classSize(i) {
			return i, true
		}
	}
	return 0, false
}

// smallBuffers holds the minBufferLen buffers that decoders read small
// messages into, so that an idle decoder holds none.
var smallBuffers = sync.Pool{New: func() any { b := make([]byte, minBufferLen); return &b }}

// getBuffer returns a buffer of at least size bytes and, for a pooled
// size class, the pool's handle for it.
func getBuffer(size int) ([]byte, *[]byte) {
	if size <= minBufferLen {
		p := smallBuffers.Get().(*[]byte)
		return *p, p
	}
	i, ok := bufferClass(size)
	if !ok {
		return make([]byte, size), nil
	}
	if p, ok := bufferPools[i].Get().(*[]byte); ok {
		return *p, p
	}
	p := new([]byte)
	*p = make([]byte, classSize(i))
	return *p, p
}

// putBuffer gives d's pooled buffer, if any, back to its pool.
func (d *Decoder) putBuffer() {
	if d.pooled == nil {
		return
	}
	if len(*d.pooled) == minBufferLen {
		smallBuffers.Put(d.pooled)
	} else {
		i, _ := bufferClass(len(*d.pooled))
		bufferPools[i].Put(d.pooled)
	}
	d.pooled = nil
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
	if got := crcUpdate(0, frame[:total-4]); got != want {
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
