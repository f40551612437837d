package framing

import (
	"encoding/binary"
	"math/bits"
)

// maxDepth matches the nesting limit of encoding/json, so that every value
// the scanner accepts can also be unmarshalled.
const maxDepth = 10000

// scanState is where the scanner is inside a JSON value.
type scanState uint8

const (
	scIdle       scanState = iota // between top-level values
	scValue                       // a value must follow (after ':' or ',' in an array)
	scValueOrEnd                  // after '[': a value or ']'
	scKeyOrEnd                    // after '{': a key or '}'
	scKey                         // after ',' in an object: a key
	scColon                       // after a key: ':'
	scCommaOrEnd                  // after a value inside a container
	scString                      // inside a string
	scEscape                      // after '\' inside a string
	scUnicode                     // inside the four hex digits of \uXXXX
	scMinus                       // after a leading '-'
	scZero                        // after a leading '0'
	scInt                         // in the integer digits
	scDot                         // after '.'
	scFrac                        // in the fraction digits
	scExp                         // after 'e' or 'E'
	scExpSign                     // after the exponent sign
	scExpDigits                   // in the exponent digits
	scLiteral                     // inside true, false or null
)

// scanResult says why [scanner.scan] stopped.
type scanResult uint8

const (
	scanMore    scanResult = iota // input exhausted, value not complete
	scanDone                      // a top-level value just completed
	scanLineEnd                   // stopped at '\r' or '\n' outside a string
	scanError                     // syntax error at the returned position
)

// scanner is an incremental, validating JSON scanner. It never copies or
// allocates per byte: it only tells its caller where a value ends, so the
// caller can frame values in input that arrives in arbitrary fragments.
//
// It accepts exactly the grammar of RFC 8259 with the restrictions of
// encoding/json (no raw control characters in strings, nesting at most
// maxDepth), and stops at line ends outside strings so that line-oriented
// framings can interleave their own syntax.
type scanner struct {
	stack   []byte // open containers: '{' or '['
	st      scanState
	inKey   bool   // the current string is an object key
	hexLeft uint8  // hex digits still expected in \uXXXX
	lit     string // rest of the literal being matched
	msg     string // description of the last error
}

// reset forgets any value in progress, keeping allocated memory.
func (s *scanner) reset() {
	s.stack = s.stack[:0]
	s.st = scIdle
	s.inKey = false
	s.lit = ""
}

// inValue reports whether a value has started and not yet completed.
func (s *scanner) inValue() bool { return s.st != scIdle }

// endOfInput is called when no more input will come. It reports whether
// the value in progress (a top-level number) is complete there.
func (s *scanner) endOfInput() bool {
	if len(s.stack) == 0 {
		switch s.st {
		case scZero, scInt, scFrac, scExpDigits:
			s.st = scIdle
			return true
		}
	}
	return false
}

// Byte classes for the string fast path: plain bytes need no attention.
var strPlain = func() (t [256]bool) {
	for c := 0x20; c < 256; c++ {
		t[c] = c != '"' && c != '\\'
	}
	return t
}()

const (
	swarLo = 0x0101010101010101
	swarHi = 0x8080808080808080
)

// stringSpan returns the length of the prefix of b made of plain string
// bytes (not '"', '\\' or a control character), eight bytes at a time.
func stringSpan(b []byte) int {
	i := 0
	for ; i+8 <= len(b); i += 8 {
		x := binary.LittleEndian.Uint64(b[i:])
		q := x ^ (swarLo * '"')
		e := x ^ (swarLo * '\\')
		m := ((q - swarLo) &^ q) | ((e - swarLo) &^ e) | ((x - swarLo*0x20) &^ x)
		if m &= swarHi; m != 0 {
			return i + bits.TrailingZeros64(m)/8
		}
	}
	for i < len(b) && strPlain[b[i]] {
		i++
	}
	return i
}

