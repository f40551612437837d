package wsframe

import (
	"bytes"
	"errors"
	"io"
	"net"
	"strings"
	"testing"
)

// bufConn is a net.Conn reading from r and writing to w; other methods
// are not used by these tests.
type bufConn struct {
	net.Conn
	r io.Reader
	w bytes.Buffer
}

func (c *bufConn) Read(p []byte) (int, error)  { return c.r.Read(p) }
func (c *bufConn) Write(p []byte) (int, error) { return c.w.Write(p) }

// The examples of RFC 6455 §5.7.
var (
	rfcHelloUnmasked = []byte{0x81, 0x05, 0x48, 0x65, 0x6c, 0x6c, 0x6f}
	rfcHelloMasked   = []byte{0x81, 0x85, 0x37, 0xfa, 0x21, 0x3d, 0x7f, 0x9f, 0x4d, 0x51, 0x58}
	rfcFragments     = []byte{0x01, 0x03, 0x48, 0x65, 0x6c, 0x80, 0x02, 0x6c, 0x6f}
	rfcPing          = []byte{0x89, 0x05, 0x48, 0x65, 0x6c, 0x6c, 0x6f}
	rfcPongMasked    = []byte{0x8a, 0x85, 0x37, 0xfa, 0x21, 0x3d, 0x7f, 0x9f, 0x4d, 0x51, 0x58}
	rfcMaskKey       = []byte{0x37, 0xfa, 0x21, 0x3d}
)

func TestWriteFrameRFCExamples(t *testing.T) {
	for _, tc := range []struct {
		op   Opcode
		want []byte
	}{
		{OpText, rfcHelloMasked},
		{OpPong, rfcPongMasked},
	} {
		bc := &bufConn{}
		c := NewConn(bc, nil, 0, bytes.NewReader(rfcMaskKey))
		payload := []byte("Hello")
		if err := c.WriteFrame(true, tc.op, payload); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(bc.w.Bytes(), tc.want) {
			t.Errorf("%s frame = % x, want % x", tc.op, bc.w.Bytes(), tc.want)
		}
		if string(payload) != "Hello" {
			t.Errorf("WriteFrame modified its payload: %q", payload)
		}
	}
}

func TestReadFrameRFCExamples(t *testing.T) {
	input := bytes.Join([][]byte{rfcHelloUnmasked, rfcFragments[:5], rfcPing, rfcFragments[5:]}, nil)
	c := NewConn(&bufConn{r: bytes.NewReader(input)}, nil, 0, nil)
	want := []struct {
		fin     bool
		op      Opcode
		payload string
	}{
		{true, OpText, "Hello"},
		{false, OpText, "Hel"},
		{true, OpPing, "Hello"}, // a control frame inside a fragmented message
		{true, OpContinuation, "lo"},
	}
	for i, w := range want {
		f, err := c.ReadFrame()
		if err != nil {
			t.Fatalf("frame %d: %v", i, err)
		}
		if f.Fin != w.fin || f.Opcode != w.op || string(f.Payload) != w.payload {
			t.Errorf("frame %d = %v %v %q, want %v %v %q", i, f.Fin, f.Opcode, f.Payload, w.fin, w.op, w.payload)
		}
	}
	if _, err := c.ReadFrame(); err != io.EOF {
		t.Fatalf("after the last frame: %v, want io.EOF", err)
	}
}

// The three length encodings, at their boundaries, and the RFC's 256-byte
// and 64 KiB examples.
func TestHeaderLengths(t *testing.T) {
	for _, tc := range []struct {
		length int64
		want   []byte
	}{
		{0, []byte{0x82, 0x00}},
		{125, []byte{0x82, 125}},
		{126, []byte{0x82, 126, 0x00, 126}},
		{256, []byte{0x82, 0x7E, 0x01, 0x00}},
		{0xFFFF, []byte{0x82, 126, 0xFF, 0xFF}},
		{0x10000, []byte{0x82, 0x7F, 0, 0, 0, 0, 0, 1, 0, 0}},
		{1 << 40, []byte{0x82, 0x7F, 0, 0, 1, 0, 0, 0, 0, 0}},
	} {
		h := Header{Fin: true, Opcode: OpBinary, Length: tc.length}
		got := AppendHeader(nil, h)
		if !bytes.Equal(got, tc.want) {
			t.Errorf("length %d: header % x, want % x", tc.length, got, tc.want)
		}
		back, err := ReadHeader(bytes.NewReader(got))
		if err != nil || back != h {
			t.Errorf("length %d: read back %+v, %v", tc.length, back, err)
		}
		h.Masked, h.Mask = true, [4]byte{1, 2, 3, 4}
		masked := AppendHeader(nil, h)
		if back, err := ReadHeader(bytes.NewReader(masked)); err != nil || back != h {
			t.Errorf("length %d masked: read back %+v, %v", tc.length, back, err)
		}
	}
}

