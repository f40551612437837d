package bidi

import (
	"bytes"
	"errors"
	"iter"
	"math/rand/v2"
	"testing"
)

// fragments returns an iterator over the parts of m (see splitter).
func fragments(m Message, maxPart int) iter.Seq[Part] {
	return func(yield func(Part) bool) {
		s := newSplitter(m, maxPart)
		for p, ok := s.next(); ok; p, ok = s.next() {
			if !yield(p) {
				return
			}
		}
	}
}

// partCount returns how many parts a message of n bytes takes with parts
// of at most maxPart bytes (at least one).
func partCount(n, maxPart int) int {
	if maxPart <= 0 {
		maxPart = defaultMaxPartSize
	}
	if n <= maxPart {
		return 1
	}
	return (n + maxPart - 1) / maxPart
}

func TestFragmentSplitter(t *testing.T) {
	const max = 10
	cases := []struct {
		n     int
		parts int
	}{
		{0, 1}, {1, 1}, {9, 1}, {10, 1}, {11, 2}, {20, 2}, {21, 3}, {35, 4},
	}
	for _, tc := range cases {
		data := make([]byte, tc.n)
		for i := range data {
			data[i] = byte(i)
		}
		m := Message{Data: data, Type: DataTypeUTF8}
		var got []Part
		s := newSplitter(m, max)
		for p, ok := s.next(); ok; p, ok = s.next() {
			got = append(got, p)
		}
		if len(got) != tc.parts || partCount(tc.n, max) != tc.parts {
			t.Fatalf("n=%d: %d parts (partCount %d), want %d", tc.n, len(got), partCount(tc.n, max), tc.parts)
		}
		var joined []byte
		off := 0
		for i, p := range got {
			last := i == len(got)-1
			if p.Complete != last {
				t.Errorf("n=%d part %d: Complete=%v", tc.n, i, p.Complete)
			}
			if p.Type != DataTypeUTF8 {
				t.Errorf("n=%d part %d: Type=%v", tc.n, i, p.Type)
			}
			if len(p.Data) > max || (!last && len(p.Data) != max) {
				t.Errorf("n=%d part %d: %d bytes", tc.n, i, len(p.Data))
			}
			if len(p.Data) > 0 && &p.Data[0] != &data[off] {
				t.Errorf("n=%d part %d: data copied, want aliasing", tc.n, i)
			}
			if cap(p.Data) > len(p.Data) && !last {
				t.Errorf("n=%d part %d: capacity extends into the next part", tc.n, i)
			}
			off += len(p.Data)
			joined = append(joined, p.Data...)
		}
		if !bytes.Equal(joined, data) {
			t.Errorf("n=%d: parts do not join to the message", tc.n)
		}
		if _, ok := s.next(); ok {
			t.Errorf("n=%d: next after COMPLETE", tc.n)
		}
	}
	// maxPart <= 0 means the default.
	big := make([]byte, defaultMaxPartSize+1)
	if n := partCount(len(big), 0); n != 2 {
		t.Errorf("partCount default = %d", n)
	}
	count := 0
	for range fragments(Binary(big), 0) {
		count++
	}
	if count != 2 {
		t.Errorf("fragments default = %d parts", count)
	}
	// Early break stops the iterator.
	count = 0
	for range fragments(Binary(make([]byte, 100)), 10) {
		count++
		if count == 3 {
			break
		}
	}
	if count != 3 {
		t.Errorf("early break: %d", count)
	}
}

