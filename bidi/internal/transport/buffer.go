package transport

import "sync"

// Received bytes are held in pooled chunks of two sizes: a full chunk
// (recvChunkSize) for a frame's bytes over smallChunkSize, a small one
// for fewer. A stream holds chunks only while bytes wait to be read, so
// an idle stream holds none, whatever the peer's frame size; and a
// stream with one small message waiting (a 20 ms audio frame, say) holds
// 2 KiB, not 16: with thousands of streams whose readers lag a moment,
// that is most of what they buffer.
const (
	recvChunkSize  = 16 << 10
	smallChunkSize = 2 << 10
)

var (
	chunkPool      = sync.Pool{New: func() any { return new([recvChunkSize]byte) }}
	smallChunkPool = sync.Pool{New: func() any { return new([smallChunkSize]byte) }}
)

// getChunk returns a chunk for n more bytes: a small one if they fit.
func getChunk(n int) []byte {
	if n <= smallChunkSize {
		return smallChunkPool.Get().(*[smallChunkSize]byte)[:]
	}
	return chunkPool.Get().(*[recvChunkSize]byte)[:]
}

// putChunk gives a chunk of getChunk's back to its pool.
func putChunk(c []byte) {
	if len(c) == smallChunkSize {
		smallChunkPool.Put((*[smallChunkSize]byte)(c))
	} else {
		chunkPool.Put((*[recvChunkSize]byte)(c))
	}
}

// recvBuffer is a FIFO of received bytes in pooled chunks. Its reader
// may borrow the bytes of the first chunk in place (peek), and consume
// them later (discard); while they are lent, that chunk is not given
// back to the pool by anyone else (release drops it instead).
type recvBuffer struct {
	chunks [][]byte // each a whole chunk of getChunk's
	r      int      // read offset in chunks[0]
	w      int      // write offset in the last chunk
	n      int      // bytes buffered
	lent   bool     // chunks[0][r:] was lent by peek and not consumed since
}

// shiftChunks is the most chunks consume moves down when it gives the
// first one back; behind a longer list it reslices instead.
const shiftChunks = 4

func (b *recvBuffer) len() int { return b.n }

func (b *recvBuffer) write(p []byte) {
	for len(p) > 0 {
		if len(b.chunks) == 0 || b.w == len(b.chunks[len(b.chunks)-1]) {
			b.chunks = append(b.chunks, getChunk(len(p)))
			b.w = 0
		}
		c := copy(b.chunks[len(b.chunks)-1][b.w:], p)
		b.w += c
		b.n += c
		p = p[c:]
	}
}

// firstEnd returns the end of the buffered bytes in chunks[0].
func (b *recvBuffer) firstEnd() int {
	if len(b.chunks) == 1 {
		return b.w
	}
	return len(b.chunks[0])
}

func (b *recvBuffer) read(p []byte) int {
	n := 0
	for n < len(p) && b.n > 0 {
		c := copy(p[n:], b.chunks[0][b.r:b.firstEnd()])
		n += c
		b.consume(c)
	}
	return n
}

// peek lends the buffered bytes of the first chunk, without consuming
// them. The slice's capacity ends with them: the writer may go on filling
// the chunk past them.
func (b *recvBuffer) peek() []byte {
	if b.n == 0 {
		return nil
	}
	b.lent = true
	end := b.firstEnd()
	return b.chunks[0][b.r:end:end]
}

// discard consumes n bytes, at most what peek returned.
func (b *recvBuffer) discard(n int) {
	if b.n == 0 {
		return
	}
	b.consume(min(n, b.firstEnd()-b.r))
}

// consume drops n bytes from the front of chunks[0], giving the chunk
// back to the pool once it is used up.
func (b *recvBuffer) consume(n int) {
	b.lent = false
	b.r += n
	b.n -= n
	if b.r == b.firstEnd() {
		putChunk(b.chunks[0])
		b.chunks[0] = nil
		if len(b.chunks) == 1 {
			// Empty: the last chunk went back too.
			b.chunks = b.chunks[:0]
			b.w = 0
		} else if len(b.chunks) <= shiftChunks {
			// Shift the rest down rather than reslice: the slice keeps
			// its room, so a stream passing a few chunks at a time
			// appends without reallocating it (reslicing left one
			// slot less each time, and about 20 bytes of garbage a
			// reply in the relay's crowd).
			n := copy(b.chunks, b.chunks[1:])
			b.chunks[n] = nil
			b.chunks = b.chunks[:n]
		} else {
			b.chunks = b.chunks[1:] // a long backlog: no copy per chunk
		}
		b.r = 0
	}
	if b.n == 0 && cap(b.chunks) > 8 {
		b.chunks = nil
	}
}

// release drops the buffered bytes.
func (b *recvBuffer) release() {
	for i, c := range b.chunks {
		if i > 0 || !b.lent {
			// A lent chunk may still be read: the garbage collector
			// takes it when its borrower is done.
			putChunk(c)
		}
		b.chunks[i] = nil
	}
	b.chunks = nil
	b.r, b.w, b.n, b.lent = 0, 0, 0, false
}