func TestReadFrameChecks(t *testing.T) {
	for _, tc := range []struct {
		name  string
		input []byte
		want  string // ProtocolError reason, or "too large", "eof", "unexpected"
	}{
		{"reserved bit", []byte{0xA1, 0x00}, "reserved bits 010 set without a negotiated extension"},
		{"reserved data opcode", []byte{0x83, 0x00}, "reserved opcode 0x3"},
		{"reserved control opcode", []byte{0x8B, 0x00}, "reserved opcode 0xb"},
		{"masked", rfcHelloMasked, "masked frame from the server"},
		{"fragmented ping", []byte{0x09, 0x00}, "fragmented ping frame"},
		{"long close", append([]byte{0x88, 126, 0, 126}, make([]byte, 126)...), "close frame of 126 bytes (at most 125)"},
		{"lone continuation", []byte{0x80, 0x00}, "continuation frame outside a fragmented message"},
		{"text inside a message", []byte{0x01, 0x00, 0x81, 0x00}, "text frame inside a fragmented message"},
		{"top bit of a 64-bit length", []byte{0x82, 0x7F, 0x80, 0, 0, 0, 0, 0, 0, 0}, "64-bit payload length with the most significant bit set"},
		{"over the limit, no payload read", []byte{0x82, 0x7F, 0, 0, 0, 0x10, 0, 0, 0, 0}, "too large"},
		{"empty", nil, "eof"},
		{"half a header", []byte{0x82}, "unexpected"},
		{"half an extended length", []byte{0x82, 126, 1}, "unexpected"},
		{"half a payload", []byte{0x82, 0x05, 'a', 'b'}, "unexpected"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := NewConn(&bufConn{r: bytes.NewReader(tc.input)}, nil, 1<<20, nil)
			var err error
			for err == nil {
				_, err = c.ReadFrame()
			}
			var pe *ProtocolError
			var fe *FrameTooLargeError
			switch tc.want {
			case "too large":
				if !errors.As(err, &fe) || !errors.Is(err, ErrFrameTooLarge) || fe.Length != 1<<36 || fe.Limit != 1<<20 {
					t.Fatalf("err = %v, want a FrameTooLargeError", err)
				}
			case "eof":
				if err != io.EOF {
					t.Fatalf("err = %v, want io.EOF", err)
				}
			case "unexpected":
				if err != io.ErrUnexpectedEOF {
					t.Fatalf("err = %v, want io.ErrUnexpectedEOF", err)
				}
			default:
				if !errors.As(err, &pe) || pe.Reason != tc.want {
					t.Fatalf("err = %v, want protocol error %q", err, tc.want)
				}
			}
		})
	}
}

func TestWriteFrameRules(t *testing.T) {
	c := NewConn(&bufConn{}, nil, 0, nil)
	if err := c.WriteFrame(false, OpPing, nil); err == nil {
		t.Error("wrote a fragmented ping")
	}
	if err := c.WriteFrame(true, OpClose, make([]byte, 126)); err == nil {
		t.Error("wrote a close frame of 126 bytes")
	}
	if err := c.WriteFrame(true, Opcode(3), nil); err == nil {
		t.Error("wrote a reserved opcode")
	}
	if err := c.WriteFrame(true, OpContinuation, nil); err == nil {
		t.Error("wrote a continuation outside a message")
	}
	if err := c.WriteFrame(false, OpBinary, []byte("a")); err != nil {
		t.Fatal(err)
	}
	if err := c.WriteFrame(true, OpPing, nil); err != nil {
		t.Errorf("a ping inside a fragmented message: %v", err)
	}
	if err := c.WriteFrame(true, OpText, nil); err == nil {
		t.Error("wrote a text frame inside a fragmented message")
	}
	if err := c.WriteFrame(true, OpContinuation, []byte("b")); err != nil {
		t.Fatal(err)
	}
	if err := c.WriteFrame(true, OpText, nil); err != nil {
		t.Errorf("a text frame after the message: %v", err)
	}
}