func TestReassemblerSingleAndMulti(t *testing.T) {
	r := newReassembler(100)
	src := []byte("hello")
	m, done, err := r.add(Part{Data: src, Type: DataTypeUTF8, Complete: true})
	if err != nil || !done || string(m.Data) != "hello" || m.Type != DataTypeUTF8 {
		t.Fatalf("single part: %q %v %v", m.Data, done, err)
	}
	src[0] = 'J' // the decoder reuses its buffer
	if string(m.Data) != "hello" {
		t.Fatal("message aliases the part's data")
	}

	// Empty message: one COMPLETE part with no payload.
	m, done, err = r.add(Part{Complete: true})
	if err != nil || !done || m.Data == nil || len(m.Data) != 0 || m.Type != DataTypeBinary {
		t.Fatalf("empty message: %#v %v %v", m, done, err)
	}

	// Multi-part, including empty parts, and a DataType change mid-message
	// (the first part's type wins).
	parts := []Part{
		{Data: []byte("ab"), Type: DataTypeUTF8},
		{Data: nil, Type: DataTypeUTF8},
		{Data: []byte("cd"), Type: DataTypeBinary},
		{Data: []byte("e"), Type: DataTypeBinary, Complete: true},
	}
	for i, p := range parts {
		buf := append([]byte(nil), p.Data...)
		p.Data = buf
		m, done, err = r.add(p)
		clear(buf) // simulate buffer reuse by the decoder
		if err != nil {
			t.Fatal(err)
		}
		if done != (i == len(parts)-1) {
			t.Fatalf("part %d: done=%v", i, done)
		}
		if i < len(parts)-1 && !r.partial() {
			t.Fatalf("part %d: not partial", i)
		}
	}
	if string(m.Data) != "abcde" || m.Type != DataTypeUTF8 {
		t.Fatalf("multi-part = %q %v", m.Data, m.Type)
	}
	if r.partial() || r.buffered() != 0 {
		t.Fatal("state not cleared after COMPLETE")
	}
}

func TestReassemblerTooLarge(t *testing.T) {
	const limit = 10
	type step struct {
		data     string
		complete bool
		want     string // delivered message, "" for none
		tooLarge bool
	}
	cases := []struct {
		name  string
		steps []step
	}{
		{"single part at limit", []step{{"0123456789", true, "0123456789", false}}},
		{"single part over limit", []step{{"0123456789A", true, "", true}, {"ok", true, "ok", false}}},
		{"multi at limit", []step{{"01234", false, "", false}, {"56789", true, "0123456789", false}}},
		{"multi over limit then skip", []step{
			{"01234", false, "", false},
			{"567890", false, "", true}, // crosses the bound: error once
			{"more", false, "", false},  // discarded silently
			{"end", true, "", false},    // end of the oversized message
			{"next", true, "next", false},
		}},
		{"over limit on the COMPLETE part", []step{
			{"0123456789", false, "", false},
			{"x", true, "", true},
			{"after", true, "after", false},
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := newReassembler(limit)
			for i, s := range tc.steps {
				m, done, err := r.add(Part{Data: []byte(s.data), Complete: s.complete})
				if s.tooLarge {
					var mtl *MessageTooLargeError
					if !errors.As(err, &mtl) || mtl.Limit != limit {
						t.Fatalf("step %d: err = %v, want *MessageTooLargeError{%d}", i, err, limit)
					}
				} else if err != nil {
					t.Fatalf("step %d: unexpected error %v", i, err)
				}
				if done != (s.want != "") || string(m.Data) != s.want {
					t.Fatalf("step %d: got %q done=%v, want %q", i, m.Data, done, s.want)
				}
				if cap(r.buf) > limit {
					t.Fatalf("step %d: buffer capacity %d exceeds the bound", i, cap(r.buf))
				}
			}
			if r.partial() {
				t.Fatal("partial at end of case")
			}
		})
	}
}

func TestReassemblerReset(t *testing.T) {
	r := newReassembler(0)
	if r.max != defaultMaxMessageSize {
		t.Fatalf("default max = %d", r.max)
	}
	r.add(Part{Data: []byte("abc")})
	if !r.partial() || r.buffered() != 3 {
		t.Fatal("expected a message in progress")
	}
	r.reset()
	if r.partial() || r.buffered() != 0 {
		t.Fatal("reset did not clear")
	}
	m, done, _ := r.add(Part{Data: []byte("z"), Complete: true})
	if !done || string(m.Data) != "z" {
		t.Fatalf("after reset: %q", m.Data)
	}
}

