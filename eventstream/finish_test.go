package eventstream

import (
	"bytes"
	"errors"
	"testing"
)

// TestFinishMessage builds messages in place (prelude space, headers by
// AppendHeaders, payload, CRC space) and checks that FinishMessage makes
// them what AppendMessage writes, and that it rejects impossible lengths
// without writing.
func TestFinishMessage(t *testing.T) {
	for _, m := range []*Message{
		{},
		{Payload: []byte("payload only")},
		{Headers: Headers{{Name: ":event-type", Value: StringValue("PayloadPart")}, {Name: "n", Value: Int64Value(-3)}}, Payload: bytes.Repeat([]byte{7}, 5000)},
	} {
		want, err := AppendMessage(nil, m)
		if err != nil {
			t.Fatal(err)
		}
		b := make([]byte, PreludeLen, 64)
		if b, err = AppendHeaders(b, m.Headers); err != nil {
			t.Fatal(err)
		}
		hl := len(b) - PreludeLen
		b = append(b, m.Payload...)
		b = append(b, 0, 0, 0, 0)
		if err := FinishMessage(b, hl); err != nil || !bytes.Equal(b, want) {
			t.Fatalf("%d headers, %d bytes: %v, or bytes differ from AppendMessage", len(m.Headers), len(m.Payload), err)
		}
	}
	for _, tc := range []struct {
		n, hl int
		want  error
	}{
		{Overhead - 1, 0, ErrInvalidLength},
		{Overhead + 3, 4, ErrInvalidLength},
		{Overhead, -1, ErrInvalidLength},
		{Overhead + DefaultMaxHeadersLen + 1, DefaultMaxHeadersLen + 1, ErrHeadersTooLarge},
		{Overhead + DefaultMaxPayloadLen + 1, 0, ErrPayloadTooLarge},
	} {
		b := make([]byte, tc.n)
		var le *LengthError
		if err := FinishMessage(b, tc.hl); !errors.As(err, &le) || !errors.Is(err, tc.want) {
			t.Errorf("FinishMessage(%d bytes, headers %d) = %v, want %v", tc.n, tc.hl, err, tc.want)
		}
		if bytes.ContainsFunc(b, func(r rune) bool { return r != 0 }) {
			t.Errorf("FinishMessage(%d bytes, headers %d) wrote into a message it rejected", tc.n, tc.hl)
		}
	}
}
