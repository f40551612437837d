package bidi

import (
	"bytes"
	"context"
	"errors"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"

	"github.com/sagemaker-bidi/sagemaker-bidi/eventstream"
	"github.com/sagemaker-bidi/sagemaker-bidi/internal/wire"
)

var (
	testCreds = aws.Credentials{AccessKeyID: "AKID", SecretAccessKey: "SECRET"}
	seedA     = bytes.Repeat([]byte{0xa}, 32)
	seedB     = bytes.Repeat([]byte{0xb}, 32)
	fixedNow  = func() time.Time { return time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC) }
)

func testSigner(seed []byte) *eventstream.Signer {
	return eventstream.NewSigner(testCreds, "us-west-2", signingName, seed, func(o *eventstream.SignerOptions) { o.Now = fixedNow })
}

// partMessage is a PayloadPart with payload s.
func partMessage(s string) *wire.Part {
	return &wire.Part{Bytes: []byte(s), DataType: wire.DataTypeUTF8, CompletionState: wire.CompletionComplete}
}

// verifyStream decodes envelopes from b, verifies them against the chain
// from seed and returns the payloads of the inner messages ("<end>" for
// the end frame).
func verifyStream(t *testing.T, b []byte, seed []byte) []string {
	t.Helper()
	v := eventstream.NewVerifier(testCreds, "us-west-2", signingName, seed)
	dec := eventstream.NewDecoder(bytes.NewReader(b))
	var out []string
	for {
		env, err := dec.Decode()
		if err == io.EOF {
			return out
		}
		if err != nil {
			t.Fatalf("decode: %v", err)
		}
		inner, err := v.Verify(env)
		if err != nil {
			t.Fatalf("verify envelope %d: %v", len(out), err)
		}
		if len(inner) == 0 {
			out = append(out, "<end>")
			continue
		}
		var m eventstream.Message
		if err := eventstream.Unmarshal(inner, &m); err != nil {
			t.Fatal(err)
		}
		out = append(out, string(m.Payload))
	}
}

// reader drains a body with reads of size n in a goroutine, as the
// engine's writer does (ReadNow, then wait for the ready callback), and
// returns what it read when the body ends.
func reader(b *reqBody, n int) <-chan []byte {
	ready := make(chan struct{}, 1)
	b.Bind(func() { signal(ready) })
	ch := make(chan []byte, 1)
	go func() {
		var all []byte
		buf := make([]byte, n)
		for {
			k, err := b.ReadNow(buf)
			all = append(all, buf[:k]...)
			switch {
			case err == eventstream.ErrWouldBlock:
				<-ready
			case err != nil:
				ch <- all
				return
			}
		}
	}()
	return ch
}

func newTestPipe(limit int) *sendPipe {
	p := new(sendPipe)
	p.init(limit)
	return p
}

// mustEnqueue queues m, failing if the queue is full.
func mustEnqueue(t *testing.T, p *sendPipe, m *wire.Part) {
	t.Helper()
	if full, err := p.enqueue(m); full != nil || err != nil {
		t.Fatalf("enqueue = full %v, %v", full != nil, err)
	}
}

func TestEnvelopeLayout(t *testing.T) {
	end := testSigner(seedA).AppendEnd(nil)
	if len(end) != envelopeOverhead {
		t.Fatalf("end frame is %d bytes, envelopeOverhead %d", len(end), envelopeOverhead)
	}
	inner, _ := wire.AppendPartMessage(nil, partMessage("xyz"))
	env, _ := testSigner(seedA).AppendPayload(nil, inner)
	if !bytes.Equal(env[envelopePrefix:len(env)-4], inner) {
		t.Fatal("the inner message is not at envelopePrefix")
	}
}

