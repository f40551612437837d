package cassette

import (
	"encoding/binary"
	"strconv"
	"unicode/utf8"

	"github.com/sagemaker-bidi/sagemaker-bidi/bidi"
)

// appendEvent appends e's line (without the newline) to b: the members
// of eventLine in its order, empty ones omitted, as encoding/json would
// write them without HTML escaping, but without reflection or
// allocation.
func appendEvent(b []byte, e *Event) []byte {
	b = append(b, `{"t_us":`...)
	b = strconv.AppendInt(b, e.T.Microseconds(), 10)
	b = appendStr(b, "kind", string(e.Kind))
	b = appendStr(b, "endpoint", e.Endpoint)
	b = appendStr(b, "target_variant", e.TargetVariant)
	b = appendStr(b, "path", e.InvocationPath)
	b = appendStr(b, "query", e.QueryString)
	b = appendInt(b, "status", e.Status)
	b = appendStr(b, "variant", e.Variant)
	b = appendStr(b, "request_id", e.RequestID)
	b = appendStr(b, "error_type", e.ErrorType)
	if e.Kind == KindSend || e.Kind == KindRecv {
		typ, state := typeBinary, statePartial
		if e.Type == bidi.DataTypeUTF8 {
			typ = typeUTF8
		}
		if e.Complete {
			state = stateComplete
		}
		b = appendStr(b, "type", typ)
		b = appendStr(b, "state", state)
		b = strconv.AppendInt(appendKey(b, "size"), int64(e.Size), 10)
		if e.Padding >= 0 {
			b = strconv.AppendInt(appendKey(b, "pad"), int64(e.Padding), 10)
		}
		if e.Redacted {
			b = append(b, `,"redacted":true`...)
		}
		n := len(b)
		b = append(b, `,"text":`...)
		var ok bool
		if b, ok = appendText(b, e.Data); !ok {
			b = append(b[:n], `,"b64":"`...)
			b = appendBase64(b, e.Data)
			b = append(b, '"')
		}
	}
	b = appendStr(b, "exception", e.ExceptionType)
	b = appendStr(b, "body", e.Body)
	b = appendStr(b, "code", e.Code)
	b = appendStr(b, "message", e.Message)
	b = appendStr(b, "reason", e.Reason)
	b = appendInt(b, "close_code", e.CloseCode)
	b = appendStr(b, "close_reason", e.CloseReason)
	b = appendStr(b, "err", e.Err)
	return append(b, '}')
}

// appendStr appends ,"name":"value" unless value is empty.
func appendStr(b []byte, name, value string) []byte {
	if value == "" {
		return b
	}
	return appendQuoted(appendKey(b, name), value)
}

// appendInt appends ,"name":value unless value is 0.
func appendInt(b []byte, name string, value int) []byte {
	if value == 0 {
		return b
	}
	return strconv.AppendInt(appendKey(b, name), int64(value), 10)
}

// appendKey appends ,"name": (name needs no escaping).
func appendKey(b []byte, name string) []byte {
	b = append(b, ',', '"')
	b = append(b, name...)
	return append(b, '"', ':')
}

const hexDigits = "0123456789abcdef"

// appendQuoted appends s as a JSON string, as encoding/json writes it
// without HTML escaping: invalid UTF-8 becomes U+FFFD, and U+2028 and
// U+2029 are escaped.
func appendQuoted[T string | []byte](b []byte, s T) []byte {
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' {
				i++
				continue
			}
			b = append(b, s[start:i]...)
			switch c {
			case '"', '\\':
				b = append(b, '\\', c)
			case '\n':
				b = append(b, '\\', 'n')
			case '\r':
				b = append(b, '\\', 'r')
			case '\t':
				b = append(b, '\\', 't')
			case '\b':
				b = append(b, '\\', 'b')
			case '\f':
				b = append(b, '\\', 'f')
			default:
				b = append(b, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xf])
			}
			i++
			start = i
			continue
		}
		var r rune
		var size int
		switch v := any(s).(type) {
		case string:
			r, size = utf8.DecodeRuneInString(v[i:])
		case []byte:
			r, size = utf8.DecodeRune(v[i:])
		}
		if r == utf8.RuneError && size == 1 {
			b = append(b, s[start:i]...)
			b = append(b, `\ufffd`...)
			i += size
			start = i
			continue
		}
		if r == '\u2028' || r == '\u2029' {
			b = append(b, s[start:i]...)
			b = append(b, '\\', 'u', '2', '0', '2', hexDigits[r&0xf])
			i += size
			start = i
			continue
		}
		i += size
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}

// Byte classes of appendText.
const (
	textPlain  = iota // copied as is
	textEscape        // '"', '\\', tab, LF, CR: escaped
	textNot           // other control characters: not text
	textUTF8          // the first byte of a multi-byte sequence
)

// textClass classifies every byte for appendText.
var textClass = func() (c [256]uint8) {
	for i := range c {
		switch {
		case i == '"' || i == '\\' || i == '\t' || i == '\n' || i == '\r':
			c[i] = textEscape
		case i < 0x20 || i == 0x7f:
			c[i] = textNot
		case i >= utf8.RuneSelf:
			c[i] = textUTF8
		}
	}
	return c
}()

// appendText appends data as a JSON string, in one pass, if it is text
// (see isText), and reports whether it was; it writes what appendQuoted
// writes.
func appendText(b, data []byte) ([]byte, bool) {
	b = append(b, '"')
	start, i := 0, 0
	for i < len(data) {
		for i+8 <= len(data) && plain8(binary.LittleEndian.Uint64(data[i:])) {
			i += 8
		}
		for i < len(data) && textClass[data[i]] == textPlain {
			i++
		}
		if i == len(data) {
			break
		}
		switch c := data[i]; textClass[c] {
		case textEscape:
			b = append(b, data[start:i]...)
			switch c {
			case '\t':
				c = 't'
			case '\n':
				c = 'n'
			case '\r':
				c = 'r'
			}
			b = append(b, '\\', c)
			i++
			start = i
		case textNot:
			return b, false
		default:
			r, size := utf8.DecodeRune(data[i:])
			if r == utf8.RuneError && size == 1 {
				return b, false
			}
			if r == '\u2028' || r == '\u2029' {
				b = append(b, data[start:i]...)
				b = append(b, '\\', 'u', '2', '0', '2', hexDigits[r&0xf])
				start = i + size
			}
			i += size
		}
	}
	b = append(b, data[start:]...)
	return append(b, '"'), true
}

// plain8 reports whether the 8 bytes of x are all textPlain: no byte
// below 0x20, at or above 0x80, '"', '\\' or 0x7f (SWAR: a zero byte of
// v shows as its high bit in haszero).
func plain8(x uint64) bool {
	const ones, highs = 0x0101010101010101, 0x8080808080808080
	haszero := func(v uint64) uint64 { return (v - ones) & ^v & highs }
	below := (x - 0x20*ones) & ^x & highs // a byte < 0x20 (with x's high bits clear)
	return (x&highs)|below|haszero(x^('"'*ones))|haszero(x^('\\'*ones))|haszero(x^(0x7f*ones)) == 0
}