func TestReassemblerRoundTrip(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	r := newReassembler(1 << 20)
	for i := 0; i < 300; i++ {
		n := rng.IntN(5000)
		if i%50 == 0 {
			n = 300<<10 + rng.IntN(1000) // exercise the large-buffer paths
		}
		data := make([]byte, n)
		for j := range data {
			data[j] = byte(rng.Uint32())
		}
		typ := DataType(rng.IntN(2))
		maxPart := 1 + rng.IntN(1500)
		if n > 100000 {
			maxPart = 64 << 10
		}
		var got Message
		var delivered int
		for p := range fragments(Message{Data: data, Type: typ}, maxPart) {
			m, done, err := r.add(p)
			if err != nil {
				t.Fatal(err)
			}
			if done {
				got = m
				delivered++
			}
		}
		if delivered != 1 || !bytes.Equal(got.Data, data) || got.Type != typ {
			t.Fatalf("message %d (%d bytes, parts of %d): delivered %d, equal %v", i, n, maxPart, delivered, bytes.Equal(got.Data, data))
		}
		if cap(r.buf) > reassemblyRetain {
			t.Fatalf("message %d: retained a %d-byte buffer", i, cap(r.buf))
		}
	}
}

func TestReassemblerAllocs(t *testing.T) {
	r := newReassembler(1 << 20)
	payload := make([]byte, 256)
	single := Part{Data: payload, Complete: true}
	if a := testing.AllocsPerRun(1000, func() { r.add(single) }); a != 1 {
		t.Errorf("single-part message: %.1f allocations, want 1 (the owned copy)", a)
	}
	first := Part{Data: payload[:100]}
	last := Part{Data: payload[100:], Complete: true}
	r.add(first)
	r.add(last) // warm the reusable buffer
	if a := testing.AllocsPerRun(1000, func() { r.add(first); r.add(last) }); a != 1 {
		t.Errorf("two-part message: %.1f allocations, want 1", a)
	}
}

func TestReassemblerLargeHandOff(t *testing.T) {
	r := newReassembler(1 << 20)
	data := make([]byte, 8*(64<<10))
	for i := range data {
		data[i] = byte(i * 7)
	}
	var got Message
	for p := range fragments(Binary(data), 64<<10) {
		m, done, err := r.add(p)
		if err != nil {
			t.Fatal(err)
		}
		if done {
			got = m
		}
	}
	if !bytes.Equal(got.Data, data) {
		t.Fatal("large message corrupted")
	}
	if r.buf != nil {
		t.Fatal("large buffer handed over but still referenced")
	}
	// The next message must not write into the handed-over memory.
	r.add(Part{Data: []byte("zzzz")})
	r.add(Part{Data: []byte("z"), Complete: true})
	if !bytes.Equal(got.Data, data) {
		t.Fatal("handed-over message modified by the next message")
	}
}

