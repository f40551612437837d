// Package bufpool recycles large byte buffers between the owners that use
// them in bursts (a session's send queue, a connection's write batch), so
// that an idle owner keeps only a small buffer whatever it carried, and
// busy ones reuse pooled buffers instead of allocating.
package bufpool

import "sync"

// A Pool recycles buffers larger than Keep bytes. A buffer travels with
// its handle (the *[]byte the pool stores), so that recycling allocates
// nothing. A Pool is safe for concurrent use and must not be copied after
// first use.
type Pool struct {
	// Keep is the largest buffer an owner keeps between uses; Release
	// pools only larger ones.
	Keep int

	p sync.Pool
}

// Get returns an empty pooled buffer and its handle, or nil, nil when the
// pool has none.
func (bp *Pool) Get() ([]byte, *[]byte) {
	if h, ok := bp.p.Get().(*[]byte); ok {
		return (*h)[:0], h
	}
	return nil, nil
}

// Release gives *buf back to the pool if it is empty and larger than
// Keep, and then clears *buf and *handle; otherwise it does nothing.
// handle is *buf's handle from Get, or nil for a buffer the owner
// allocated.
func (bp *Pool) Release(buf *[]byte, handle **[]byte) {
	if len(*buf) != 0 || cap(*buf) <= bp.Keep {
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

// Grow returns buf with room for n more bytes. A buffer that must grow at
// least doubles, so that one filled by many small appends, faster than
// its owner empties it, leaves about as much behind as garbage as it ends
// up holding. append's steps of about 1.25× past 256 bytes leave three
// times that: a crowd of 1,000 relayed calls, each queueing eight
// 640-byte frames at once, allocated 18 MiB growing its send queues that
// way, and the collector let the heap grow by as much.
func Grow(buf []byte, n int) []byte {
	if cap(buf)-len(buf) >= n {
		return buf
	}
	grown := make([]byte, len(buf), max(2*cap(buf), len(buf)+n))
	copy(grown, buf)
	return grown
}
