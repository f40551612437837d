package eventstream

import "hash/crc32"

// crcTable is the CRC-32 (IEEE 802.3) table used for both checksums of a
// message.
var crcTable = crc32.MakeTable(crc32.IEEE)

// preemptChunk is the most bytes hashed or checksummed in one call over
// a large buffer. The SHA-256 and CRC-32 routines are assembly that the
// scheduler cannot preempt; between calls (function entries) it can, so
// that a garbage collection waiting to scan the goroutine's stack is not
// held up, spinning, for the whole of a 16 MiB message.
const preemptChunk = 256 << 10

// crcUpdate returns crc updated with b, preemptChunk bytes per call.
func crcUpdate(crc uint32, b []byte) uint32 {
	for len(b) > preemptChunk {
		crc = crc32.Update(crc, crcTable, b[:preemptChunk])
		b = b[preemptChunk:]
	}
	return crc32.Update(crc, crcTable, b)
}

// crcPoly is the reflected IEEE polynomial.
const crcPoly = 0xedb88320

// crcX2N[k] is x^(2^k) modulo the CRC polynomial, in the reflected
// representation.
var crcX2N = func() (t [32]uint32) {
	p := uint32(1) << 30 // x^1
	t[0] = p
	for k := 1; k < len(t); k++ {
		p = crcMulModP(p, p)
		t[k] = p
	}
	return t
}()

// crcMulModP returns a*b modulo the CRC polynomial (reflected bit order:
// the most significant bit is x^0). It runs in constant time, without
// branches.
func crcMulModP(a, b uint32) uint32 {
	var p uint32
	for range 32 {
		p ^= b & -(a >> 31)
		a <<= 1
		b = b>>1 ^ crcPoly&-(b&1)
	}
	return p
}

// crcCombine returns the CRC-32 of the concatenation A||B given crcA, the
// CRC-32 of A, crcB, the CRC-32 of B, and the length of B, in a time that
// grows with the number of bits of lenB rather than with lenB. It lets the
// signer compute an envelope's checksum without a second pass over the
// inner message it already checksummed.
func crcCombine(crcA, crcB uint32, lenB int) uint32 {
	// Shifting crcA by lenB zero bytes multiplies it by x^(8*lenB).
	p := uint32(1) << 31 // x^0
	for k, n := 3, uint(lenB); n != 0; k, n = k+1, n>>1 {
		if n&1 != 0 {
			p = crcMulModP(crcX2N[k&31], p)
		}
	}
	return crcMulModP(p, crcA) ^ crcB
}
