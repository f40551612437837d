package wsframe

import (
	"bytes"
	"errors"
	"testing"
	"unicode/utf8"
)

// Whatever a peer puts in a close frame, ParseClose either reports a
// protocol error or returns a code that may be sent and a UTF-8 reason,
// from which ClosePayload rebuilds the payload exactly: the gateway can
// only ever echo what RFC 6455 allows.
func FuzzParseClose(f *testing.F) {
	for _, seed := range [][]byte{
		nil, {3}, {0x03, 0xe8}, {0x03, 0xee}, {0x03, 0xf7}, {0x13, 0x88}, {0xff, 0xff},
		{0x0f, 0xa1, 'b', 'y', 'e'}, {0x03, 0xe8, 0xc3, 0x28}, append([]byte{0x03, 0xf3}, bytes.Repeat([]byte("é"), 61)...),
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, payload []byte) {
		if len(payload) > MaxControlPayload {
			return // the frame reader refuses longer control frames first
		}
		code, reason, err := ParseClose(payload)
		if err != nil {
			var pe *ProtocolError
			if !errors.As(err, &pe) {
				t.Fatalf("ParseClose(%x): %v is not a *ProtocolError", payload, err)
			}
			return
		}
		if len(payload) == 0 {
			if code != CloseNoStatus || reason != "" {
				t.Fatalf("empty payload: %d %q", code, reason)
			}
			return
		}
		if !ValidCloseCode(code) || !utf8.ValidString(reason) {
			t.Fatalf("ParseClose(%x) accepted code %d reason %q", payload, code, reason)
		}
		if got := ClosePayload(code, reason); !bytes.Equal(got, payload) {
			t.Fatalf("ClosePayload(ParseClose(%x)) = %x", payload, got)
		}
	})
}