// A payload larger than the masking buffer is masked continuously across
// its pieces.
func TestWriteFrameLargePayload(t *testing.T) {
	payload := make([]byte, 70000)
	for i := range payload {
		payload[i] = byte(i * 7)
	}
	bc := &bufConn{}
	c := NewConn(bc, nil, 0, strings.NewReader("\x01\x02\x03\x04"))
	if err := c.WriteFrame(true, OpBinary, payload); err != nil {
		t.Fatal(err)
	}
	out := bc.w.Bytes()
	h, err := ReadHeader(bytes.NewReader(out))
	if err != nil || !h.Masked || h.Length != 70000 || h.Mask != [4]byte{1, 2, 3, 4} {
		t.Fatalf("header %+v, %v", h, err)
	}
	body := out[len(out)-70000:]
	for i := range body {
		if body[i]^h.Mask[i%4] != payload[i] {
			t.Fatalf("byte %d masked wrongly", i)
		}
	}
}

func TestMaskBytesInPieces(t *testing.T) {
	key := [4]byte{0xde, 0xad, 0xbe, 0xef}
	whole := []byte("the quick brown fox jumps")
	pieces := bytes.Clone(whole)
	MaskBytes(key, 0, whole)
	pos := 0
	for _, n := range []int{3, 1, 7, 14} {
		pos = MaskBytes(key, pos, pieces[pos:pos+n])
	}
	if !bytes.Equal(whole, pieces) {
		t.Fatalf("masking in pieces differs: % x vs % x", pieces, whole)
	}
}

// ClosePayload refuses forbidden codes and sends only valid UTF-8.
func TestClosePayloadValidates(t *testing.T) {
	if got := ClosePayload(1000, "a\xffb"); string(got[2:]) != "a\uFFFDb" {
		t.Errorf("invalid UTF-8 reason sent as %q", got[2:])
	}
	for _, code := range []int{0, 999, 1005, 1006, 1015, 2000, 5000} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("ClosePayload(%d) did not panic", code)
				}
			}()
			ClosePayload(code, "")
		}()
	}
}

func TestClosePayload(t *testing.T) {
	if got := ClosePayload(1000, ""); !bytes.Equal(got, []byte{0x03, 0xe8}) {
		t.Errorf("ClosePayload(1000) = % x", got)
	}
	long := strings.Repeat("a", 122) + "é" + "bc" // the é straddles byte 123
	got := ClosePayload(4000, long)
	if len(got) != 2+122 || string(got[2:]) != strings.Repeat("a", 122) {
		t.Errorf("long reason cut to %d bytes: %q", len(got)-2, got[2:])
	}
	for _, tc := range []struct {
		payload []byte
		code    int
		reason  string
		err     bool
	}{
		{nil, CloseNoStatus, "", false},
		{[]byte{3}, 0, "", true},
		{[]byte{0x0f, 0xa1, 'b', 'y', 'e'}, 4001, "bye", false},
		{[]byte{0x03, 0xeb}, 1003, "", false},
		{[]byte{0x03, 0xf6}, 1014, "", false},
		{[]byte{0x13, 0x87}, 4999, "", false},
		{[]byte{0x0b, 0xb8}, 3000, "", false},
		// Forbidden on the wire (RFC 6455 §7.4): reported as protocol
		// errors, never echoed.
		{[]byte{0x00, 0x00}, 0, "", true},
		{[]byte{0x03, 0xe7}, 999, "", true},
		{[]byte{0x03, 0xec}, 1004, "", true},
		{[]byte{0x03, 0xed}, 1005, "", true},
		{[]byte{0x03, 0xee}, 1006, "", true},
		{[]byte{0x03, 0xf7}, 1015, "", true},
		{[]byte{0x03, 0xf8}, 1016, "", true},
		{[]byte{0x0b, 0xb7}, 2999, "", true},
		{[]byte{0x13, 0x88}, 5000, "", true},
		{[]byte{0xff, 0xff}, 65535, "", true},
		{[]byte{0x03, 0xe8, 0xff, 0xfe}, 1000, "", true}, // reason not UTF-8
	} {
		code, reason, err := ParseClose(tc.payload)
		if code != tc.code || reason != tc.reason || (err != nil) != tc.err {
			t.Errorf("ParseClose(% x) = %d %q %v", tc.payload, code, reason, err)
		}
	}
}
