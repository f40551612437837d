package framing

import "github.com/sagemaker-bidi/sagemaker-bidi/schema/internal/jsonspan"

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

// scan advances over b. It returns how many bytes it consumed and why it
// stopped: at scanDone the value's last byte is b[n-1] (a top-level number
// ends at the delimiter b[n], which is not consumed); at scanLineEnd and
// scanError, b[n] is the line end or the offending byte.
//
// Each state has its own step function, which consumes what it can (a run
// of string bytes, digits or blanks at once) and either moves to another
// state or stops the scan. The steps that start a string or a number go
// on into it directly, and the end of an object key goes on, through the
// colon that follows it at once, into the value, which saves most
// dispatches. These calls never nest deeper than four: only the end of a
// key goes on into a value, and the end of a value goes on into nothing.
func (s *scanner) scan(b []byte) (n int, res scanResult) {
	i := 0
	for i < len(b) {
		switch s.st {
		case scString:
			i, res = stepString(s, b, i)
		case scCommaOrEnd:
			i, res = stepCommaOrEnd(s, b, i)
		case scColon:
			i, res = stepColon(s, b, i)
		case scKeyOrEnd, scKey:
			i, res = stepKey(s, b, i)
		case scIdle, scValue, scValueOrEnd:
			i, res = stepValue(s, b, i)
		case scInt, scFrac, scExpDigits:
			i, res = stepDigits(s, b, i)
		default:
			i, res = scanSteps[s.st](s, b, i) // the rarer states
		}
		if res != scanMore {
			return i, res
		}
	}
	return i, scanMore
}

// A scanStep advances from b[i] in the state it is the step of. It
// returns the position reached and scanMore to go on (in the same state
// at the end of b, else in the state it set), or the result that stops
// the scan. scan calls a step with i < len(b); stepValue, stepString and
// stepDigits, which other steps call, also accept i == len(b).
type scanStep func(s *scanner, b []byte, i int) (int, scanResult)

// scanSteps maps each state to its step.
var scanSteps = [...]scanStep{
	scIdle:       stepValue,
	scValue:      stepValue,
	scValueOrEnd: stepValue,
	scKeyOrEnd:   stepKey,
	scKey:        stepKey,
	scColon:      stepColon,
	scCommaOrEnd: stepCommaOrEnd,
	scString:     stepString,
	scEscape:     stepEscape,
	scUnicode:    stepUnicode,
	scMinus:      stepMinus,
	scZero:       stepZero,
	scInt:        stepDigits,
	scDot:        stepDot,
	scFrac:       stepDigits,
	scExp:        stepExp,
	scExpSign:    stepExpSign,
	scExpDigits:  stepDigits,
	scLiteral:    stepLiteral,
}

// stepValue starts a value (scIdle, scValue), or ends an array that may
// be empty (scValueOrEnd).
func stepValue(s *scanner, b []byte, i int) (int, scanResult) {
	if i = skipBlanks(b, i); i == len(b) {
		return i, scanMore
	}
	switch c := b[i]; c {
	case '"':
		s.st = scString
		return stepString(s, b, i+1)
	case '{', '[':
		if len(s.stack) >= maxDepth {
			return s.fail(i, "nesting too deep")
		}
		s.stack = append(s.stack, c)
		s.st = scValueOrEnd
		if c == '{' {
			s.st = scKeyOrEnd
		}
	case ']':
		if s.st != scValueOrEnd {
			return s.fail(i, "unexpected ']'")
		}
		return s.closeContainer(i)
	case '-':
		s.st = scMinus
	case '0':
		s.st = scZero
	case '1', '2', '3', '4', '5', '6', '7', '8', '9':
		s.st = scInt
		return stepDigits(s, b, i+1)
	case 't', 'f', 'n':
		return s.startLiteral(b, i)
	case '\n', '\r':
		return i, scanLineEnd
	default:
		return s.fail(i, "invalid character "+quoteByte(c)+" looking for beginning of value")
	}
	return i + 1, scanMore
}

