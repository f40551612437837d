package transport

import "sync"

// recvChunkSize is the size of the pooled chunks that hold received
// bytes. A stream holds chunks only while bytes wait to be read, so an
// idle stream holds none, whatever the peer's frame size.
const recvChunkSize = 16 << 10

var chunkPool = sync.Pool{New: func() any { return new([recvChunkSize]byte) }}

// recvBuffer is a FIFO of received bytes in pooled chunks.
type recvBuffer struct {
	chunks []*[recvChunkSize]byte
	r      int // read offset in chunks[0]
	w      int // write offset in the last chunk
	n      int // bytes buffered
}

func (b *recvBuffer) len() int { return b.n }

func (b *recvBuffer) write(p []byte) {
	for len(p) > 0 {
		if len(b.chunks) == 0 || b.w == recvChunkSize {
			b.chunks = append(b.chunks, chunkPool.Get().(*[recvChunkSize]byte))
			b.w = 0
		}
		c := copy(b.chunks[len(b.chunks)-1][b.w:], p)
		b.w += c
		b.n += c
		p = p[c:]
	}
}

func (b *recvBuffer) read(p []byte) int {
	n := 0
	for n < len(p) && b.n > 0 {
		end := recvChunkSize
		if len(b.chunks) == 1 {
			end = b.w
		}
		c := copy(p[n:], b.chunks[0][b.r:end])
		n += c
		b.r += c
		b.n -= c
		if b.r == end {
			if len(b.chunks) == 1 {
				// Empty: give the last chunk back too.
				chunkPool.Put(b.chunks[0])
				b.chunks[0] = nil
				b.chunks = b.chunks[:0]
				b.r, b.w = 0, 0
				break
			}
			chunkPool.Put(b.chunks[0])
			b.chunks[0] = nil
			b.chunks = b.chunks[1:]
			b.r = 0
		}
	}
	if b.n == 0 && cap(b.chunks) > 8 {
		b.chunks = nil
	}
	return n
}

// release drops the buffered bytes.
func (b *recvBuffer) release() {
	for i, c := range b.chunks {
		chunkPool.Put(c)
		b.chunks[i] = nil
	}
	b.chunks = nil
	b.r, b.w, b.n = 0, 0, 0
}
