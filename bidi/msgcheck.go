package bidi

import (
	"fmt"
	"unicode/utf8"
)

// checkType rejects a DataType outside the two the service knows: it
// would otherwise go out as BINARY, silently.
func checkType(field string, t DataType) error {
	if t > DataTypeUTF8 {
		return &InputValidationError{Field: field, Message: fmt.Sprintf("unknown DataType %d: use DataTypeBinary or DataTypeUTF8", t)}
	}
	return nil
}

// invalidUTF8 is the error for a UTF8 message whose bytes are not UTF-8
// (the container would receive an invalid WebSocket text frame).
func invalidUTF8(field string) error {
	return &InputValidationError{Field: field, Message: "a DataTypeUTF8 message holds invalid UTF-8; send it as DataTypeBinary or fix the text"}
}

// utf8Stream validates UTF-8 text that arrives in fragments, which may
// split a character: the carry holds the unfinished character's first
// bytes (at most 3) until the next fragment.
type utf8Stream struct {
	carry [utf8.UTFMax]byte
	n     int
}

// check validates the next fragment; final says it ends the text. On
// failure the stream is left as it was, so the fragment can be fixed and
// sent again.
func (u *utf8Stream) check(data []byte, final bool) bool {
	next := *u
	if next.n > 0 {
		var buf [2 * utf8.UTFMax]byte
		k := copy(buf[:], next.carry[:next.n])
		k += copy(buf[k:], data[:min(len(data), utf8.UTFMax-next.n)])
		if !utf8.FullRune(buf[:k]) {
			if final {
				return false
			}
			next.n = copy(next.carry[:], buf[:k])
			*u = next
			return true
		}
		r, size := utf8.DecodeRune(buf[:k])
		if r == utf8.RuneError && size <= 1 {
			return false
		}
		data = data[size-next.n:]
		next.n = 0
	}
	tail := 0
	for i := len(data) - 1; i >= 0 && i >= len(data)-(utf8.UTFMax-1); i-- {
		if utf8.RuneStart(data[i]) {
			if !utf8.FullRune(data[i:]) {
				tail = len(data) - i
			}
			break
		}
	}
	if final && tail > 0 {
		return false
	}
	if !utf8.Valid(data[:len(data)-tail]) {
		return false
	}
	next.n = copy(next.carry[:], data[len(data)-tail:])
	*u = next
	return true
}
