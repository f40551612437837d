package eventstream

import (
	"bytes"
	"io"
	"testing"
)

// lender is a Peeker over a copy of its data, lending it in spans that end
// at multiples of span (as a reader buffering in chunks would). It holds
// the decoder to the contract: bytes it discards are overwritten, so a
// message that still aliased them would change, and a Discard larger than
// the last Peek fails the test.
type lender struct {
	t        testing.TB
	data     []byte
	pos      int
	span     int
	lentTo   int // end of the last Peek's bytes, or -1
	reads    int // Read calls that copied bytes
	peeks    int
	consumed int  // bytes consumed through Discard
	block    bool // at the end of data, Peek says ErrWouldBlock
}

func newLender(t testing.TB, data []byte, span int) *lender {
	return &lender{t: t, data: bytes.Clone(data), span: span, lentTo: -1}
}

func (l *lender) Read(p []byte) (int, error) {
	l.lentTo = -1
	if l.pos == len(l.data) {
		return 0, io.EOF
	}
	n := copy(p, l.data[l.pos:])
	l.pos += n
	l.reads++
	return n, nil
}

func (l *lender) Peek() ([]byte, error) {
	l.peeks++
	end := min(len(l.data), (l.pos/l.span+1)*l.span)
	l.lentTo = end
	if l.pos == end && l.block {
		return nil, ErrWouldBlock
	}
	return l.data[l.pos:end:end], nil
}

func (l *lender) Discard(n int) {
	if l.lentTo < 0 || l.pos+n > l.lentTo {
		l.t.Fatalf("Discard(%d) at %d beyond the lent bytes (to %d)", n, l.pos, l.lentTo)
	}
	for i := l.pos; i < l.pos+n; i++ {
		l.data[i] = 0xEE
	}
	l.pos += n
	l.consumed += n
	l.lentTo = -1
}

// checkPeek decodes data from a plain reader and from a lender that lends
// span bytes at a time: the same messages, offsets and errors come out,
// whether a message is decoded in place or, when it straddles a span,
// read into the decoder's buffer.
func checkPeek(t *testing.T, data []byte, span int) {
	plain := NewDecoder(bytes.NewReader(data))
	l := newLender(t, data, span)
	lent := NewDecoder(l)
	for {
		pm, perr := plain.Decode()
		lm, lerr := lent.Decode()
		if (perr == nil) != (lerr == nil) || (perr == io.EOF) != (lerr == io.EOF) {
			t.Fatalf("span %d: plain reader %v, lender %v", span, perr, lerr)
		}
		if perr != nil {
			if perr != io.EOF && perr.Error() != lerr.Error() {
				t.Fatalf("span %d: errors differ:\n%v\n%v", span, perr, lerr)
			}
			return
		}
		if plain.Offset() != lent.Offset() || !messagesEqual(pm, lm) {
			t.Fatalf("span %d: message at offset %d/%d differs:\n%s\n%s", span, plain.Offset(), lent.Offset(), describe(pm), describe(lm))
		}
	}
}

// TestDecoderPeeker decodes a stream of messages of many sizes through
// lenders of many span sizes, so that messages are decoded in place, cut
// by a span and read into the buffer, or split across reads.
func TestDecoderPeeker(t *testing.T) {
	var stream []byte
	for _, n := range []int{0, 1, 100, 700, 4000, 5000, 17, 16 << 10} {
		m := Message{Headers: Headers{{Name: ":event-type", Value: StringValue("PayloadPart")}, {Name: "n", Value: Int32Value(int32(n))}}, Payload: bytes.Repeat([]byte{byte(n)}, n)}
		var err error
		if stream, err = AppendMessage(stream, &m); err != nil {
			t.Fatal(err)
		}
	}
	for _, span := range []int{1, 11, 12, 100, 1000, 4096, 16 << 10, 1 << 20} {
		checkPeek(t, stream, span)
		checkPeek(t, stream[:len(stream)-3], span) // cut inside the last message
		bad := bytes.Clone(stream)
		bad[len(bad)/2] ^= 1 // a CRC mismatch somewhere in the middle
		checkPeek(t, bad, span)
	}
}