// TestPartialCut: PARTIAL parts carry one byte less than MaxPartSize when
// that saves padding (a 64 KiB part would pad to 72 KiB under
// BucketPadding, 65,535 bytes pad to 64 KiB), and MaxPartSize otherwise;
// a message of MaxPartSize bytes is still one part.
func TestPartialCut(t *testing.T) {
	for _, tc := range []struct {
		max  int
		p    func(int) int
		want int
	}{
		{defaultMaxPartSize, nil, defaultMaxPartSize - 1},
		{defaultMaxPartSize, BucketPadding, defaultMaxPartSize - 1},
		{1 << 10, nil, 1<<10 - 1},
		{8, nil, 8}, // 8 and 7 bytes both pad to 64: keep 8
		{1000, nil, 1000},
		{defaultMaxPartSize, noPadding, defaultMaxPartSize},
		{defaultMaxPartSize, fixedBucket(4096), defaultMaxPartSize - 1},
		{1, nil, 1},
	} {
		if got := partialCut(tc.max, tc.p); got != tc.want {
			t.Errorf("partialCut(%d, %T) = %d, want %d", tc.max, tc.p, got, tc.want)
		}
		cut := partialCut(tc.max, tc.p)
		wire := func(n int) int { return n + padLen(tc.p, n) }
		if wire(cut)*tc.max > wire(tc.max)*cut {
			t.Errorf("max %d: cut %d costs more wire per payload byte", tc.max, cut)
		}
	}
	const max = defaultMaxPartSize
	for _, n := range []int{max, max + 1, 3*max + 7} {
		s := newSplitter(Message{Data: make([]byte, n)}, max).withCut(partialCut(max, nil))
		var sizes []int
		for p, ok := s.next(); ok; p, ok = s.next() {
			sizes = append(sizes, len(p.Data))
			if !p.Complete && len(p.Data) != max-1 || p.Complete && len(p.Data) > max {
				t.Fatalf("n=%d: part of %d bytes (complete %v)", n, len(p.Data), p.Complete)
			}
		}
		if n == max && len(sizes) != 1 {
			t.Fatalf("a message of MaxPartSize bytes took %d parts", len(sizes))
		}
	}
}

// TestReassemblerSizeHint: a large message starts in a buffer the size of
// the last multi-part message, so that messages of one size are gathered
// with one allocation each and handed over whole; a smaller or larger
// message than predicted is still delivered exactly, in a buffer no
// larger than the limit and no larger than itself (beyond a quarter).
func TestReassemblerSizeHint(t *testing.T) {
	const limit = 1 << 20
	r := newReassembler(limit)
	gather := func(data []byte) Message {
		t.Helper()
		var got Message
		n := 0
		for p := range fragments(Binary(data), 64<<10) {
			m, done, err := r.add(p)
			if err != nil {
				t.Fatal(err)
			}
			if done {
				got = m
				n++
			}
			if cap(r.buf) > limit {
				t.Fatalf("buffer capacity %d exceeds the limit", cap(r.buf))
			}
		}
		if n != 1 || !bytes.Equal(got.Data, data) {
			t.Fatalf("%d bytes: delivered %d, equal %v", len(data), n, bytes.Equal(got.Data, data))
		}
		if c := cap(got.Data); c-len(got.Data) > len(got.Data)/4 {
			t.Fatalf("%d bytes delivered in a buffer of %d", len(got.Data), c)
		}
		return got
	}
	msg := func(n int, seed byte) []byte {
		b := make([]byte, n)
		for i := range b {
			b[i] = byte(i) ^ seed
		}
		return b
	}
	big := msg(600<<10, 1)
	first := gather(big)
	// Same size again: one allocation, the gathered buffer handed over.
	if a := testing.AllocsPerRun(20, func() { gather(big) }); a != 1 {
		t.Errorf("message of the last one's size: %.1f allocations, want 1", a)
	}
	if !bytes.Equal(first.Data, big) {
		t.Fatal("a handed-over message was written to by a later one")
	}
	// Smaller than predicted: delivered exact, and the prediction follows.
	small := gather(msg(300<<10+7, 2))
	if cap(small.Data) != len(small.Data) {
		t.Errorf("smaller message: cap %d, len %d", cap(small.Data), len(small.Data))
	}
	if r.last != 300<<10+7 {
		t.Errorf("prediction after the smaller message = %d", r.last)
	}
	// Larger than predicted, up to the limit: grown, capped at the limit.
	gather(msg(limit, 3))
	gather(msg(limit, 4))
	// Over the limit: refused, and the accumulated bytes stay bounded.
	var tooLarge int
	for p := range fragments(Binary(msg(limit+1, 5)), 64<<10) {
		if _, _, err := r.add(p); err != nil {
			tooLarge++
		}
		if r.buffered() > limit || cap(r.buf) > limit {
			t.Fatalf("buffered %d (cap %d) over the limit", r.buffered(), cap(r.buf))
		}
	}
	if tooLarge != 1 {
		t.Fatalf("oversized message reported %d times", tooLarge)
	}
	gather(msg(100<<10, 6))
}