// stepKey starts an object key (scKey), or ends an object that may be
// empty (scKeyOrEnd).
func stepKey(s *scanner, b []byte, i int) (int, scanResult) {
	if i = skipBlanks(b, i); i == len(b) {
		return i, scanMore
	}
	switch c := b[i]; c {
	case '"':
		return s.startKey(b, i+1)
	case '}':
		if s.st == scKey {
			return s.fail(i, "expected object key after ','")
		}
		return s.closeContainer(i)
	case '\n', '\r':
		return i, scanLineEnd
	}
	return s.fail(i, "expected object key")
}

// stepColon expects the ':' after an object key.
func stepColon(s *scanner, b []byte, i int) (int, scanResult) {
	if i = skipBlanks(b, i); i == len(b) {
		return i, scanMore
	}
	switch b[i] {
	case ':':
		s.st = scValue
		return i + 1, scanMore
	case '\n', '\r':
		return i, scanLineEnd
	}
	return s.fail(i, "expected ':' after object key")
}

// stepCommaOrEnd expects what follows a value inside a container.
func stepCommaOrEnd(s *scanner, b []byte, i int) (int, scanResult) {
	if i = skipBlanks(b, i); i == len(b) {
		return i, scanMore
	}
	switch c := b[i]; c {
	case ',':
		if s.stack[len(s.stack)-1] == '[' {
			s.st = scValue
			return stepValue(s, b, i+1)
		}
		if s.st = scKey; i+1 < len(b) && b[i+1] == '"' {
			return s.startKey(b, i+2)
		}
		return i + 1, scanMore
	case '}', ']':
		if s.stack[len(s.stack)-1] != openerOf(c) {
			return s.fail(i, "mismatched '"+string(c)+"'")
		}
		return s.closeContainer(i)
	case '\n', '\r':
		return i, scanLineEnd
	}
	return s.fail(i, "expected ',' or end of container")
}

// stepString consumes string bytes up to the closing quote or an escape.
func stepString(s *scanner, b []byte, i int) (int, scanResult) {
	if i += jsonspan.String(b[i:]); i == len(b) {
		return i, scanMore
	}
	switch b[i] {
	case '"':
		if s.inKey {
			s.inKey = false
			if i+1 < len(b) && b[i+1] == ':' {
				s.st = scValue
				return stepValue(s, b, i+2)
			}
			s.st = scColon
			return i + 1, scanMore
		}
		return s.endValue(i + 1)
	case '\\':
		s.st = scEscape
		return i + 1, scanMore
	}
	return s.fail(i, "control character in string")
}

// startKey goes on into an object key whose opening quote is b[i-1].
func (s *scanner) startKey(b []byte, i int) (int, scanResult) {
	s.inKey = true
	s.st = scString
	return stepString(s, b, i)
}

// stepEscape reads the character after a backslash in a string.
func stepEscape(s *scanner, b []byte, i int) (int, scanResult) {
	switch c := b[i]; c {
	case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
		s.st = scString
	case 'u':
		s.hexLeft = 4
		s.st = scUnicode
	default:
		return s.fail(i, "invalid escape "+quoteByte(c)+" in string")
	}
	return i + 1, scanMore
}

// stepUnicode reads the hex digits of a \uXXXX escape.
func stepUnicode(s *scanner, b []byte, i int) (int, scanResult) {
	for ; i < len(b) && s.hexLeft > 0; i++ {
		if !isHex(b[i]) {
			return s.fail(i, "invalid character "+quoteByte(b[i])+" in \\u escape")
		}
		s.hexLeft--
	}
	if s.hexLeft == 0 {
		s.st = scString
	}
	return i, scanMore
}

// startLiteral starts true, false or null at b[i], matching it at once
// when it is whole in b.
func (s *scanner) startLiteral(b []byte, i int) (int, scanResult) {
	lit := literalFor(b[i])
	if len(b)-i >= len(lit) && string(b[i:i+len(lit)]) == lit {
		return s.endValue(i + len(lit))
	}
	s.lit = lit[1:]
	s.st = scLiteral
	return i + 1, scanMore
}