// TestPipeSmallReads: envelopes larger than the transport's buffer are
// read in pieces, and the result verifies.
func TestPipeSmallReads(t *testing.T) {
	for _, n := range []int{1, 7, 100, 64 << 10} {
		p := newTestPipe(1 << 20)
		b := newReqBody(p, testSigner(seedA))
		p.attach(b)
		for _, s := range []string{"first", "", string(bytes.Repeat([]byte("x"), 1000))} {
			mustEnqueue(t, p, partMessage(s))
		}
		p.end()
		got := verifyStream(t, <-reader(b, n), seedA)
		if len(got) != 4 || got[0] != "first" || got[1] != "" || len(got[2]) != 1000 || got[3] != "<end>" {
			t.Fatalf("reads of %d: got %q", n, got)
		}
	}
}

// TestPipeBatches: one Read takes every queued part that fits.
func TestPipeBatches(t *testing.T) {
	p := newTestPipe(0)
	b := newReqBody(p, testSigner(seedA))
	p.attach(b)
	for i := range 10 {
		mustEnqueue(t, p, partMessage(strings.Repeat("b", i)))
	}
	buf := make([]byte, 64<<10)
	n, err := b.ReadNow(buf)
	if err != nil {
		t.Fatal(err)
	}
	if got := verifyStream(t, buf[:n], seedA); len(got) != 10 {
		t.Fatalf("one Read carried %d envelopes, want 10", len(got))
	}
	if len(p.q) != 0 {
		t.Fatalf("%d bytes left in the queue after the parts were taken (no replay)", len(p.q))
	}
}

// TestPipeQueueBound: the queue admits parts up to sendQueueBytes (a large
// part only when it is empty) and makes room as the transport reads.
func TestPipeQueueBound(t *testing.T) {
	p := newTestPipe(0)
	b := newReqBody(p, testSigner(seedA))
	p.attach(b)
	part := partMessage(strings.Repeat("q", 1000))
	queued := 0
	var full <-chan struct{}
	for {
		var err error
		full, err = p.enqueue(part)
		if err != nil {
			t.Fatal(err)
		}
		if full != nil {
			break
		}
		queued++
	}
	if size := wire.PartMessageLen(part); queued*size > sendQueueBytes || (queued+1)*size <= sendQueueBytes {
		t.Fatalf("%d parts of %d bytes queued, bound %d", queued, size, sendQueueBytes)
	}
	select {
	case <-full:
		t.Fatal("room signalled before a Read")
	default:
	}
	if _, err := b.ReadNow(make([]byte, 8<<10)); err != nil {
		t.Fatal(err)
	}
	select {
	case <-full:
	default:
		t.Fatal("no room signalled after a Read")
	}
	mustEnqueue(t, p, part)

	big := newTestPipe(0)
	mustEnqueue(t, big, partMessage(strings.Repeat("B", 2*sendQueueBytes)))
	if full, _ := big.enqueue(part); full == nil {
		t.Fatal("a part was queued behind an oversized one")
	}
}

// TestPipeReplay: a new body (a retried attempt, new seed) first sends
// what the earlier one sent, re-signed on its own chain, then continues.
func TestPipeReplay(t *testing.T) {
	p := newTestPipe(1 << 20)
	b1 := newReqBody(p, testSigner(seedA))
	p.attach(b1)
	mustEnqueue(t, p, partMessage("one"))
	mustEnqueue(t, p, partMessage("two"))
	buf := make([]byte, 4096)
	n, _ := b1.ReadNow(buf)
	if got := verifyStream(t, buf[:n], seedA); len(got) != 2 {
		t.Fatalf("b1 sent %q", got)
	}
	mustEnqueue(t, p, partMessage("three"))

	b2 := newReqBody(p, testSigner(seedB))
	if err := p.attach(b2); err != nil {
		t.Fatal(err)
	}
	if _, err := b1.ReadNow(buf); err != errBodyDone {
		t.Fatalf("superseded body Read = %v", err)
	}
	p.end()
	got := verifyStream(t, <-reader(b2, 4096), seedB)
	if want := "one two three <end>"; strings.Join(got, " ") != want {
		t.Fatalf("b2 sent %q, want %q", got, want)
	}

	// Once the service has answered, nothing is kept.
	p.stopReplay()
	if len(p.q) != 0 || p.canReplay() {
		t.Fatal("replay records kept after stopReplay")
	}
}

