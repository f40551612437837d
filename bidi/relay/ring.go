package relay

import (
	"encoding/binary"

	"github.com/sagemaker-bidi/sagemaker-bidi/bidi"
)

// recordHeader is the size of a record's header in a ring: the payload's
// length (a little-endian uint32) and its bidi.DataType (one byte).
const recordHeader = 5

// A ring holds a queue's messages back to back in one buffer, each a
// record: its header, then its payload. A record may wrap around the
// buffer's end. The buffer comes from the client buffers' pools (getBuf)
// when the first record arrives, grows through their size classes, and
// goes back once the last record is taken, so an empty ring holds no
// memory and a full one holds its records plus less than its size again
// (the class rounding).
//
// A ring is not safe for concurrent use (its queue's mu guards it).
type ring struct {
	buf  []byte // len(buf) == cap(buf); nil while empty
	head int    // index in buf of the oldest record
	used int    // bytes of the records, headers included
}

// idx returns the index in buf of the byte off bytes after head.
func (r *ring) idx(off int) int {
	i := r.head + off
	if i >= len(r.buf) {
		i -= len(r.buf)
	}
	return i
}

// copyOut copies len(p) bytes from off bytes after head into p.
func (r *ring) copyOut(p []byte, off int) {
	n := copy(p, r.buf[r.idx(off):])
	copy(p[n:], r.buf)
}

// copyIn copies p to off bytes after head.
func (r *ring) copyIn(off int, p []byte) {
	n := copy(r.buf[r.idx(off):], p)
	copy(r.buf, p[n:])
}

// grow makes room for need more bytes: a buffer of the next size class
// (at least twice the current one), holding the records from index 0.
func (r *ring) grow(need int) {
	if len(r.buf)-r.used >= need {
		return
	}
	nb := getBuf(max(r.used+need, 2*len(r.buf)))
	nb = nb[:cap(nb)]
	if r.buf != nil {
		r.copyOut(nb[:r.used], 0)
		putBuf(r.buf)
	}
	r.buf, r.head = nb, 0
}

// put appends a record of m.
func (r *ring) put(m bidi.Message) {
	var h [recordHeader]byte
	binary.LittleEndian.PutUint32(h[:], uint32(len(m.Data)))
	h[4] = byte(m.Type)
	r.grow(recordHeader + len(m.Data))
	r.copyIn(r.used, h[:])
	r.copyIn(r.used+recordHeader, m.Data)
	r.used += recordHeader + len(m.Data)
}

// header returns the payload length and type of the record off bytes
// after head.
func (r *ring) header(off int) (int, bidi.DataType) {
	var h [recordHeader]byte
	r.copyOut(h[:], off)
	return int(binary.LittleEndian.Uint32(h[:])), bidi.DataType(h[4])
}

// pop removes the oldest record and returns its message, whose Data is a
// pooled buffer (see getBuf) the caller owns.
func (r *ring) pop() bidi.Message {
	n, typ := r.header(0)
	data := getBuf(n)[:n]
	r.copyOut(data, recordHeader)
	r.discard(recordHeader + n)
	return bidi.Message{Data: data, Type: typ}
}

// remove removes the record of size bytes (header included) that starts
// off bytes after head, moving the records before it up by its size.
func (r *ring) remove(off, size int) {
	if off > 0 {
		tmp := getBuf(off)[:off]
		r.copyOut(tmp, 0)
		r.copyIn(size, tmp)
		putBuf(tmp)
	}
	r.discard(size)
}

// discard drops the first n bytes, and the buffer once it is empty.
func (r *ring) discard(n int) {
	r.head = r.idx(n)
	r.used -= n
	if r.used == 0 {
		putBuf(r.buf)
		r.buf, r.head = nil, 0
	}
}
