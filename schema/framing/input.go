package framing

import "io"

// minReadSize is the initial size of a [Reader]'s buffer and the smallest
// free space it reads into.
const minReadSize = 16 << 10

// input holds the bytes a framer has not consumed yet. [Reader] fills it
// from an io.Reader and [Decoder] from Write; both drive the same framer
// through next, so the two forms share every framing decision.
type input struct {
	f   framer
	buf []byte // buf[r:] is unconsumed
	r   int
	eof bool
}

func (in *input) init(o Options) {
	in.f.init(o)
	in.buf = in.buf[:0]
	in.r = 0
	in.eof = false
}

// next frames the buffered bytes: with a nil error, in.f.event() is the
// next event; ErrNeedInput asks for more input. The callers build the
// event right in their result, which saves copying it per event.
func (in *input) next() error {
	n, err := in.f.step(in.buf[in.r:], in.eof)
	in.r += n
	return err
}

// makeRoom discards consumed bytes and ensures at least min free bytes.
func (in *input) makeRoom(min int) {
	if in.r == len(in.buf) {
		in.buf, in.r = in.buf[:0], 0
	}
	if cap(in.buf)-len(in.buf) >= min {
		return
	}
	if in.r > 0 {
		n := copy(in.buf, in.buf[in.r:])
		in.buf, in.r = in.buf[:n], 0
		if cap(in.buf)-n >= min {
			return
		}
	}
	grown := make([]byte, len(in.buf), max(2*cap(in.buf), len(in.buf)+min, minReadSize))
	copy(grown, in.buf)
	in.buf = grown
}

// fill reads once from r into the buffer.
func (in *input) fill(r io.Reader) error {
	in.makeRoom(minReadSize / 4)
	for tries := 0; tries < 100; tries++ {
		n, err := r.Read(in.buf[len(in.buf):cap(in.buf)])
		in.buf = in.buf[:len(in.buf)+n]
		if err == io.EOF {
			in.eof = true
			return nil
		}
		if n > 0 || err != nil {
			return err
		}
	}
	return io.ErrNoProgress
}

// write appends p to the buffer.
func (in *input) write(p []byte) {
	in.makeRoom(len(p))
	in.buf = append(in.buf, p...)
}