// BenchmarkReassemble16MiB gathers 16 MiB messages from 64 KiB parts
// (the default MaxPartSize), each delivered message dropped as a caller
// would: "sized" starts each message in a buffer of the last one's size,
// "doubling" forgets that size first, so that the buffer doubles from
// 4 KiB as it did before.
func BenchmarkReassemble16MiB(b *testing.B) {
	const size = 16 << 20
	data := make([]byte, size)
	for i := range data {
		data[i] = byte(i)
	}
	var parts []Part
	for p := range fragments(Binary(data), 64<<10) {
		parts = append(parts, p)
	}
	for _, mode := range []string{"sized", "doubling"} {
		b.Run(mode, func(b *testing.B) {
			r := newReassembler(size)
			b.SetBytes(size)
			b.ReportAllocs()
			for b.Loop() {
				if mode == "doubling" {
					r.last = 0
				}
				for _, p := range parts {
					m, done, err := r.add(p)
					if err != nil || done != p.Complete || (done && len(m.Data) != size) {
						b.Fatalf("done %v, %d bytes, %v", done, len(m.Data), err)
					}
				}
			}
		})
	}
}

// FuzzReassembler feeds a reassembler a sequence of parts (each input
// byte after the first two: a length in its low 7 bits, COMPLETE in its
// high bit; the first two bytes pick the limit and a scale for lengths)
// and checks it against a plain model: every message within the limit
// is delivered whole and in order, an oversized one is reported once and
// dropped up to its COMPLETE part, and the bytes held never exceed the
// limit, whatever sizes the last messages had.
func FuzzReassembler(f *testing.F) {
	f.Add([]byte{10, 0, 3, 4, 0x85})
	f.Add([]byte{0, 1, 0x10, 0x10, 0x90, 0x7f, 0xff, 0x01, 0x81})
	f.Add([]byte{63, 1, 0x7f, 0x7f, 0xff, 0x7f, 0x7f, 0xff, 0x10, 0x90, 0x7f, 0x7f, 0x7f, 0xff})
	f.Fuzz(func(t *testing.T, in []byte) {
		if len(in) < 2 {
			return
		}
		scale := 1
		if in[1]&1 != 0 {
			scale = 4096
		}
		limit := (int(in[0])%64 + 1) * scale * 4
		r := newReassembler(limit)
		var cur []byte    // the model's message in progress
		skipping := false // the model is dropping an oversized message
		next := byte(0)
		for i, op := range in[2:] {
			n, complete := int(op&0x7f)*scale, op&0x80 != 0
			data := make([]byte, n)
			for j := range data {
				data[j] = next
				next++
			}
			m, done, err := r.add(Part{Data: data, Complete: complete})
			clear(data) // the decoder reuses its buffer
			switch {
			case skipping:
				if err != nil || done {
					t.Fatalf("op %d: while dropping: done %v err %v", i, done, err)
				}
				skipping = !complete
			case len(cur)+n > limit:
				var mtl *MessageTooLargeError
				if !errors.As(err, &mtl) || done {
					t.Fatalf("op %d: %d bytes over the limit %d: done %v err %v", i, len(cur)+n, limit, done, err)
				}
				cur, skipping = nil, !complete
			default:
				if err != nil {
					t.Fatalf("op %d: %v", i, err)
				}
				for j := range n {
					cur = append(cur, byte(int(next)-n+j))
				}
				if done != complete {
					t.Fatalf("op %d: done %v, want %v", i, done, complete)
				}
				if done {
					if !bytes.Equal(m.Data, cur) {
						t.Fatalf("op %d: delivered %d bytes, not the %d sent", i, len(m.Data), len(cur))
					}
					cur = nil
				}
			}
			if r.buffered() > limit || cap(r.buf) > limit {
				t.Fatalf("op %d: holds %d bytes in %d, limit %d", i, r.buffered(), cap(r.buf), limit)
			}
		}
	})
}
