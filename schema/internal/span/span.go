// Package span finds, eight bytes at a time, the runs of a JSON string
// that a scanner can step over without looking at each byte. It serves
// the stream scanner of schema/framing and the chunk decoder of schema.
package span

import (
	"encoding/binary"
	"math/bits"
	"unicode/utf8"
)

const (
	lo = 0x0101010101010101
	hi = 0x8080808080808080
)

// Plain returns the length of the prefix of b made of plain string bytes:
// bytes other than '"', '\\' and the control characters below 0x20, and,
// when asciiOnly is set, below 0x80 (so that a caller that needs to
// validate UTF-8 learns where the first non-ASCII byte is).
func Plain(b []byte, asciiOnly bool) int {
	var high uint64 // the bytes whose high bit stops the span
	if asciiOnly {
		high = hi
	}
	i := 0
	for ; i+8 <= len(b); i += 8 {
		x := binary.LittleEndian.Uint64(b[i:])
		q := x ^ (lo * '"')
		e := x ^ (lo * '\\')
		// The high bit of each byte of m is set for a quote, a backslash
		// or a control character (the lowest such byte is exact; the
		// borrow may mark bytes above it), and for a non-ASCII byte when
		// high is set.
		m := ((q - lo) &^ q) | ((e - lo) &^ e) | ((x - lo*0x20) &^ x) | x&high
		if m &= hi; m != 0 {
			return i + bits.TrailingZeros64(m)/8
		}
	}
	for ; i < len(b); i++ {
		c := b[i]
		if c < 0x20 || c == '"' || c == '\\' || asciiOnly && c >= utf8.RuneSelf {
			break
		}
	}
	return i
}
