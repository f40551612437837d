// Package jsonspan finds, eight bytes at a time, how far the inside of a
// JSON string runs before a byte that needs attention: the closing quote,
// an escape, or a control character (which JSON forbids unescaped). It
// serves the two JSON readers of schema: the framing's value scanner and
// the chunk decoder.
package jsonspan

import (
	"encoding/binary"
	"math/bits"
)

const (
	ones = 0x0101010101010101 // 0x01 in every byte
	high = 0x8080808080808080 // the high bit of every byte
)

// String returns the length of the prefix of b made of bytes that may
// stand unescaped in a JSON string: not '"', not '\\', not a control
// character below 0x20. Bytes of 0x80 and over count as plain.
func String(b []byte) int {
	return span(b, 0)
}

// ASCII is [String] that also stops at the first byte of 0x80 or over,
// for a reader that takes a fast path only while the text is ASCII.
func ASCII(b []byte) int {
	return span(b, high)
}

// span is String, stopping also at the bytes whose high bit stop has.
func span(b []byte, stop uint64) int {
	i := 0
	for ; i+8 <= len(b); i += 8 {
		x := binary.LittleEndian.Uint64(b[i:])
		q := x ^ (ones * '"')
		e := x ^ (ones * '\\')
		// A byte of q or e is zero where x holds '"' or '\\', and a byte
		// of x below 0x20 borrows when 0x20 is taken from it: each case
		// sets that byte's high bit in m.
		m := ((q - ones) &^ q) | ((e - ones) &^ e) | ((x - ones*0x20) &^ x) | (x & stop)
		if m &= high; m != 0 {
			return i + bits.TrailingZeros64(m)/8
		}
	}
	for i < len(b) && plain(b[i], stop) {
		i++
	}
	return i
}

// plain reports whether c is a byte span passes over.
func plain(c byte, stop uint64) bool {
	return c >= 0x20 && c != '"' && c != '\\' && (c < 0x80 || stop == 0)
}
