package eventstream

import (
	"bytes"
	"errors"
	"io"
	"testing"
)

// TestDecoderDiscardsOversizePayloads: with DiscardPayloadsOver, a message
// whose payload exceeds the bound is returned with its headers and no
// payload, without the decoder buffering it, and the stream stays framed;
// a corrupted discarded payload still fails its CRC, and a stream cut
// inside one is io.ErrUnexpectedEOF.
func TestDecoderDiscardsOversizePayloads(t *testing.T) {
	big := bytes.Repeat([]byte("x"), 4<<20)
	var stream []byte
	for _, m := range []*Message{
		{Headers: Headers{{Name: "n", Value: StringValue("small")}}, Payload: []byte("hello")},
		{Headers: Headers{{Name: "n", Value: StringValue("big")}}, Payload: big},
		{Headers: Headers{{Name: "n", Value: StringValue("after")}}, Payload: []byte("world")},
	} {
		var err error
		if stream, err = AppendMessage(stream, m); err != nil {
			t.Fatal(err)
		}
	}
	d := NewDecoder(bytes.NewReader(stream), func(o *DecoderOptions) { o.DiscardPayloadsOver = 64 << 10 })
	for _, want := range []struct {
		name      string
		payload   string
		discarded int
	}{{"small", "hello", 0}, {"big", "", len(big)}, {"after", "world", 0}} {
		m, err := d.Decode()
		if err != nil {
			t.Fatalf("%s: %v", want.name, err)
		}
		if got := m.Headers[0].Value.String(); got != want.name || string(m.Payload) != want.payload || d.Discarded() != want.discarded {
			t.Fatalf("got %q %q discarded %d, want %+v", got, m.Payload, d.Discarded(), want)
		}
	}
	if _, err := d.Decode(); err != io.EOF {
		t.Fatalf("end: %v", err)
	}
	if cap(d.buf) > 128<<10 {
		t.Fatalf("decoder buffer grew to %d bytes for a discarded payload", cap(d.buf))
	}

	bad := bytes.Clone(stream)
	bad[len(stream)/2] ^= 1 // inside the big payload
	d = NewDecoder(bytes.NewReader(bad), func(o *DecoderOptions) { o.DiscardPayloadsOver = 64 << 10 })
	d.Decode()
	var ce *ChecksumError
	if _, err := d.Decode(); !errors.As(err, &ce) {
		t.Fatalf("corrupted discarded payload: %v, want *ChecksumError", err)
	}

	d = NewDecoder(bytes.NewReader(stream[:len(stream)/2]), func(o *DecoderOptions) { o.DiscardPayloadsOver = 64 << 10 })
	d.Decode()
	if _, err := d.Decode(); !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Fatalf("cut inside a discarded payload: %v, want io.ErrUnexpectedEOF", err)
	}
}

// TestDecoderBufferFitsPowerOfTwoPayload: a message whose payload is a
// power of two (a 64 KiB or 1 MiB part) is buffered in the size class of
// that power, its prelude, headers and CRC in the class's slack, not in
// a buffer twice its size.
func TestDecoderBufferFitsPowerOfTwoPayload(t *testing.T) {
	for _, size := range []int{64 << 10, 1 << 20} {
		m := &Message{
			Headers: Headers{{Name: ":event-type", Value: StringValue("PayloadPart")}, {Name: ":message-type", Value: StringValue("event")}},
			Payload: bytes.Repeat([]byte{1}, size),
		}
		stream, err := AppendMessage(nil, m)
		if err != nil {
			t.Fatal(err)
		}
		d := NewDecoder(bytes.NewReader(stream))
		got, err := d.Decode()
		if err != nil || len(got.Payload) != size {
			t.Fatalf("%d-byte payload: %v", size, err)
		}
		if c := cap(d.buf); c > size+classSlack {
			t.Errorf("%d-byte payload buffered in %d bytes, want at most %d", size, c, size+classSlack)
		}
		d.Shrink()
	}
}
