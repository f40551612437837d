package eventstream

import (
	"errors"
	"io"
	"strings"
	"testing"
	"time"
)

func TestHeadersGetSetDel(t *testing.T) {
	var h Headers
	h.Set("a", Int32Value(1))
	h.Set("b", StringValue("x"))
	h.Set("a", Int32Value(2)) // replaces in place
	if len(h) != 2 || h[0].Name != "a" || h[0].Value.Int != 2 {
		t.Fatalf("after Set: %v", h)
	}
	h = append(h, Header{"a", Int32Value(3)}) // a repeated name: the last wins
	if v, ok := h.Get("a"); !ok || v.Int != 3 {
		t.Errorf("Get(a) = %v, %v", v, ok)
	}
	if _, ok := h.Get("missing"); ok {
		t.Error("Get(missing) found something")
	}
	h.Del("a")
	if len(h) != 1 || h[0].Name != "b" {
		t.Errorf("after Del: %v", h)
	}

	m := &Message{Headers: h, Payload: []byte("12345")}
	n, err := m.EncodedLen()
	b, _ := AppendMessage(nil, m)
	if err != nil || n != len(b) || n != Overhead+1+1+1+2+1+5 {
		t.Errorf("EncodedLen = %d, %v; encoded %d bytes", n, err, len(b))
	}
	hb, err := AppendHeaders([]byte("p"), h)
	if err != nil || string(hb[1:]) != string(b[preludeLen:preludeLen+6]) {
		t.Errorf("AppendHeaders = %q, %v", hb, err)
	}
	if _, err := (&Message{Headers: Headers{{"", BoolValue(true)}}}).EncodedLen(); !errors.Is(err, ErrInvalidHeader) {
		t.Errorf("EncodedLen of an empty name: %v", err)
	}
	m.Reset()
	if len(m.Headers) != 0 || m.Payload != nil || cap(m.Headers) == 0 {
		t.Errorf("after Reset: %+v", m)
	}
}

func TestValues(t *testing.T) {
	ts := time.Date(2026, 1, 2, 3, 4, 5, 678_000_000, time.UTC)
	u := [16]byte{0: 0xde, 15: 0xff}
	tests := []struct {
		v    Value
		typ  ValueType
		str  string
		name string
	}{
		{BoolValue(true), TypeBoolTrue, "true", "bool"},
		{BoolValue(false), TypeBoolFalse, "false", "bool"},
		{ByteValue(-49), TypeByte, "-49", "byte"},
		{Int16Value(-2), TypeInt16, "-2", "int16"},
		{Int32Value(40972), TypeInt32, "40972", "int32"},
		{Int64Value(42424242), TypeInt64, "42424242", "int64"},
		{BytesValue([]byte("I'm")), TypeBytes, "SSdt", "bytes"},
		{StringValue("json"), TypeString, "json", "string"},
		{StringBytesValue([]byte("json")), TypeString, "json", "string"},
		{TimestampValue(ts), TypeTimestamp, "2026-01-02T03:04:05.678Z", "timestamp"},
		{UUIDValue(u), TypeUUID, "de0000000000000000000000000000ff", "uuid"},
		{Value{Type: 12}, 12, "type(12)", "type(12)"},
	}
	for _, tt := range tests {
		if tt.v.Type != tt.typ || tt.v.String() != tt.str || tt.typ.String() != tt.name {
			t.Errorf("%v: type %v (%s), String %q; want %v (%s), %q", tt.v, tt.v.Type, tt.v.Type, tt.v.String(), tt.typ, tt.name, tt.str)
		}
		if !tt.v.Equal(tt.v) {
			t.Errorf("%v not equal to itself", tt.v)
		}
	}
	if !BoolValue(true).Bool() || BoolValue(false).Bool() {
		t.Error("Bool")
	}
	if got := TimestampValue(ts).Time(); !got.Equal(ts) {
		t.Errorf("Time() = %v", got)
	}
	for _, pair := range [][2]Value{
		{Int32Value(1), Int64Value(1)},
		{Int32Value(1), Int32Value(2)},
		{StringValue("a"), BytesValue([]byte("a"))},
		{StringValue("a"), StringValue("b")},
	} {
		if pair[0].Equal(pair[1]) {
			t.Errorf("%v (%v) equals %v (%v)", pair[0], pair[0].Type, pair[1], pair[1].Type)
		}
	}
}

func TestErrorMessages(t *testing.T) {
	for _, tt := range []struct {
		err  error
		want []string
		is   error
	}{
		{&LengthError{Err: ErrPayloadTooLarge, Length: 30, Limit: 20}, []string{"payload too large", "30", "20"}, ErrPayloadTooLarge},
		{&ChecksumError{Checksum: PreludeChecksum, Want: 0xabc, Got: 0xdef}, []string{"prelude checksum", "0x00000abc", "0x00000def"}, nil},
		{&ChecksumError{Checksum: MessageChecksum}, []string{"message checksum"}, nil},
		{&HeaderError{Offset: 7, Name: "n", Reason: "bad"}, []string{`"n"`, "offset 7", "bad"}, ErrInvalidHeader},
		{&HeaderError{Offset: 7, Reason: "bad"}, []string{"offset 7", "bad"}, ErrInvalidHeader},
		{&SignatureError{Index: 3, Reason: "nope", Err: ErrSignatureMismatch}, []string{"envelope 3", "nope"}, ErrSignatureMismatch},
	} {
		msg := tt.err.Error()
		for _, w := range tt.want {
			if !strings.Contains(msg, w) || !strings.HasPrefix(msg, "eventstream: ") {
				t.Errorf("%q lacks %q", msg, w)
			}
		}
		if tt.is != nil && !errors.Is(tt.err, tt.is) {
			t.Errorf("%v does not match %v", tt.err, tt.is)
		}
		if errors.Is(tt.err, io.EOF) {
			t.Errorf("%v matches io.EOF", tt.err)
		}
	}
}

// TestCommonNamesAllocateNothing decodes the headers of a SageMaker
// PayloadPart event with a decoder's fresh name cache: its names are
// constants, so nothing is allocated, while a name of its own costs a
// string.
func TestCommonNamesAllocateNothing(t *testing.T) {
	common := Headers{
		{":message-type", StringValue("event")},
		{":event-type", StringValue("PayloadPart")},
		{":content-type", StringValue("application/octet-stream")},
		{"DataType", StringValue("BINARY")},
		{"CompletionState", StringValue("COMPLETE")},
		{"P", StringValue("xyz")},
	}
	custom := append(common[:len(common):len(common)], Header{"x-custom", StringValue("v")})
	for _, tc := range []struct {
		h    Headers
		none bool
	}{{common, true}, {custom, false}} {
		block, err := AppendHeaders(nil, tc.h)
		if err != nil {
			t.Fatal(err)
		}
		dst := make(Headers, 8) // room for every header, no names to reuse
		got := testing.AllocsPerRun(100, func() {
			clear(dst)
			if _, err := decodeHeaders(block, dst[:0], 32, &nameCache{}); err != nil {
				t.Fatal(err)
			}
		})
		if (got == 0) != tc.none {
			t.Errorf("%d headers: %v allocations, want none: %v", len(tc.h), got, tc.none)
		}
	}
}
