package schema

import (
	"bytes"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/sagemaker-bidi/sagemaker-bidi/schema/internal/jsonspan"
)

// jsonReader reads one JSON value held whole in memory, for the chunk
// decoders of chunkdecode.go. It is deliberately partial: anything it is
// not sure to read exactly as encoding/json would (invalid UTF-8, a lone
// surrogate escape, a number an int field cannot hold, a key that matches
// a known field only case-insensitively, a duplicate key, deep nesting,
// any syntax error) makes it give up, and the caller decodes the value
// with encoding/json instead. So it never changes what a payload decodes
// to; it only makes the common payloads fast.
//
// Strings without escapes alias the input; unescaped strings go to
// scratch, whose capacity is at least the input's length, so that they
// never move while the value is read (unescaping never lengthens a
// string).
type jsonReader struct {
	b       []byte
	i       int
	scratch []byte
	failed  bool
}

// maxSkipDepth bounds the nesting of the values the reader skips; deeper
// ones are left to encoding/json.
const maxSkipDepth = 64

// reset starts reading b.
func (r *jsonReader) reset(b []byte) {
	r.b, r.i, r.failed = b, 0, false
	if cap(r.scratch) < len(b) {
		r.scratch = make([]byte, 0, max(len(b), 2*cap(r.scratch)))
	}
	r.scratch = r.scratch[:0]
}

// fail gives up on the value.
func (r *jsonReader) fail() { r.failed = true }

// ws skips whitespace and returns the next byte, or 0 at the end. A NUL
// byte in the input also reads as 0, so callers that need the end test
// r.i against len(r.b) (see end); every other caller refuses 0.
func (r *jsonReader) ws() byte {
	for ; r.i < len(r.b); r.i++ {
		switch c := r.b[r.i]; c {
		case ' ', '\t', '\n', '\r':
		default:
			return c
		}
	}
	return 0
}

// end reports whether only whitespace is left, failing otherwise.
func (r *jsonReader) end() bool {
	if r.ws(); r.i < len(r.b) {
		r.fail()
	}
	return !r.failed
}

// null consumes null if it comes next.
func (r *jsonReader) null() bool {
	if r.ws() == 'n' && bytes.HasPrefix(r.b[r.i:], []byte("null")) {
		r.i += len("null")
		return true
	}
	return false
}

// object reads an object, calling member for each key (with the reader
// before its value), which must read the value. null reads as no object;
// anything else fails.
func (r *jsonReader) object(member func(key []byte)) {
	for more := r.open('{', '}'); more && !r.failed; more = r.next('}') {
		if r.ws() != '"' {
			r.fail()
			return
		}
		key, escaped := r.rawString()
		if escaped || r.ws() != ':' {
			r.fail()
			return
		}
		r.i++
		member(key)
	}
}

// array reads an array, calling elem for each element (with the reader
// before it), which must read it. null reads as no array; anything else
// fails.
func (r *jsonReader) array(elem func()) {
	for more := r.open('[', ']'); more && !r.failed; more = r.next(']') {
		elem()
	}
}

// open starts reading a container that begins with start and ends with
// end, and reports whether a member comes next. null reads as an empty
// container; anything else but start fails.
func (r *jsonReader) open(start, end byte) bool {
	if r.null() {
		return false
	}
	if r.ws() != start {
		r.fail()
		return false
	}
	r.i++
	if r.ws() == end {
		r.i++
		return false
	}
	return true
}

// next reads what follows a member of a container that ends with end,
// and reports whether another member comes: true after a comma, false
// after end; anything else fails.
func (r *jsonReader) next(end byte) bool {
	switch r.ws() {
	case ',':
		r.i++
		return true
	case end:
		r.i++
		return false
	}
	r.fail()
	return false
}

// str reads a string into the bytes of its value, aliasing the input or
// scratch; null reads as nil, anything else fails.
func (r *jsonReader) str() []byte {
	if r.null() {
		return nil
	}
	if r.ws() != '"' {
		r.fail()
		return nil
	}
	raw, escaped := r.rawString()
	if !escaped {
		return raw
	}
	start := len(r.scratch)
	r.scratch = unescape(r.scratch, raw, &r.failed)
	return r.scratch[start:len(r.scratch):len(r.scratch)]
}

// rawString reads a string whose opening quote is next and returns its
// bytes between the quotes, and whether they hold escapes. It fails on
// control characters and on invalid UTF-8, which encoding/json would
// replace.
func (r *jsonReader) rawString() (raw []byte, escaped bool) {
	start := r.i + 1
	ascii := true
	for i := start; i < len(r.b); i++ {
		i += jsonspan.ASCII(r.b[i:])
		if i == len(r.b) {
			break
		}
		switch c := r.b[i]; {
		case c == '"':
			r.i = i + 1
			raw = r.b[start:i]
			if !ascii && !utf8.Valid(raw) {
				r.fail()
			}
			return raw, escaped
		case c == '\\':
			escaped = true
			i++ // the escaped character, checked by unescape
		case c < 0x20:
			r.fail()
			return nil, false
		default:
			ascii = false
		}
	}
	r.fail()
	return nil, false
}

