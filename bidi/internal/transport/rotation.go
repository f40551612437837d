package transport

// streamRing is the writer's rotation: a FIFO of the streams whose body
// may have bytes ready, each at most once (Stream.queued says whether a
// stream is in it or in cc.ready). push, front and pop cost O(1) however
// many streams a connection carries, and a pass that stops early (the
// connection window used up) leaves the order as it was. Owned by the
// connection's writer goroutine.
type streamRing struct {
	buf  []*Stream // len is a power of two, or zero
	head int       // index of the front
	n    int       // streams in the ring
}

func (r *streamRing) len() int { return r.n }

// push adds s at the back, growing the ring when it is full.
func (r *streamRing) push(s *Stream) {
	if r.n == len(r.buf) {
		r.grow()
	}
	r.buf[(r.head+r.n)&(len(r.buf)-1)] = s
	r.n++
}

// front returns the stream at the front; the ring must not be empty.
func (r *streamRing) front() *Stream { return r.buf[r.head] }

// pop removes the stream at the front; the ring must not be empty. The
// ring keeps its slots: it never holds more than the streams its
// connection carries at once (8 bytes each), and a busy connection
// drains and refills it every round.
func (r *streamRing) pop() {
	r.buf[r.head] = nil
	r.head = (r.head + 1) & (len(r.buf) - 1)
	r.n--
}

const minRing = 16

func (r *streamRing) grow() { r.resize(max(minRing, 2*len(r.buf))) }

// resize moves the streams, front first, into a ring of size slots.
func (r *streamRing) resize(size int) {
	buf := make([]*Stream, size)
	for i := range r.n {
		buf[i] = r.buf[(r.head+i)&(len(r.buf)-1)]
	}
	r.buf, r.head = buf, 0
}
