package bidi

import "sync"

// keepBufferBytes is the largest working buffer (send queue, padding) a
// session keeps while it is not using it; larger ones go back to a pool,
// so that an idle session holds a few KiB whatever it carried before, and
// a busy one reuses pooled buffers instead of allocating.
const keepBufferBytes = 4 << 10

// bufPool recycles large byte buffers. A buffer travels with its handle
// (the *[]byte the pool stores), so that recycling allocates nothing.
type bufPool struct{ p sync.Pool }

// get returns an empty buffer and its handle, or nil, nil when the pool
// has none.
func (bp *bufPool) get() ([]byte, *[]byte) {
	if h, ok := bp.p.Get().(*[]byte); ok {
		return (*h)[:0], h
	}
	return nil, nil
}

// release gives *buf back to the pool if it is empty and larger than
// keepBufferBytes, and clears *buf and *handle; otherwise it does nothing.
func (bp *bufPool) release(buf *[]byte, handle **[]byte) {
	if len(*buf) != 0 || cap(*buf) <= keepBufferBytes {
		return
	}
	h := *handle
	if h == nil {
		h = new([]byte)
	}
	*h = (*buf)[:0]
	bp.p.Put(h)
	*buf, *handle = nil, nil
}

var (
	queuePool bufPool // send queues (sendPipe.q)
	padPool   bufPool // padding (Session.pad)
)
