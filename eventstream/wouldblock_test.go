package eventstream

import (
	"bytes"
	"errors"
	"io"
	"runtime"
	"testing"
	"weak"
)

// stutterReader is a non-blocking source: it hands out its data a few
// bytes at a time and says ErrWouldBlock between the pieces.
type stutterReader struct {
	data    []byte
	step    int  // bytes per piece (at least 1)
	blocked bool // the last call returned ErrWouldBlock
	blocks  int  // ErrWouldBlock returned so far
}

func (r *stutterReader) Read(p []byte) (int, error) {
	if !r.blocked {
		r.blocked = true
		r.blocks++
		return 0, ErrWouldBlock
	}
	r.blocked = false
	if len(r.data) == 0 {
		return 0, io.EOF
	}
	n := copy(p[:min(len(p), r.step)], r.data)
	r.data = r.data[n:]
	return n, nil
}

// checkResume decodes data from a source that blocks between every few
// bytes and from one that does not, both discarding payloads over a
// bound: Decode returns ErrWouldBlock unwrapped, and once resumed, the
// same messages, offsets and final error come out.
func checkResume(t *testing.T, data []byte, step int) {
	const bound = 16
	opt := func(o *DecoderOptions) { o.DiscardPayloadsOver = bound }
	plain := NewDecoder(bytes.NewReader(data), opt)
	sr := &stutterReader{data: data, step: step}
	res := NewDecoder(sr, opt)
	for {
		pm, perr := plain.Decode()
		var rm *Message
		var rerr error
		for {
			rm, rerr = res.Decode()
			if rerr != ErrWouldBlock {
				break
			}
		}
		if errors.Is(rerr, ErrWouldBlock) {
			t.Fatalf("ErrWouldBlock wrapped: %v", rerr)
		}
		if (perr == nil) != (rerr == nil) || (perr == io.EOF) != (rerr == io.EOF) {
			t.Fatalf("step %d: blocking source %v, non-blocking %v", step, perr, rerr)
		}
		if perr != nil {
			return
		}
		if plain.Offset() != res.Offset() || plain.Discarded() != res.Discarded() || len(pm.Headers) != len(rm.Headers) || !bytes.Equal(pm.Payload, rm.Payload) {
			t.Fatalf("step %d: message differs at offset %d/%d (discarded %d/%d)", step, plain.Offset(), res.Offset(), plain.Discarded(), res.Discarded())
		}
	}
}

// TestDecodeResumes runs checkResume over messages that are kept and
// messages whose payload is discarded, cut at every step size up to past
// a whole message.
func TestDecodeResumes(t *testing.T) {
	var stream []byte
	for _, n := range []int{0, 5, 16, 17, 300, 5000} {
		m := Message{Headers: Headers{{Name: ":event-type", Value: StringValue("PayloadPart")}}, Payload: bytes.Repeat([]byte{byte(n)}, n)}
		var err error
		if stream, err = AppendMessage(stream, &m); err != nil {
			t.Fatal(err)
		}
	}
	for _, step := range []int{1, 2, 3, 7, 12, 13, 100, 4096, 1 << 20} {
		checkResume(t, stream, step)
		checkResume(t, stream[:len(stream)-3], step) // cut inside the last message
	}
	sr := &stutterReader{data: stream, step: 1}
	d := NewDecoder(sr)
	n := 0
	for {
		_, err := d.Decode()
		if err == io.EOF {
			break
		}
		if err == nil {
			n++
		} else if err != ErrWouldBlock {
			t.Fatal(err)
		}
	}
	if n != 6 || sr.blocks < len(stream) {
		t.Fatalf("%d messages, %d blocks for %d bytes", n, sr.blocks, len(stream))
	}
}

// TestShrink: after a large message from a non-blocking source, Shrink
// leaves the decoder with its small buffer (nothing unread is dropped:
// with input pending it does nothing), and the next message decodes.
func TestShrink(t *testing.T) {
	var stream []byte
	for _, n := range []int{100 << 10, 10} {
		m := Message{Headers: Headers{{Name: "n", Value: Int32Value(int32(n))}}, Payload: bytes.Repeat([]byte{7}, n)}
		stream, _ = AppendMessage(stream, &m)
	}
	first, _ := AppendMessage(nil, &Message{Headers: Headers{{Name: "n", Value: Int32Value(100 << 10)}}, Payload: bytes.Repeat([]byte{7}, 100<<10)})
	sr := &stutterReader{data: stream[:len(first)], step: 1 << 20}
	d := NewDecoder(sr)
	var m *Message
	var err error
	for m, err = d.Decode(); err == ErrWouldBlock; m, err = d.Decode() {
	}
	if err != nil || len(m.Payload) != 100<<10 || len(d.buf) <= keepBufferLen {
		t.Fatalf("first message: %v, buffer %d", err, len(d.buf))
	}
	d.Shrink()
	if len(d.buf) > keepBufferLen {
		t.Fatalf("buffer of %d bytes after Shrink", len(d.buf))
	}
	sr.data = stream[len(first):]
	for m, err = d.Decode(); err == ErrWouldBlock; m, err = d.Decode() {
	}
	if err != nil || len(m.Payload) != 10 {
		t.Fatalf("second message: %v", err)
	}

	// With unread input, Shrink keeps the buffer.
	d = NewDecoder(bytes.NewReader(append(bytes.Clone(first), stream[len(first):len(first)+5]...)))
	if _, err := d.Decode(); err != nil {
		t.Fatal(err)
	}
	size := len(d.buf)
	d.Shrink()
	if d.end-d.start != 5 || len(d.buf) != size {
		t.Fatalf("Shrink with 5 unread bytes: %d unread, buffer %d → %d", d.end-d.start, size, len(d.buf))
	}
}

// TestShrinkDropsReferences: once Shrink gave the buffer back, nothing in
// the decoder keeps it alive (the last message's payload and header
// values alias it): when its pool lets it go, it is collected.
func TestShrinkDropsReferences(t *testing.T) {
	m := Message{
		Headers: Headers{{Name: "s", Value: StringValue("a header value that aliases the buffer")}, {Name: "b", Value: BytesValue([]byte("bytes"))}},
		Payload: bytes.Repeat([]byte{1}, 200<<10),
	}
	frame, _ := AppendMessage(nil, &m)
	d := NewDecoder(&stutterReader{data: frame, step: 1 << 20})
	var got *Message
	var err error
	for got, err = d.Decode(); err == ErrWouldBlock; got, err = d.Decode() {
	}
	if err != nil {
		t.Fatal(err)
	}
	wp := weak.Make(&got.Payload[0])
	got = nil
	d.Shrink()
	for range 3 { // the pool keeps its buffers for up to two collections
		runtime.GC()
	}
	if wp.Value() != nil {
		t.Fatal("the decoder's large buffer is still reachable after Shrink")
	}
	runtime.KeepAlive(d)
}