// unescape appends the unescaped raw string to dst, setting *failed on a
// malformed escape or a lone surrogate.
func unescape(dst, raw []byte, failed *bool) []byte {
	for i := 0; i < len(raw); i++ {
		c := raw[i]
		if c != '\\' {
			dst = append(dst, c)
			continue
		}
		if i++; i == len(raw) {
			*failed = true
			return dst
		}
		switch raw[i] {
		case '"', '\\', '/':
			dst = append(dst, raw[i])
		case 'b':
			dst = append(dst, '\b')
		case 'f':
			dst = append(dst, '\f')
		case 'n':
			dst = append(dst, '\n')
		case 'r':
			dst = append(dst, '\r')
		case 't':
			dst = append(dst, '\t')
		case 'u':
			rr, ok := hex4(raw[i+1:])
			i += 4
			if ok && utf16.IsSurrogate(rr) {
				var lo rune
				if len(raw) > i+2 && raw[i+1] == '\\' && raw[i+2] == 'u' {
					lo, ok = hex4(raw[i+3:])
					i += 6
				}
				rr = utf16.DecodeRune(rr, lo)
				ok = ok && rr != utf8.RuneError
			}
			if !ok {
				*failed = true
				return dst
			}
			dst = utf8.AppendRune(dst, rr)
		default:
			*failed = true
			return dst
		}
	}
	return dst
}

// hex4 reads the four hex digits of a \u escape.
func hex4(b []byte) (rune, bool) {
	if len(b) < 4 {
		return 0, false
	}
	var r rune
	for _, c := range b[:4] {
		switch {
		case '0' <= c && c <= '9':
			c -= '0'
		case 'a' <= c && c <= 'f':
			c -= 'a' - 10
		case 'A' <= c && c <= 'F':
			c -= 'A' - 10
		default:
			return 0, false
		}
		r = r<<4 | rune(c)
	}
	return r, true
}

// integer reads an integer of at most 18 digits; null reads as 0.
// Anything else, a fraction or an exponent included, fails.
func (r *jsonReader) integer() int64 {
	if r.null() {
		return 0
	}
	lit := r.number()
	neg := len(lit) > 0 && lit[0] == '-'
	if neg {
		lit = lit[1:]
	}
	if len(lit) == 0 || len(lit) > 18 {
		r.fail()
		return 0
	}
	var n int64
	for _, c := range lit {
		if c < '0' || c > '9' {
			r.fail()
			return 0
		}
		n = n*10 + int64(c-'0')
	}
	if neg {
		n = -n
	}
	return n
}

// number reads a number and returns its literal text, failing unless it
// follows the JSON grammar.
func (r *jsonReader) number() []byte {
	start := r.i
	b := r.b
	i := start
	if i < len(b) && b[i] == '-' {
		i++
	}
	switch {
	case i < len(b) && b[i] == '0':
		i++
	case i < len(b) && '1' <= b[i] && b[i] <= '9':
		i = digits(b, i)
	default:
		r.fail()
		return nil
	}
	if i < len(b) && b[i] == '.' {
		if j := digits(b, i+1); j > i+1 {
			i = j
		} else {
			r.fail()
			return nil
		}
	}
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		i++
		if i < len(b) && (b[i] == '+' || b[i] == '-') {
			i++
		}
		if j := digits(b, i); j > i {
			i = j
		} else {
			r.fail()
			return nil
		}
	}
	r.i = i
	return b[start:i]
}

func digits(b []byte, i int) int {
	for i < len(b) && '0' <= b[i] && b[i] <= '9' {
		i++
	}
	return i
}

// skip reads and validates any value.
func (r *jsonReader) skip() { r.skipDepth(0) }

func (r *jsonReader) skipDepth(depth int) {
	if depth > maxSkipDepth {
		r.fail()
		return
	}
	switch c := r.ws(); {
	case c == '{':
		r.object(func([]byte) { r.skipDepth(depth + 1) })
	case c == '[':
		r.array(func() { r.skipDepth(depth + 1) })
	case c == '"':
		if raw, escaped := r.rawString(); escaped && !validEscapes(raw) {
			r.fail()
		}
	case c == 't':
		r.literal("true")
	case c == 'f':
		r.literal("false")
	case c == 'n':
		r.literal("null")
	default:
		r.number()
	}
}

// validEscapes reports whether the escapes of a raw string are valid
// JSON.
func validEscapes(raw []byte) bool {
	for i := 0; i < len(raw); i++ {
		if raw[i] != '\\' {
			continue
		}
		if i++; i == len(raw) {
			return false
		}
		switch raw[i] {
		case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
		case 'u':
			if _, ok := hex4(raw[i+1:]); !ok {
				return false
			}
			i += 4
		default:
			return false
		}
	}
	return true
}

// literal consumes lit, failing if it does not come next.
func (r *jsonReader) literal(lit string) {
	if !bytes.HasPrefix(r.b[r.i:], []byte(lit)) {
		r.fail()
		return
	}
	r.i += len(lit)
}
