package eventstream

import (
	"encoding/binary"
	"hash/crc32"
	"io"
)

const (
	preludeLen = 12
	// PreludeLen is the length of a message's prelude: total length,
	// header block length and their CRC, 4 bytes each.
	PreludeLen = preludeLen
	// Overhead is the number of bytes a message adds around its headers
	// and payload: the 12-byte prelude and the 4-byte message CRC.
	Overhead = preludeLen + 4

	// DefaultMaxPayloadLen is the largest payload accepted by default:
	// 24 MiB, the limit of the event-stream specification.
	DefaultMaxPayloadLen = 24 << 20
	// DefaultMaxHeadersLen is the largest header block accepted by default:
	// 128 KiB, the limit of the event-stream specification.
	DefaultMaxHeadersLen = 128 << 10
	// DefaultMaxHeaders is the largest number of headers in one message
	// accepted by default: 1024, the limit of aws-c-event-stream.
	DefaultMaxHeaders = 1024
)

// Message is one event-stream message.
type Message struct {
	Headers Headers
	Payload []byte
}

// Reset empties m, keeping its header capacity.
func (m *Message) Reset() {
	m.Headers = m.Headers[:0]
	m.Payload = nil
}

// EncodedLen returns the size of m once encoded, or an error for a header
// that cannot be encoded.
func (m *Message) EncodedLen() (int, error) {
	hl, err := m.Headers.encodedLen()
	if err != nil {
		return 0, err
	}
	return Overhead + hl + len(m.Payload), nil
}

// AppendMessage appends the encoding of m to dst and returns the extended
// buffer. It grows dst at most once. A header that cannot be encoded (an
// empty or over-long name, an over-long value, an unknown type) is a
// [*HeaderError]; a header block or payload above the specification's
// limits is a [*LengthError].
func AppendMessage(dst []byte, m *Message) ([]byte, error) {
	hl, err := m.Headers.encodedLen()
	if err != nil {
		return dst, err
	}
	if hl > DefaultMaxHeadersLen {
		return dst, &LengthError{Err: ErrHeadersTooLarge, Length: int64(hl), Limit: DefaultMaxHeadersLen}
	}
	if len(m.Payload) > DefaultMaxPayloadLen {
		return dst, &LengthError{Err: ErrPayloadTooLarge, Length: int64(len(m.Payload)), Limit: DefaultMaxPayloadLen}
	}
	total := Overhead + hl + len(m.Payload)
	start := len(dst)
	dst = grow(dst, total)[:start+total]
	putMessage(dst[start:], m, hl, nil)
	return dst, nil
}

// FinishMessage completes a message built in place: msg holds PreludeLen
// bytes for the prelude, a header block of headersLen bytes (as
// AppendHeaders encodes it), the payload, and 4 bytes for the message
// CRC. It writes the prelude and both checksums, so that msg is what
// AppendMessage would have produced. Lengths outside the format's limits
// are a [*LengthError], and msg is left as it is.
func FinishMessage(msg []byte, headersLen int) error {
	if headersLen < 0 || len(msg) < Overhead+headersLen {
		return &LengthError{Err: ErrInvalidLength, Length: int64(len(msg)), Limit: int64(Overhead + max(headersLen, 0))}
	}
	if headersLen > DefaultMaxHeadersLen {
		return &LengthError{Err: ErrHeadersTooLarge, Length: int64(headersLen), Limit: DefaultMaxHeadersLen}
	}
	if pl := len(msg) - Overhead - headersLen; pl > DefaultMaxPayloadLen {
		return &LengthError{Err: ErrPayloadTooLarge, Length: int64(pl), Limit: DefaultMaxPayloadLen}
	}
	var pc *preludeCache
	pc.put(msg, len(msg), headersLen)
	binary.BigEndian.PutUint32(msg[len(msg)-4:], crcUpdate(0, msg[:len(msg)-4]))
	return nil
}

// putMessage encodes m into b, which is exactly as long as the encoded
// message, and returns the message CRC. The headers must have been checked
// by encodedLen, which returned hl. pc, when not nil, caches the prelude.
func putMessage(b []byte, m *Message, hl int, pc *preludeCache) uint32 {
	pc.put(b, len(b), hl)
	putHeaders(b[preludeLen:preludeLen+hl], m.Headers)
	copy(b[preludeLen+hl:], m.Payload)
	crc := crcUpdate(0, b[:len(b)-4])
	binary.BigEndian.PutUint32(b[len(b)-4:], crc)
	return crc
}

// preludeCache remembers the last prelude written, so that a stream of
// messages of one size does not checksum the same 8 bytes each time.
type preludeCache struct {
	lens uint64 // total length << 32 | header length
	crc  uint32
	ok   bool
}

// put writes the total length, the header length and the prelude CRC into
// the first 12 bytes of b. A nil cache is allowed.
func (c *preludeCache) put(b []byte, total, headersLen int) {
	_ = b[preludeLen-1]
	binary.BigEndian.PutUint32(b[0:], uint32(total))
	binary.BigEndian.PutUint32(b[4:], uint32(headersLen))
	lens := binary.BigEndian.Uint64(b)
	if c == nil || !c.ok || c.lens != lens {
		crc := crc32.Update(0, crcTable, b[:8])
		if c == nil {
			binary.BigEndian.PutUint32(b[8:], crc)
			return
		}
		c.lens, c.crc, c.ok = lens, crc, true
	}
	binary.BigEndian.PutUint32(b[8:], c.crc)
}

// grow makes room for n more bytes in one step.
func grow(b []byte, n int) []byte {
	if cap(b)-len(b) >= n {
		return b
	}
	nb := make([]byte, len(b), len(b)+n+cap(b)/4)
	copy(nb, b)
	return nb
}

// An Encoder writes messages to an io.Writer, one Write call per message.
// It reuses its buffer and is not safe for concurrent use.
type Encoder struct {
	w   io.Writer
	buf []byte
}

// NewEncoder returns an Encoder writing to w.
func NewEncoder(w io.Writer) *Encoder { return &Encoder{w: w} }

// Encode writes the encoding of m.
func (e *Encoder) Encode(m *Message) error {
	b, err := AppendMessage(e.buf[:0], m)
	if err != nil {
		return err
	}
	e.buf = b
	_, err = e.w.Write(b)
	return err
}

// Reset makes e write to w, keeping its buffer.
func (e *Encoder) Reset(w io.Writer) { e.w = w }
