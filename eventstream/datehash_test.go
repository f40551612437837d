package eventstream

import (
	"crypto/sha256"
	"sync"
	"testing"
)

// TestSharedDateHash has goroutines hash :date headers of a few
// neighbouring milliseconds at once, as the signers of many streams do:
// every hash must be the one computed directly, whether it came from the
// shared entry or not, and the entry must serve a repeated millisecond.
func TestSharedDateHash(t *testing.T) {
	want := func(ms int64) [sha256.Size]byte {
		var b [dateHeaderLen]byte
		encodeDateHeader(&b, ms)
		return sha256.Sum256(b[:])
	}
	const base = 1_764_000_000_000
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			c := newChain("secret", "us-west-2", "sagemaker", []byte("seed"))
			for i := range 3000 {
				ms := int64(base + (g*7+i)%5)
				var h [sha256.Size]byte
				c.dateHeaderHash(ms, &h)
				if h != want(ms) {
					t.Errorf("ms %d: wrong :date hash", ms)
					return
				}
			}
		})
	}
	wg.Wait()

	c := newChain("secret", "us-west-2", "sagemaker", []byte("seed"))
	var h [sha256.Size]byte
	c.dateHeaderHash(base+100, &h)
	if !sharedDate.get(base+100, &h) || h != want(base+100) {
		t.Fatal("the latest millisecond's hash is not served from the shared entry")
	}
	if sharedDate.get(base+101, &h) {
		t.Fatal("the shared entry served another millisecond")
	}
}

// TestSHA256Of: the chain's hash of a payload, in its outer HMAC state
// and a chunk at a time, is sha256.Sum256's, around and across the chunk
// size; and a signature computed after it is the one computed without
// (compute restores the state it used as scratch).
func TestSHA256Of(t *testing.T) {
	t.Parallel()
	b := make([]byte, 3*preemptChunk+5)
	for i := range b {
		b[i] = byte(i * 7)
	}
	c := newChain("secret", "us-west-2", "sagemaker", []byte("seed"))
	for _, n := range []int{0, 1, 63, 64, 65, preemptChunk - 1, preemptChunk, preemptChunk + 1, len(b)} {
		if got, want := c.sha256Of(b[:n]), sha256.Sum256(b[:n]); got != want {
			t.Fatalf("%d bytes: sha256Of = %x, want %x", n, got, want)
		}
	}
	const ms = 1_764_000_000_123
	payload := sha256.Sum256([]byte("payload"))
	clean := newChain("secret", "us-west-2", "sagemaker", []byte("seed"))
	want := clean.signature(ms, &payload)
	c.sha256Of(b) // scribbles on the outer state
	if got := c.signature(ms, &payload); got != want {
		t.Fatalf("signature after sha256Of = %x, want %x", got, want)
	}
	c.sha256Of(b[:100])
	if got := c.signature(ms, &payload); got != want {
		t.Fatalf("second signature after sha256Of = %x, want %x", got, want)
	}
}
