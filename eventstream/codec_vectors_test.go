package eventstream

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"hash/crc32"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"testing/iotest"
)

// The aws-c-event-stream codec vectors, as shipped in smithy-go (see
// testdata/codec/NOTICE).

type codecVector struct {
	TotalLength   uint32 `json:"total_length"`
	HeadersLength uint32 `json:"headers_length"`
	PreludeCRC    int64  `json:"prelude_crc"` // printed as a signed int32
	MessageCRC    int64  `json:"message_crc"` // printed as a signed int32
	Headers       []struct {
		Name  string          `json:"name"`
		Type  ValueType       `json:"type"`
		Value json.RawMessage `json:"value"`
	} `json:"headers"`
	Payload []byte `json:"payload"` // base64 in the file
}

// value converts a header of the decoded JSON to a Value.
func (v codecVector) value(t *testing.T, i int) Value {
	h := v.Headers[i]
	switch h.Type {
	case TypeBoolTrue, TypeBoolFalse:
		var b bool
		if err := json.Unmarshal(h.Value, &b); err != nil {
			t.Fatal(err)
		}
		if b != (h.Type == TypeBoolTrue) {
			t.Fatalf("header %s: type %v with value %v", h.Name, h.Type, b)
		}
		return BoolValue(b)
	case TypeBytes, TypeString, TypeUUID:
		var b []byte
		if err := json.Unmarshal(h.Value, &b); err != nil {
			t.Fatal(err)
		}
		return Value{Type: h.Type, Bytes: b}
	default:
		var n int64
		if err := json.Unmarshal(h.Value, &n); err != nil {
			t.Fatal(err)
		}
		return Value{Type: h.Type, Int: n}
	}
}

func codecFiles(t *testing.T, kind string) []string {
	names, err := filepath.Glob(filepath.Join("testdata", "codec", "encoded", kind, "*"))
	if err != nil || len(names) == 0 {
		t.Fatalf("no %s codec vectors: %v", kind, err)
	}
	return names
}

func TestCodecVectorsPositive(t *testing.T) {
	for _, path := range codecFiles(t, "positive") {
		name := filepath.Base(path)
		t.Run(name, func(t *testing.T) {
			encoded, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			js, err := os.ReadFile(filepath.Join("testdata", "codec", "decoded", "positive", name))
			if err != nil {
				t.Fatal(err)
			}
			var want codecVector
			if err := json.Unmarshal(js, &want); err != nil {
				t.Fatal(err)
			}

			// The prelude and CRCs as the JSON states them.
			if got := binary.BigEndian.Uint32(encoded[0:]); got != want.TotalLength || int(got) != len(encoded) {
				t.Errorf("total_length %d, file %d bytes, want %d", got, len(encoded), want.TotalLength)
			}
			if got := binary.BigEndian.Uint32(encoded[4:]); got != want.HeadersLength {
				t.Errorf("headers_length %d, want %d", got, want.HeadersLength)
			}
			if got := int64(int32(crc32.ChecksumIEEE(encoded[:8]))); got != want.PreludeCRC {
				t.Errorf("prelude_crc %d, want %d", got, want.PreludeCRC)
			}
			if got := int64(int32(crc32.ChecksumIEEE(encoded[:len(encoded)-4]))); got != want.MessageCRC {
				t.Errorf("message_crc %d, want %d", got, want.MessageCRC)
			}

			wantMsg := &Message{Payload: want.Payload}
			for i, h := range want.Headers {
				wantMsg.Headers = append(wantMsg.Headers, Header{Name: h.Name, Value: want.value(t, i)})
			}

			// Decoder, over a reader that hands out one byte at a time.
			d := NewDecoder(iotest.OneByteReader(bytes.NewReader(encoded)))
			m, err := d.Decode()
			if err != nil {
				t.Fatal(err)
			}
			assertMessageEqual(t, m, wantMsg)
			if _, err := d.Decode(); err != io.EOF {
				t.Errorf("second Decode: %v, want io.EOF", err)
			}

			// Unmarshal.
			var um Message
			if err := Unmarshal(encoded, &um); err != nil {
				t.Fatal(err)
			}
			assertMessageEqual(t, &um, wantMsg)

			// Re-encode byte for byte, from the decoded message and from
			// the JSON.
			for _, src := range []*Message{m, wantMsg} {
				again, err := AppendMessage(nil, src)
				if err != nil {
					t.Fatal(err)
				}
				if !bytes.Equal(again, encoded) {
					t.Errorf("re-encoded:\n%x\nwant\n%x", again, encoded)
				}
			}
			var buf bytes.Buffer
			if err := NewEncoder(&buf).Encode(wantMsg); err != nil || !bytes.Equal(buf.Bytes(), encoded) {
				t.Errorf("Encoder wrote %x, %v", buf.Bytes(), err)
			}
		})
	}
}

func TestCodecVectorsNegative(t *testing.T) {
	for _, path := range codecFiles(t, "negative") {
		name := filepath.Base(path)
		t.Run(name, func(t *testing.T) {
			encoded, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			expect, err := os.ReadFile(filepath.Join("testdata", "codec", "decoded", "negative", name))
			if err != nil {
				t.Fatal(err)
			}
			var kind Checksum
			var want, got uint32
			switch text := strings.TrimSpace(string(expect)); text {
			case "Prelude checksum mismatch":
				kind = PreludeChecksum
				want, got = binary.BigEndian.Uint32(encoded[8:]), crc32.ChecksumIEEE(encoded[:8])
			case "Message checksum mismatch":
				kind = MessageChecksum
				want, got = binary.BigEndian.Uint32(encoded[len(encoded)-4:]), crc32.ChecksumIEEE(encoded[:len(encoded)-4])
			default:
				t.Fatalf("unexpected expectation %q", text)
			}
			check := func(how string, err error) {
				t.Helper()
				var ce *ChecksumError
				if !errors.As(err, &ce) {
					t.Fatalf("%s: error %v, want *ChecksumError", how, err)
				}
				if ce.Checksum != kind || ce.Want != want || ce.Got != got {
					t.Errorf("%s: %+v, want %v checksum, want %#x got %#x", how, ce, kind, want, got)
				}
				if !strings.Contains(err.Error(), kind.String()+" checksum") {
					t.Errorf("%s: message %q does not name the %v checksum", how, err, kind)
				}
			}
			_, err = NewDecoder(bytes.NewReader(encoded)).Decode()
			check("Decoder", err)
			var m Message
			check("Unmarshal", Unmarshal(encoded, &m))
		})
	}
}