// TestDecoderPeekerInPlace checks that messages a lender holds whole are
// decoded without the decoder's buffer or a Read, and that each is
// discarded from the lender only once the caller is done with it: at the
// next Decode, or at Shrink.
func TestDecoderPeekerInPlace(t *testing.T) {
	var stream []byte
	var ends []int
	for i := range 50 {
		m := Message{Headers: Headers{{Name: ":event-type", Value: StringValue("PayloadPart")}}, Payload: bytes.Repeat([]byte{byte(i)}, 640)}
		var err error
		if stream, err = AppendMessage(stream, &m); err != nil {
			t.Fatal(err)
		}
		ends = append(ends, len(stream))
	}
	l := newLender(t, stream, 1<<20)
	d := NewDecoder(l)
	for i := range 50 {
		m, err := d.Decode()
		if err != nil {
			t.Fatalf("message %d: %v", i, err)
		}
		if want := bytes.Repeat([]byte{byte(i)}, 640); !bytes.Equal(m.Payload, want) {
			t.Fatalf("message %d: wrong payload", i)
		}
		prev := 0
		if i > 0 {
			prev = ends[i-1]
		}
		if l.consumed != prev {
			t.Fatalf("after message %d: %d bytes discarded, want %d (the messages before it)", i, l.consumed, prev)
		}
		if i%10 == 9 {
			d.Shrink()
			if l.consumed != ends[i] {
				t.Fatalf("Shrink after message %d: %d bytes discarded, want %d", i, l.consumed, ends[i])
			}
		}
	}
	l.block = true // a live stream with nothing more yet
	if _, err := d.Decode(); err != ErrWouldBlock {
		t.Fatalf("nothing more lent: %v, want ErrWouldBlock", err)
	}
	if l.reads > 0 || d.buf != nil {
		t.Fatalf("decoded in place, yet %d Reads copied bytes and the decoder holds a %d-byte buffer", l.reads, len(d.buf))
	}
	l.block = false
	if _, err := d.Decode(); err != io.EOF {
		t.Fatalf("at the end: %v, want io.EOF", err)
	}
}

// TestShrinkHoldsNothing checks that a decoder waiting between messages
// after Shrink holds no buffer and no reference to the bytes its last
// message was decoded from, whether they were the lender's (in place) or
// its own (a message cut between two lends): an idle stream keeps neither
// the lender's chunk nor a buffer alive.
func TestShrinkHoldsNothing(t *testing.T) {
	m := Message{Headers: Headers{{Name: ":event-type", Value: StringValue("PayloadPart")}, {Name: "b", Value: BytesValue([]byte("bytes"))}}, Payload: bytes.Repeat([]byte{3}, 640)}
	frame, err := AppendMessage(nil, &m)
	if err != nil {
		t.Fatal(err)
	}
	for _, span := range []int{1 << 20, len(frame) / 2} { // whole in one lend; cut in two
		l := newLender(t, frame, span)
		d := NewDecoder(l)
		got, err := d.Decode()
		for err == ErrWouldBlock {
			got, err = d.Decode()
		}
		if err != nil || !bytes.Equal(got.Payload, m.Payload) {
			t.Fatalf("span %d: %v", span, err)
		}
		d.Shrink()
		if d.buf != nil || d.pooled != nil {
			t.Fatalf("span %d: the decoder holds a %d-byte buffer after Shrink", span, len(d.buf))
		}
		if d.msg.Payload != nil {
			t.Fatalf("span %d: the last payload is still referenced after Shrink", span)
		}
		for i, h := range d.msg.Headers[:cap(d.msg.Headers)] {
			if h.Name != "" || h.Value.Bytes != nil {
				t.Fatalf("span %d: header %d (%q) still referenced after Shrink", span, i, h.Name)
			}
		}
		if l.pos != len(frame) {
			t.Fatalf("span %d: %d of %d bytes taken from the lender", span, l.pos, len(frame))
		}
	}
}

// TestDecoderPeekerDiscardsPayloads checks that a payload over
// DiscardPayloadsOver is skipped through the buffer even when the lender
// holds it whole, and that decoding in place resumes after it.
func TestDecoderPeekerDiscardsPayloads(t *testing.T) {
	var stream []byte
	for _, n := range []int{10, 5000, 10} {
		m := Message{Payload: bytes.Repeat([]byte{byte(n)}, n)}
		var err error
		if stream, err = AppendMessage(stream, &m); err != nil {
			t.Fatal(err)
		}
	}
	l := newLender(t, stream, 1<<20)
	d := NewDecoder(l, func(o *DecoderOptions) { o.DiscardPayloadsOver = 100 })
	for i, n := range []int{10, 5000, 10} {
		m, err := d.Decode()
		if err != nil {
			t.Fatalf("message %d: %v", i, err)
		}
		if n > 100 {
			if m.Payload != nil || d.Discarded() != n {
				t.Fatalf("message %d: payload of %d kept (%d bytes), Discarded %d", i, n, len(m.Payload), d.Discarded())
			}
		} else if !bytes.Equal(m.Payload, bytes.Repeat([]byte{byte(n)}, n)) {
			t.Fatalf("message %d: wrong payload", i)
		}
	}
	if _, err := d.Decode(); err != io.EOF {
		t.Fatalf("at the end: %v, want io.EOF", err)
	}
}