// stepLiteral matches the rest of a literal split across inputs.
func stepLiteral(s *scanner, b []byte, i int) (int, scanResult) {
	if b[i] != s.lit[0] {
		return s.fail(i, "invalid character "+quoteByte(b[i])+" in literal")
	}
	if s.lit = s.lit[1:]; s.lit == "" {
		return s.endValue(i + 1)
	}
	return i + 1, scanMore
}

// stepMinus expects the first digit of a negative number.
func stepMinus(s *scanner, b []byte, i int) (int, scanResult) {
	switch c := b[i]; {
	case c == '0':
		s.st = scZero
	case '1' <= c && c <= '9':
		s.st = scInt
	default:
		return s.fail(i, "expected digit after '-'")
	}
	return i + 1, scanMore
}

// stepZero follows a leading zero, which only a fraction or an exponent
// may follow.
func stepZero(s *scanner, b []byte, i int) (int, scanResult) {
	switch b[i] {
	case '.':
		s.st = scDot
	case 'e', 'E':
		s.st = scExp
	default:
		return s.endValue(i)
	}
	return i + 1, scanMore
}

// stepDigits consumes the digits of the integer part (scInt), fraction
// (scFrac) or exponent (scExpDigits), and what may follow them.
func stepDigits(s *scanner, b []byte, i int) (int, scanResult) {
	for i < len(b) && isDigit(b[i]) {
		i++
	}
	if i == len(b) {
		return i, scanMore
	}
	switch c := b[i]; {
	case c == '.' && s.st == scInt:
		s.st = scDot
	case (c == 'e' || c == 'E') && s.st != scExpDigits:
		s.st = scExp
	default:
		return s.endValue(i)
	}
	return i + 1, scanMore
}

// stepDot expects the first digit of a fraction.
func stepDot(s *scanner, b []byte, i int) (int, scanResult) {
	return s.expectDigit(b, i, scFrac, "expected digit after decimal point")
}

// stepExp expects the sign or first digit of an exponent.
func stepExp(s *scanner, b []byte, i int) (int, scanResult) {
	if c := b[i]; c == '+' || c == '-' {
		s.st = scExpSign
		return i + 1, scanMore
	}
	return stepExpSign(s, b, i)
}

// stepExpSign expects the first digit of an exponent after its sign.
func stepExpSign(s *scanner, b []byte, i int) (int, scanResult) {
	return s.expectDigit(b, i, scExpDigits, "expected digit in exponent")
}

// expectDigit expects a digit at b[i], and then goes on in state next;
// msg describes the error otherwise.
func (s *scanner) expectDigit(b []byte, i int, next scanState, msg string) (int, scanResult) {
	if !isDigit(b[i]) {
		return s.fail(i, msg)
	}
	s.st = next
	return i + 1, scanMore
}

// closeContainer pops the container that b[i] closes.
func (s *scanner) closeContainer(i int) (int, scanResult) {
	s.stack = s.stack[:len(s.stack)-1]
	return s.endValue(i + 1)
}

// endValue moves on from a value that ended before b[i]: the scan is done
// if it was a top-level value.
func (s *scanner) endValue(i int) (int, scanResult) {
	if len(s.stack) == 0 {
		s.st = scIdle
		return i, scanDone
	}
	s.st = scCommaOrEnd
	return i, scanMore
}

// fail stops the scan at the offending byte b[i].
func (s *scanner) fail(i int, msg string) (int, scanResult) {
	s.msg = msg
	return i, scanError
}

// skipBlanks returns the index of the first byte at or after b[i] that is
// not a space or a tab.
func skipBlanks(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t') {
		i++
	}
	return i
}

func isDigit(c byte) bool { return '0' <= c && c <= '9' }

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
