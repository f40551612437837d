package eventstream

import (
	"encoding/binary"
	"strconv"
)

// Header is one named header value.
type Header struct {
	Name  string
	Value Value
}

// Headers is the header list of a message, in wire order.
type Headers []Header

// Get returns the value of the last header named name. Repeated names are
// not valid event-stream, and the last one wins, as in other AWS SDKs.
func (h Headers) Get(name string) (Value, bool) {
	for i := len(h) - 1; i >= 0; i-- {
		if h[i].Name == name {
			return h[i].Value, true
		}
	}
	return Value{}, false
}

// Set replaces the value of the header named name, or appends it.
func (h *Headers) Set(name string, v Value) {
	for i := range *h {
		if (*h)[i].Name == name {
			(*h)[i].Value = v
			return
		}
	}
	*h = append(*h, Header{Name: name, Value: v})
}

// Del removes every header named name.
func (h *Headers) Del(name string) {
	out := (*h)[:0]
	for _, x := range *h {
		if x.Name != name {
			out = append(out, x)
		}
	}
	*h = out
}

// encodedLen returns the length of the encoded header block, or an error
// for a header that cannot be encoded.
func (h Headers) encodedLen() (int, error) {
	n := 0
	for i := range h {
		x := &h[i]
		vl := x.Value.encodedLen()
		if uint(len(x.Name)-1) >= MaxNameLen || vl < 0 {
			return 0, headerEncodeError(n, x)
		}
		n += 1 + len(x.Name) + 1 + vl
	}
	return n, nil
}

// headerEncodeError describes why x, at offset off of its header block,
// cannot be encoded.
func headerEncodeError(off int, x *Header) error {
	if len(x.Name) == 0 || len(x.Name) > MaxNameLen {
		return &HeaderError{Offset: off, Name: x.Name, Reason: "name length " + strconv.Itoa(len(x.Name)) + " outside 1..255"}
	}
	switch x.Value.Type {
	case TypeByte, TypeInt16, TypeInt32:
		return &HeaderError{Offset: off, Name: x.Name, Reason: "value " + strconv.FormatInt(x.Value.Int, 10) + " out of range for " + x.Value.Type.String()}
	}
	return &HeaderError{Offset: off, Name: x.Name, Reason: "cannot encode " + x.Value.Type.String() + " value of length " + strconv.Itoa(len(x.Value.Bytes))}
}

// putHeaders writes the encoded header block into b, which is exactly as
// long as the block. The headers must have been checked by encodedLen.
func putHeaders(b []byte, h Headers) {
	off := 0
	for i := range h {
		x := &h[i]
		b[off] = byte(len(x.Name))
		off++
		off += copy(b[off:], x.Name)
		off += putValue(b[off:], &x.Value)
	}
}

// putValue writes the type byte and the encoding of v at the start of b
// and returns the number of bytes written.
func putValue(b []byte, v *Value) int {
	b[0] = byte(v.Type)
	switch v.Type {
	case TypeByte:
		b[1] = byte(v.Int)
		return 2
	case TypeInt16:
		binary.BigEndian.PutUint16(b[1:], uint16(v.Int))
		return 3
	case TypeInt32:
		binary.BigEndian.PutUint32(b[1:], uint32(v.Int))
		return 5
	case TypeInt64, TypeTimestamp:
		binary.BigEndian.PutUint64(b[1:], uint64(v.Int))
		return 9
	case TypeBytes, TypeString:
		binary.BigEndian.PutUint16(b[1:], uint16(len(v.Bytes)))
		return 3 + copy(b[3:], v.Bytes)
	case TypeUUID:
		return 1 + copy(b[1:], v.Bytes)
	}
	return 1
}

// AppendHeaders appends the encoding of h (a header block, without prelude)
// to dst. It is the form hashed for the :date header of a signed envelope.
func AppendHeaders(dst []byte, h Headers) ([]byte, error) {
	n, err := h.encodedLen()
	if err != nil {
		return dst, err
	}
	start := len(dst)
	dst = grow(dst, n)[:start+n]
	putHeaders(dst[start:], h)
	return dst, nil
}

