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
			for i := range 3000 {
				ms := int64(base + (g*7+i)%5)
				var h [sha256.Size]byte
				dateHeaderHash(ms, &h)
				if h != want(ms) {
					t.Errorf("ms %d: wrong :date hash", ms)
					return
				}
			}
		})
	}
	wg.Wait()

	var h [sha256.Size]byte
	dateHeaderHash(base+100, &h)
	if !sharedDate.get(base+100, &h) || h != want(base+100) {
		t.Fatal("the latest millisecond's hash is not served from the shared entry")
	}
	if sharedDate.get(base+101, &h) {
		t.Fatal("the shared entry served another millisecond")
	}
}
