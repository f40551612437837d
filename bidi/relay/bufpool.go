package relay

import (
	"io"
	"math/bits"
	"sync"
	"unsafe"
)

// Client messages are read into pooled buffers, one size class per power
// of two from minBuf to maxBuf bytes, and the buffer goes back to its
// pool once the model's Send has copied it (or the message was dropped or
// refused). Larger messages get a buffer of their own, which the garbage
// collector takes back.
const (
	minBufShift = 10 // 1 KiB: a 20 ms frame of 16 kHz PCM (640 B) fits
	maxBufShift = 16 // 64 KiB
	minBuf      = 1 << minBufShift
	maxBuf      = 1 << maxBufShift
)

// bufPools[i] holds buffers of minBuf<<i bytes, each as a pointer to its
// first byte (a pointer goes into an interface without an allocation, a
// slice does not).
var bufPools [maxBufShift - minBufShift + 1]sync.Pool

// bufClass returns the index of the smallest class holding n bytes, or -1
// when n is over maxBuf.
func bufClass(n int) int {
	if n <= minBuf {
		return 0
	}
	if n > maxBuf {
		return -1
	}
	return bits.Len(uint(n-1)) - minBufShift
}

// getBuf returns an empty buffer with room for at least n bytes.
func getBuf(n int) []byte {
	i := bufClass(n)
	if i < 0 {
		return make([]byte, 0, n)
	}
	if p, ok := bufPools[i].Get().(*byte); ok {
		return unsafe.Slice(p, minBuf<<i)[:0]
	}
	return make([]byte, 0, minBuf<<i)
}

// putBuf gives b back to its class's pool; a buffer whose capacity is not
// exactly a class size (not one of getBuf's, or a sub-slice of one) is
// left to the garbage collector.
func putBuf(b []byte) {
	c := cap(b)
	i := bufClass(c)
	if i < 0 || minBuf<<i != c {
		return
	}
	bufPools[i].Put(unsafe.SliceData(b))
}

// MessageBuffer allocates received messages' memory from the relay's
// pools of buffers. Set it as the bidi.Options.MessageBuffer of the
// Client whose sessions a [Handler] relays: the relay then reuses each
// reply's buffer once the reply is written to the client, copied into
// its queue or dropped, so that replies make no garbage: the collector
// runs less often, and the heap stays nearer what the calls hold (see
// "Sizing a server" in the package's documentation). A message over 64
// KiB gets a buffer of its own, which the garbage collector takes back.
//
// The Client may open other sessions too: the messages a program
// receives itself are its own, and their buffers, never given back, go
// to the garbage collector as usual.
func MessageBuffer(n int) []byte { return getBuf(n) }

// readAll reads r to its end into a pooled buffer (see getBuf), growing
// it through the size classes. On error the buffer is given back.
func readAll(r io.Reader) ([]byte, error) {
	b := getBuf(0)
	for {
		if len(b) == cap(b) {
			nb := getBuf(2 * cap(b))
			nb = append(nb, b...)
			putBuf(b)
			b = nb
		}
		n, err := r.Read(b[len(b):cap(b)])
		b = b[:len(b)+n]
		if err == io.EOF {
			return b, nil
		}
		if err != nil {
			putBuf(b)
			return nil, err
		}
	}
}