// decodeHeaders parses a header block into h (reusing its capacity). Value
// bytes alias b. A name equal to the one at the same position in h's
// previous contents reuses that string, so a stream whose messages repeat
// their headers decodes without allocating; other names are interned
// through names (which may be nil).
func decodeHeaders(b []byte, h Headers, maxHeaders int, names *nameCache) (Headers, error) {
	prev := h[:cap(h)]
	h = h[:0]
	off := 0
	for off < len(b) {
		if len(h) == maxHeaders {
			return h, &LengthError{Err: ErrTooManyHeaders, Length: int64(len(h) + 1), Limit: int64(maxHeaders)}
		}
		start := off
		nl := int(b[off])
		off++
		if nl == 0 {
			return h, &HeaderError{Offset: start, Reason: "empty name"}
		}
		if off+nl+1 > len(b) {
			return h, &HeaderError{Offset: start, Reason: "name runs past the header block"}
		}
		nameBytes := b[off : off+nl]
		off += nl
		var v Value
		v.Type = ValueType(b[off])
		off++
		need := 0
		switch v.Type {
		case TypeBoolTrue, TypeBoolFalse:
		case TypeByte:
			need = 1
		case TypeInt16:
			need = 2
		case TypeInt32:
			need = 4
		case TypeInt64, TypeTimestamp:
			need = 8
		case TypeUUID:
			need = 16
		case TypeBytes, TypeString:
			if off+2 > len(b) {
				return h, &HeaderError{Offset: start, Name: string(nameBytes), Reason: "value length runs past the header block"}
			}
			need = int(binary.BigEndian.Uint16(b[off:]))
			off += 2
		default:
			return h, &HeaderError{Offset: start, Name: string(nameBytes), Reason: "unknown value type " + strconv.Itoa(int(v.Type))}
		}
		if off+need > len(b) {
			return h, &HeaderError{Offset: start, Name: string(nameBytes), Reason: "value runs past the header block"}
		}
		val := b[off : off+need : off+need]
		off += need
		switch v.Type {
		case TypeByte:
			v.Int = int64(int8(val[0]))
		case TypeInt16:
			v.Int = int64(int16(binary.BigEndian.Uint16(val)))
		case TypeInt32:
			v.Int = int64(int32(binary.BigEndian.Uint32(val)))
		case TypeInt64, TypeTimestamp:
			v.Int = int64(binary.BigEndian.Uint64(val))
		case TypeBytes, TypeString, TypeUUID:
			v.Bytes = val
		}
		var name string
		if i := len(h); i < len(prev) && prev[i].Name == string(nameBytes) {
			name = prev[i].Name
		} else {
			name = names.intern(nameBytes)
		}
		h = append(h, Header{Name: name, Value: v})
	}
	return h, nil
}

// commonName returns the header name b as a constant string when it is
// one that event streams commonly carry (the protocol's own and
// SageMaker's PayloadPart headers), so that a new decoder's first messages
// allocate no names; else "".
func commonName(b []byte) string {
	switch string(b) {
	case ":message-type":
		return ":message-type"
	case ":event-type":
		return ":event-type"
	case ":content-type":
		return ":content-type"
	case ":exception-type":
		return ":exception-type"
	case ":error-code":
		return ":error-code"
	case ":error-message":
		return ":error-message"
	case DateHeader:
		return DateHeader
	case ChunkSignatureHeader:
		return ChunkSignatureHeader
	case "DataType":
		return "DataType"
	case "CompletionState":
		return "CompletionState"
	case "P":
		return "P"
	}
	return ""
}

// nameCache interns header names so that decoding a stream whose messages
// repeat the same names allocates no strings in steady state. It is bounded.
type nameCache struct {
	m map[string]string
}

const maxCachedNames = 256

// intern returns b as a string: a common name's constant, else the cached
// string, else a new one, cached while there is room. A nil cache only
// knows the common names.
func (c *nameCache) intern(b []byte) string {
	if s := commonName(b); s != "" {
		return s
	}
	if c == nil {
		return string(b)
	}
	if s, ok := c.m[string(b)]; ok {
		return s
	}
	s := string(b)
	if c.m == nil {
		c.m = make(map[string]string)
	}
	if len(c.m) < maxCachedNames {
		c.m[s] = s
	}
	return s
}
