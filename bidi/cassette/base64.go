package cassette

import (
	"encoding/base64"
	"encoding/binary"
	"slices"
)

// b64Pairs maps every 12-bit value to its two standard base64 digits,
// so that appendBase64 looks up two entries per 3 bytes instead of four.
var b64Pairs = func() (t [4096][2]byte) {
	const alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"
	for v := range t {
		t[v] = [2]byte{alphabet[v>>6], alphabet[v&63]}
	}
	return t
}()

// appendBase64 appends the standard base64 encoding (with padding) of
// src to dst: what base64.StdEncoding.AppendEncode appends, faster.
func appendBase64(dst, src []byte) []byte {
	n := base64.StdEncoding.EncodedLen(len(src))
	dst = slices.Grow(dst, n)
	out := dst[len(dst) : len(dst)+n]
	i, j := 0, 0
	for ; i+8 <= len(src); i, j = i+6, j+8 { // 6 bytes in, 8 digits out; 8 bytes readable
		v := binary.BigEndian.Uint64(src[i:])
		a, b := &b64Pairs[v>>52], &b64Pairs[v>>40&0xfff]
		c, d := &b64Pairs[v>>28&0xfff], &b64Pairs[v>>16&0xfff]
		out[j], out[j+1], out[j+2], out[j+3] = a[0], a[1], b[0], b[1]
		out[j+4], out[j+5], out[j+6], out[j+7] = c[0], c[1], d[0], d[1]
	}
	base64.StdEncoding.Encode(out[j:], src[i:])
	return dst[:len(dst)+n]
}
