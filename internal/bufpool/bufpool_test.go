package bufpool

import "testing"

// TestRelease: only an empty buffer larger than Keep leaves its owner;
// what Get returns is empty, with its handle.
func TestRelease(t *testing.T) {
	p := Pool{Keep: 8}
	small := make([]byte, 0, 8)
	var h *[]byte
	p.Release(&small, &h)
	if small == nil {
		t.Error("a buffer of Keep bytes was taken from its owner")
	}
	full := make([]byte, 1, 64)
	p.Release(&full, &h)
	if full == nil {
		t.Error("a buffer holding bytes was taken from its owner")
	}
	big := make([]byte, 0, 64)
	p.Release(&big, &h)
	if big != nil || h != nil {
		t.Fatal("a large empty buffer stayed with its owner")
	}
	// sync.Pool may drop what it holds (it does at random under the race
	// detector): Get returns the buffer or nothing.
	if b, bh := p.Get(); b != nil && (len(b) != 0 || cap(b) != 64 || bh == nil) {
		t.Errorf("Get = %d/%d bytes, handle %v", len(b), cap(b), bh)
	}
}
