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

// TestGrow: Grow keeps the bytes, leaves a buffer with room as it is, and
// at least doubles one without, so that a buffer filled by small appends
// allocates in all less than twice what it ends with (append's 1.25×
// steps allocate about four times as much past 1 KiB).
func TestGrow(t *testing.T) {
	roomy := make([]byte, 3, 16)
	if g := Grow(roomy, 13); &g[:1][0] != &roomy[:1][0] || len(g) != 3 {
		t.Fatal("a buffer with room was reallocated")
	}
	var buf []byte
	allocated := 0
	part := make([]byte, 800)
	for i := range 64 {
		for j := range part {
			part[j] = byte(i)
		}
		before := cap(buf)
		buf = Grow(buf, len(part))
		if cap(buf) != before {
			allocated += cap(buf)
			if before > 0 && cap(buf) < 2*before {
				t.Fatalf("grew %d -> %d bytes: less than double", before, cap(buf))
			}
		}
		if cap(buf)-len(buf) < len(part) {
			t.Fatalf("Grow(%d/%d, %d) left %d bytes of room", len(buf), before, len(part), cap(buf)-len(buf))
		}
		buf = append(buf, part...)
	}
	for i := range 64 {
		if buf[i*800] != byte(i) || buf[i*800+799] != byte(i) {
			t.Fatalf("part %d lost in growing", i)
		}
	}
	if allocated >= 2*cap(buf) {
		t.Errorf("allocated %d bytes in all to end with %d", allocated, cap(buf))
	}
}