// TestPipeReplayLimit: past the limit the records are dropped and a new
// attempt is refused.
func TestPipeReplayLimit(t *testing.T) {
	p := newTestPipe(100)
	b := newReqBody(p, testSigner(seedA))
	p.attach(b)
	mustEnqueue(t, p, partMessage(strings.Repeat("x", 200)))
	b.ReadNow(make([]byte, 4096))
	if p.canReplay() {
		t.Fatal("canReplay after exceeding the limit")
	}
	if err := p.attach(newReqBody(p, testSigner(seedB))); err == nil {
		t.Fatal("attach succeeded without the records")
	}
}

func TestBackoff(t *testing.T) {
	for n := 1; n < 20; n++ {
		ceil := min(retryBaseDelay<<(n-1), time.Second)
		if n > 10 {
			ceil = time.Second
		}
		for range 50 {
			if d := retryBackoff(n, time.Second); d < 0 || d > ceil {
				t.Fatalf("retryBackoff(%d) = %v, want within [0, %v]", n, d, ceil)
			}
		}
	}
}

func TestPipeFail(t *testing.T) {
	var p sendPipe
	p.init(0)
	b := newReqBody(&p, testSigner(seedA))
	p.attach(b)
	boom := errors.New("boom")
	if n, err := b.ReadNow(make([]byte, 10)); n != 0 || err != eventstream.ErrWouldBlock {
		t.Fatalf("ReadNow of an empty body = %d, %v; want 0, ErrWouldBlock", n, err)
	}
	p.fail(boom)
	if _, err := b.ReadNow(make([]byte, 10)); err == nil {
		t.Fatal("ReadNow succeeded after fail")
	}
}

// TestEncodePartAllocs: encoding a part allocates nothing once the
// session's buffers have grown.
func TestEncodePartAllocs(t *testing.T) {
	c := &Client{options: Options{Padding: BucketPadding, PaddingSource: bytes.NewReader(make([]byte, 1<<20))}}
	s := &Session{c: c, opts: &c.options, ctx: context.Background()}
	s.state.init(&s.pipe.mu)
	data := make([]byte, 256)
	var part wire.Part
	s.encodePart(context.Background(), Part{Data: data, Complete: true}, &part)
	if n := testing.AllocsPerRun(100, func() {
		if err := s.encodePart(context.Background(), Part{Data: data, Type: DataTypeUTF8, Complete: true}, &part); err != nil {
			t.Fatal(err)
		}
	}); n != 0 {
		t.Fatalf("encodePart allocates %v times", n)
	}
}

// TestEncodePartContentType: like aws-sdk-go-v2, a part without payload
// carries no :content-type (docs/wire.md §4.1); a part with payload does.
func TestEncodePartContentType(t *testing.T) {
	c := &Client{options: Options{Padding: noPadding}}
	s := &Session{c: c, opts: &c.options}
	for _, data := range [][]byte{nil, {}, []byte("x")} {
		var part wire.Part
		if err := s.encodePart(context.Background(), Part{Data: data, Complete: true}, &part); err != nil {
			t.Fatal(err)
		}
		b, err := wire.AppendPartMessage(nil, &part)
		if err != nil {
			t.Fatal(err)
		}
		var m eventstream.Message
		if err := eventstream.Unmarshal(b, &m); err != nil {
			t.Fatal(err)
		}
		_, has := m.Headers.Get(wire.ContentTypeHeader)
		if want := len(data) > 0; has != want {
			t.Errorf("%d-byte part: :content-type present %v, want %v", len(data), has, want)
		}
	}
}

