package eventstream

import (
	"encoding/base64"
	"encoding/hex"
	"strconv"
	"time"
)

// ValueType is the type byte of an encoded header value.
type ValueType uint8

// The ten header value types of the event-stream format.
const (
	TypeBoolTrue  ValueType = 0 // no value bytes
	TypeBoolFalse ValueType = 1 // no value bytes
	TypeByte      ValueType = 2 // int8
	TypeInt16     ValueType = 3 // int16, big-endian
	TypeInt32     ValueType = 4 // int32, big-endian
	TypeInt64     ValueType = 5 // int64, big-endian
	TypeBytes     ValueType = 6 // uint16 length, then bytes
	TypeString    ValueType = 7 // uint16 length, then UTF-8 bytes
	TypeTimestamp ValueType = 8 // int64 milliseconds since the Unix epoch
	TypeUUID      ValueType = 9 // 16 bytes
)

var typeNames = [...]string{"bool", "bool", "byte", "int16", "int32", "int64", "bytes", "string", "timestamp", "uuid"}

// String returns the name of the type ("bool", "int32", "string", ...).
func (t ValueType) String() string {
	if int(t) < len(typeNames) {
		return typeNames[t]
	}
	return "type(" + strconv.Itoa(int(t)) + ")"
}

// MaxValueLen is the longest string or byte-array header value.
const MaxValueLen = 1<<15 - 1

// MaxNameLen is the longest header name.
const MaxNameLen = 255

// Value is a typed header value. Integer types and timestamps (in
// milliseconds) are held in Int; byte arrays, strings and UUIDs in Bytes.
//
// A Value returned by a [Decoder] aliases the decoder's buffer and is valid
// only until the next call to Decode.
type Value struct {
	Type  ValueType
	Int   int64
	Bytes []byte
}

// BoolValue returns a boolean value.
func BoolValue(b bool) Value {
	if b {
		return Value{Type: TypeBoolTrue}
	}
	return Value{Type: TypeBoolFalse}
}

// ByteValue returns an int8 value.
func ByteValue(v int8) Value { return Value{Type: TypeByte, Int: int64(v)} }

// Int16Value returns an int16 value.
func Int16Value(v int16) Value { return Value{Type: TypeInt16, Int: int64(v)} }

// Int32Value returns an int32 value.
func Int32Value(v int32) Value { return Value{Type: TypeInt32, Int: int64(v)} }

// Int64Value returns an int64 value.
func Int64Value(v int64) Value { return Value{Type: TypeInt64, Int: v} }

// BytesValue returns a byte-array value. The slice is not copied.
func BytesValue(b []byte) Value { return Value{Type: TypeBytes, Bytes: b} }

// StringValue returns a string value holding a copy of s.
func StringValue(s string) Value { return Value{Type: TypeString, Bytes: []byte(s)} }

// StringBytesValue returns a string value whose UTF-8 bytes are b. The slice
// is not copied, which makes it the allocation-free choice for constants.
func StringBytesValue(b []byte) Value { return Value{Type: TypeString, Bytes: b} }

// TimestampValue returns a timestamp value with millisecond precision.
func TimestampValue(t time.Time) Value { return Value{Type: TypeTimestamp, Int: t.UnixMilli()} }

// UUIDValue returns a UUID value holding a copy of u.
func UUIDValue(u [16]byte) Value { return Value{Type: TypeUUID, Bytes: u[:]} }

// Bool reports the value of a boolean. It is false for other types.
func (v Value) Bool() bool { return v.Type == TypeBoolTrue }

// Time returns a timestamp value as a time.Time in UTC.
func (v Value) Time() time.Time { return time.UnixMilli(v.Int).UTC() }

// Equal reports whether v and w have the same type and value.
func (v Value) Equal(w Value) bool {
	if v.Type != w.Type {
		return false
	}
	switch v.Type {
	case TypeBoolTrue, TypeBoolFalse:
		return true
	case TypeBytes, TypeString, TypeUUID:
		return string(v.Bytes) == string(w.Bytes)
	default:
		return v.Int == w.Int
	}
}

// String formats the value for debugging. Byte arrays are base64, UUIDs
// hexadecimal, timestamps RFC 3339.
func (v Value) String() string {
	switch v.Type {
	case TypeBoolTrue:
		return "true"
	case TypeBoolFalse:
		return "false"
	case TypeByte, TypeInt16, TypeInt32, TypeInt64:
		return strconv.FormatInt(v.Int, 10)
	case TypeBytes:
		return base64.StdEncoding.EncodeToString(v.Bytes)
	case TypeString:
		return string(v.Bytes)
	case TypeTimestamp:
		return v.Time().Format(time.RFC3339Nano)
	case TypeUUID:
		return hex.EncodeToString(v.Bytes)
	}
	return v.Type.String()
}

// encodedLen returns the number of bytes the value occupies after its type
// byte, or -1 when it cannot be encoded.
func (v *Value) encodedLen() int {
	switch v.Type {
	case TypeBoolTrue, TypeBoolFalse:
		return 0
	case TypeByte:
		if v.Int != int64(int8(v.Int)) {
			return -1
		}
		return 1
	case TypeInt16:
		if v.Int != int64(int16(v.Int)) {
			return -1
		}
		return 2
	case TypeInt32:
		if v.Int != int64(int32(v.Int)) {
			return -1
		}
		return 4
	case TypeInt64, TypeTimestamp:
		return 8
	case TypeBytes, TypeString:
		if len(v.Bytes) > MaxValueLen {
			return -1
		}
		return 2 + len(v.Bytes)
	case TypeUUID:
		if len(v.Bytes) != 16 {
			return -1
		}
		return 16
	}
	return -1
}
