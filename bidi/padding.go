package bidi

import (
	"context"
	"crypto/rand"
	"io"
	"math/bits"
	mathrand "math/rand/v2"
	"slices"
	"sync"
)

// maxPadding is the largest number of padding bytes a part can carry: the
// P header is an event-stream string, limited to 32767 bytes.
const maxPadding = 1<<15 - 1

// BucketPadding is the default padding policy. Every part carries at
// least one byte of padding, so the presence of P reveals nothing, and
// the padded size (payload + P) is rounded up to a bucket:
//
//   - up to 1024 bytes, a multiple of 64 (16 sizes);
//   - above, a multiple of 1/8 of the largest power of two not above the
//     size (8 sizes per doubling, at most 12.5% overhead), the step capped
//     at 16 KiB so the padding always fits in P.
//
// An observer learns the bucket of each part, not its exact size.
func BucketPadding(payloadLen int) int {
	if payloadLen < 0 {
		payloadLen = 0
	}
	m := payloadLen + 1 // at least one pad byte
	var step int
	if m <= 1024 {
		step = 64
	} else {
		step = (1 << (bits.Len(uint(m)) - 1)) / 8
		step = min(step, 16<<10)
	}
	return roundUp(m, step) - payloadLen
}

func roundUp(n, step int) int { return (n + step - 1) / step * step }

// padLen asks policy p (nil: BucketPadding) for the padding of a part
// with payloadLen bytes and clamps the answer to [0, maxPadding].
func padLen(p func(payloadLen int) int, payloadLen int) int {
	if p == nil {
		p = BucketPadding
	}
	return min(max(p(payloadLen), 0), maxPadding)
}

// padAlphabet maps random bytes to printable ASCII (the URL-safe base64
// alphabet: 64 symbols, so byte&63 is uniform).
const padAlphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"

// padSource supplies one session's random padding bytes.
type padSource interface {
	// fill fills p with random bytes. ctx, and the end of the session or
	// of its send side, bound any wait for a source shared with other
	// sessions: the wait's end is reported as a *padWaitError.
	fill(ctx context.Context, p []byte) error
}

// pooledPad is the default padding source: ChaCha8 generators (a
// cryptographically strong one each, seeded from crypto/rand) that the
// process's sessions share through padGenerators. A fill takes one for
// its duration, so it never waits on another session; the pool keeps them
// per processor, so the one a Send takes is usually the one the last Send
// on that processor used, still in cache, and an idle session holds none.
type pooledPad struct{}

func (pooledPad) fill(_ context.Context, p []byte) error {
	g := padGenerators.Get().(*mathrand.ChaCha8)
	g.Read(p) // never fails
	padGenerators.Put(g)
	return nil
}

// padGenerators holds pooledPad's generators. One that the pool drops
// (it may, at a collection) is replaced by a freshly seeded one.
var padGenerators = sync.Pool{New: func() any {
	var seed [32]byte
	rand.Read(seed[:]) // never fails: crypto/rand crashes the process instead
	return mathrand.NewChaCha8(seed)
}}

// sharedPad is one session's access to Options.PaddingSource, which the
// client's sessions share: every read of it (at most 4 KiB) holds the
// client's padLock, so reads never overlap. The buffer is owned by the
// holder of the session's send turn.
type sharedPad struct {
	lock *ctxLock
	r    io.Reader
	s    *Session
	buf  [4096]byte
	off  int
	end  int
}

func (sp *sharedPad) fill(ctx context.Context, p []byte) error {
	for len(p) > 0 {
		if sp.off == sp.end {
			if err := sp.lock.Lock(ctx, sp.s.state.over, sp.s.ctx.Done()); err != nil {
				return &padWaitError{err: err}
			}
			n, err := io.ReadAtLeast(sp.r, sp.buf[:], min(len(p), len(sp.buf)))
			sp.lock.Unlock()
			sp.off, sp.end = 0, n
			if err != nil && n < min(len(p), len(sp.buf)) {
				return err
			}
		}
		c := copy(p, sp.buf[sp.off:sp.end])
		sp.off += c
		p = p[c:]
	}
	return nil
}

// padWaitError is a wait for a shared padding source that ended: ctx's
// error, or errLockStopped when the session or its send side ended.
type padWaitError struct{ err error }

func (e *padWaitError) Error() string { return e.err.Error() }

// fillPadding appends n printable padding bytes from src to dst, like
// appendPadding. A failing source is a *paddingSourceError; a wait that
// ended is returned as its cause (ctx's error, or errSendOver).
func fillPadding(ctx context.Context, dst []byte, n int, src padSource) ([]byte, error) {
	if n <= 0 {
		return dst, nil
	}
	l := len(dst)
	dst = slices.Grow(dst, n)[:l+n]
	if err := src.fill(ctx, dst[l:]); err != nil {
		if we, ok := err.(*padWaitError); ok {
			if we.err == errLockStopped {
				return dst[:l], errSendOver
			}
			return dst[:l], we.err
		}
		return dst[:l], &paddingSourceError{err: err}
	}
	for i := l; i < len(dst); i++ {
		dst[i] = padAlphabet[dst[i]&63]
	}
	return dst, nil
}

// paddingSourceError reports a failing Options.PaddingSource.
type paddingSourceError struct{ err error }

func (e *paddingSourceError) Error() string { return "bidi: reading padding source: " + e.err.Error() }
func (e *paddingSourceError) Unwrap() error { return e.err }