// TestPipeFramed: once the service answered (stopReplay), parts queued
// before are signed then, a part is signed when Send queues it (the queue
// holds finished envelopes before any read), and the writer's reads only
// copy them: the stream verifies on one chain across the switch, for
// reads of every size, and an end frame requested before or after the
// switch ends it.
func TestPipeFramed(t *testing.T) {
	for _, n := range []int{1, 7, 100, 64 << 10} {
		for _, endBefore := range []bool{false, true} {
			p := newTestPipe(1 << 20)
			b := newReqBody(p, testSigner(seedA))
			p.attach(b)
			mustEnqueue(t, p, partMessage("one"))
			mustEnqueue(t, p, partMessage(strings.Repeat("2", 300)))
			// The writer is in the middle of the second envelope.
			buf := make([]byte, 200)
			k, err := b.ReadNow(buf[:min(n, 200)])
			if err != nil {
				t.Fatal(err)
			}
			head := append([]byte(nil), buf[:k]...)
			mustEnqueue(t, p, partMessage("three"))
			if endBefore {
				p.end()
			}
			p.stopReplay()
			if !p.framed {
				t.Fatal("not framed after stopReplay")
			}
			want := "one " + strings.Repeat("2", 300) + " three"
			if !endBefore {
				mustEnqueue(t, p, partMessage("four"))
				// Signed by enqueue, before any read: the queue's last
				// envelope verifies on its own, chained after "three".
				want += " four"
				p.end()
			}
			rest := <-reader(b, n)
			got := verifyStream(t, append(head, rest...), seedA)
			if strings.Join(got, " ") != want+" <end>" {
				t.Fatalf("reads of %d, end before the switch %v: got %q", n, endBefore, got)
			}
			if len(p.q) != 0 {
				t.Fatalf("%d bytes kept after every envelope was taken", len(p.q))
			}
		}
	}
}

// TestPipeFramedSignsOnEnqueue: in framed mode a queued part is a finished
// envelope before the writer reads it, so the writer's read is a copy.
func TestPipeFramedSignsOnEnqueue(t *testing.T) {
	p := newTestPipe(0)
	b := newReqBody(p, testSigner(seedA))
	p.attach(b)
	p.stopReplay()
	mustEnqueue(t, p, partMessage("signed by Send"))
	queued := append([]byte(nil), p.q...)
	if got := verifyStream(t, queued, seedA); len(got) != 1 || got[0] != "signed by Send" {
		t.Fatalf("queue holds %q, want one signed envelope", got)
	}
	buf := make([]byte, 4096)
	n, err := b.ReadNow(buf)
	if err != nil || !bytes.Equal(buf[:n], queued) {
		t.Fatalf("ReadNow = %d, %v; want the queued envelope as it is", n, err)
	}
}

// TestPipeFramedQueueBound: in framed mode the queue admits envelopes up
// to sendQueueBytes (a large one only when it is empty), and a part that
// finds no room is not signed: the chain does not advance for it.
func TestPipeFramedQueueBound(t *testing.T) {
	p := newTestPipe(0)
	b := newReqBody(p, testSigner(seedA))
	p.attach(b)
	p.stopReplay()
	part := partMessage(strings.Repeat("q", 1000))
	queued := 0
	var full <-chan struct{}
	for {
		var err error
		full, err = p.enqueue(part)
		if err != nil {
			t.Fatal(err)
		}
		if full != nil {
			break
		}
		queued++
	}
	if size := wire.PartMessageLen(part) + envelopeOverhead; queued*size > sendQueueBytes || (queued+1)*size <= sendQueueBytes {
		t.Fatalf("%d envelopes of %d bytes queued, bound %d", queued, size, sendQueueBytes)
	}
	sig := p.signer.PrevSignature()
	if full, _ := p.enqueue(part); full == nil || p.signer.PrevSignature() != sig {
		t.Fatal("a part refused for want of room advanced the chain")
	}
	first := make([]byte, 8<<10)
	n, err := b.ReadNow(first)
	if err != nil {
		t.Fatal(err)
	}
	select {
	case <-full:
	default:
		t.Fatal("no room signalled after a Read")
	}
	mustEnqueue(t, p, part)
	p.end()
	if got := verifyStream(t, append(first[:n], <-reader(b, 8<<10)...), seedA); len(got) != queued+2 || got[len(got)-1] != "<end>" {
		t.Fatalf("stream carried %d envelopes, want %d parts and the end", len(got), queued+1)
	}
}