// scan advances over b. It returns how many bytes it consumed and why it
// stopped: at scanDone the value's last byte is b[n-1] (a top-level number
// ends at the delimiter b[n], which is not consumed); at scanLineEnd and
// scanError, b[n] is the line end or the offending byte.
func (s *scanner) scan(b []byte) (n int, res scanResult) {
	st := s.st
	i := 0
	for i < len(b) {
		c := b[i]
		switch st {
		case scString:
			i += stringSpan(b[i:])
			if i == len(b) {
				s.st = st
				return i, scanMore
			}
			switch c = b[i]; c {
			case '"':
				i++
				if s.inKey {
					s.inKey = false
					st = scColon
					continue
				}
				if st = s.afterValue(); st == scIdle {
					s.st = st
					return i, scanDone
				}
			case '\\':
				i++
				st = scEscape
			default:
				s.st = st
				return i, s.fail("control character in string")
			}

		case scCommaOrEnd:
			switch c {
			case ',':
				i++
				if s.stack[len(s.stack)-1] == '{' {
					st = scKey
				} else {
					st = scValue
				}
			case '}', ']':
				if s.stack[len(s.stack)-1] != openerOf(c) {
					s.st = st
					return i, s.fail("mismatched '" + string(c) + "'")
				}
				i++
				s.stack = s.stack[:len(s.stack)-1]
				if st = s.afterValue(); st == scIdle {
					s.st = st
					return i, scanDone
				}
			case ' ', '\t':
				i++
			case '\n', '\r':
				s.st = st
				return i, scanLineEnd
			default:
				s.st = st
				return i, s.fail("expected ',' or end of container")
			}

		case scColon:
			switch c {
			case ':':
				i++
				st = scValue
			case ' ', '\t':
				i++
			case '\n', '\r':
				s.st = st
				return i, scanLineEnd
			default:
				s.st = st
				return i, s.fail("expected ':' after object key")
			}

		case scKeyOrEnd, scKey:
			switch c {
			case '"':
				i++
				s.inKey = true
				st = scString
			case '}':
				if st == scKey {
					s.st = st
					return i, s.fail("expected object key after ','")
				}
				i++
				s.stack = s.stack[:len(s.stack)-1]
				if st = s.afterValue(); st == scIdle {
					s.st = st
					return i, scanDone
				}
			case ' ', '\t':
				i++
			case '\n', '\r':
				s.st = st
				return i, scanLineEnd
			default:
				s.st = st
				return i, s.fail("expected object key")
			}

		case scIdle, scValue, scValueOrEnd:
			switch c {
			case '"':
				i++
				st = scString
			case '{', '[':
				if len(s.stack) >= maxDepth {
					s.st = st
					return i, s.fail("nesting too deep")
				}
				i++
				s.stack = append(s.stack, c)
				if c == '{' {
					st = scKeyOrEnd
				} else {
					st = scValueOrEnd
				}
			case ']':
				if st != scValueOrEnd {
					s.st = st
					return i, s.fail("unexpected ']'")
				}
				i++
				s.stack = s.stack[:len(s.stack)-1]
				if st = s.afterValue(); st == scIdle {
					s.st = st
					return i, scanDone
				}
			case '-':
				i++
				st = scMinus
			case '0':
				i++
				st = scZero
			case '1', '2', '3', '4', '5', '6', '7', '8', '9':
				i++
				st = scInt
			case 't', 'f', 'n':
				lit := literalFor(c)
				if len(b)-i >= len(lit) && string(b[i:i+len(lit)]) == lit {
					i += len(lit)
					if st = s.afterValue(); st == scIdle {
						s.st = st
						return i, scanDone
					}
					continue
				}
				i++
				s.lit = lit[1:]
				st = scLiteral
			case ' ', '\t':
				i++
			case '\n', '\r':
				s.st = st
				return i, scanLineEnd
			default:
				s.st = st
				return i, s.fail("invalid character " + quoteByte(c) + " looking for beginning of value")
			}

		case scEscape:
			switch c {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				i++
				st = scString
			case 'u':
				i++
				s.hexLeft = 4
				st = scUnicode
			default:
				s.st = st
				return i, s.fail("invalid escape " + quoteByte(c) + " in string")
			}

		case scUnicode:
			if !isHex(c) {
				s.st = st
				return i, s.fail("invalid character " + quoteByte(c) + " in \\u escape")
			}
			i++
			if s.hexLeft--; s.hexLeft == 0 {
				st = scString
			}

		case scLiteral:
			if c != s.lit[0] {
				s.st = st
				return i, s.fail("invalid character " + quoteByte(c) + " in literal")
			}
			i++
			if s.lit = s.lit[1:]; s.lit == "" {
				if st = s.afterValue(); st == scIdle {
					s.st = st
					return i, scanDone
				}
			}

		case scMinus:
			switch {
			case c == '0':
				i++
				st = scZero
			case '1' <= c && c <= '9':
				i++
				st = scInt
			default:
				s.st = st
				return i, s.fail("expected digit after '-'")
			}

		case scInt, scFrac, scExpDigits:
			for i < len(b) && '0' <= b[i] && b[i] <= '9' {
				i++
			}
			if i == len(b) {
				s.st = st
				return i, scanMore
			}
			c = b[i]
			if st == scInt && c == '.' {
				i++
				st = scDot
				continue
			}
			if st != scExpDigits && (c == 'e' || c == 'E') {
				i++
				st = scExp
				continue
			}
			if st = s.afterValue(); st == scIdle {
				s.st = st
				return i, scanDone
			}

		case scZero:
			switch c {
			case '.':
				i++
				st = scDot
			case 'e', 'E':
				i++
				st = scExp
			default:
				if st = s.afterValue(); st == scIdle {
					s.st = st
					return i, scanDone
				}
			}

		case scDot:
			if c < '0' || c > '9' {
				s.st = st
				return i, s.fail("expected digit after decimal point")
			}
			i++
			st = scFrac

		case scExp:
			switch {
			case c == '+' || c == '-':
				i++
				st = scExpSign
			case '0' <= c && c <= '9':
				i++
				st = scExpDigits
			default:
				s.st = st
				return i, s.fail("expected digit in exponent")
			}

		case scExpSign:
			if c < '0' || c > '9' {
				s.st = st
				return i, s.fail("expected digit in exponent")
			}
			i++
			st = scExpDigits
		}
	}
	s.st = st
	return i, scanMore
}

// afterValue returns the state that follows a completed value.
func (s *scanner) afterValue() scanState {
	if len(s.stack) == 0 {
		return scIdle
	}
	return scCommaOrEnd
}

func (s *scanner) fail(msg string) scanResult {
	s.msg = msg
	return scanError
}

func openerOf(c byte) byte {
	if c == '}' {
		return '{'
	}
	return '['
}

func literalFor(c byte) string {
	switch c {
	case 't':
		return "true"
	case 'f':
		return "false"
	}
	return "null"
}

func isHex(c byte) bool {
	return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F'
}

// quoteByte formats c for an error message.
func quoteByte(c byte) string {
	if c >= 0x20 && c < 0x7f {
		if c == '\'' {
			return `'\''`
		}
		return "'" + string(c) + "'"
	}
	const hex = "0123456789abcdef"
	return `'\x` + string(hex[c>>4]) + string(hex[c&0xf]) + "'"
}
