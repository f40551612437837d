package transport

import (
	"bytes"
	"errors"
	"io"
	"testing"

	"golang.org/x/net/http2"

	"github.com/sagemaker-bidi/sagemaker-bidi/eventstream"
)

// TestRecvBufferPeek lends the first chunk, consumes it in pieces, and
// reads the rest: the bytes come out in order, a lent slice cannot be
// appended into the chunk, and a buffer emptied by Discard holds no
// chunk.
func TestRecvBufferPeek(t *testing.T) {
	var b recvBuffer
	want := make([]byte, recvChunkSize+5000)
	for i := range want {
		want[i] = byte(i * 7)
	}
	b.write(want[:10000])
	b.write(want[10000:])
	p := b.peek()
	if len(p) != recvChunkSize || cap(p) != len(p) || !bytes.Equal(p, want[:recvChunkSize]) {
		t.Fatalf("peek: %d bytes (cap %d), want the first chunk, capped", len(p), cap(p))
	}
	b.discard(100)
	if p := b.peek(); !bytes.Equal(p, want[100:recvChunkSize]) {
		t.Fatalf("peek after discard: %d bytes", len(p))
	}
	b.discard(recvChunkSize - 100)
	got := make([]byte, 10000)
	n := b.read(got)
	if !bytes.Equal(got[:n], want[recvChunkSize:]) || b.len() != 0 || len(b.chunks) != 0 || b.lent {
		t.Fatalf("read after discards: %d bytes; %d left in %d chunks, lent %v", n, b.len(), len(b.chunks), b.lent)
	}
}

// TestRecvBufferReleaseKeepsLentChunk: a buffer dropped (its stream
// closed) while its first chunk is lent must not give that chunk to the
// pool, where the read loop of another stream would write over the bytes
// the borrower is still decoding. Small and full chunks alike.
func TestRecvBufferReleaseKeepsLentChunk(t *testing.T) {
	for _, size := range []int{1000, 10000} {
		var b recvBuffer
		b.write(bytes.Repeat([]byte{'a'}, size))
		p := b.peek()
		b.release()
		// Take chunks from the pool as other streams would, and write them.
		var taken [][]byte
		for range 64 {
			c := getChunk(size)
			for i := range c {
				c[i] = 'x'
			}
			taken = append(taken, c)
		}
		for _, c := range taken {
			putChunk(c)
		}
		if !bytes.Equal(p, bytes.Repeat([]byte{'a'}, size)) {
			t.Fatalf("a lent chunk (%d bytes) was reused after release", size)
		}
	}
}

// TestRecvBufferChunkSizes: a frame's bytes that fit a small chunk go
// into one, larger ones into full chunks, and the bytes come out in
// order across chunks of both sizes.
func TestRecvBufferChunkSizes(t *testing.T) {
	var b recvBuffer
	var want []byte
	add := func(n int) {
		p := make([]byte, n)
		for i := range p {
			p[i] = byte(len(want) + i)
		}
		want = append(want, p...)
		b.write(p)
	}
	add(640)
	if len(b.chunks) != 1 || len(b.chunks[0]) != smallChunkSize {
		t.Fatalf("640 bytes in %d chunks, the first of %d bytes; want one small chunk", len(b.chunks), len(b.chunks[0]))
	}
	add(640)
	add(640)
	add(640) // fills the small chunk and starts another small one
	if len(b.chunks) != 2 || len(b.chunks[1]) != smallChunkSize {
		t.Fatalf("2,560 bytes of small frames in %d chunks", len(b.chunks))
	}
	add(10000) // the rest of the second chunk, then a full one
	if last := b.chunks[len(b.chunks)-1]; len(last) != recvChunkSize {
		t.Fatalf("a 10,000-byte frame's last chunk holds %d bytes, want a full chunk", len(last))
	}
	var got []byte
	for b.len() > 0 {
		p := b.peek()
		got = append(got, p...)
		b.discard(len(p))
	}
	if !bytes.Equal(got, want) || len(b.chunks) != 0 {
		t.Fatalf("read %d bytes of %d (in order: %v), %d chunks left", len(got), len(want), bytes.Equal(got, want), len(b.chunks))
	}
}

// FuzzRecvBuffer runs writes, peeks, discards, reads and a release in
// the order the input gives, and checks the bytes against a plain
// slice: in order, none lost or repeated, and the chunks consistent
// with the count.
func FuzzRecvBuffer(f *testing.F) {
	f.Add([]byte{0, 10, 1, 2, 5, 3, 20})
	f.Add([]byte{0, 255, 0, 3, 0, 200, 1, 2, 9, 3, 255, 3, 255})
	f.Add([]byte{0, 1, 1, 4, 0, 40})
	f.Fuzz(func(t *testing.T, ops []byte) {
		var b recvBuffer
		var want []byte // what was written and not yet consumed
		next := byte(0)
		for i := 0; i+1 < len(ops); i += 2 {
			arg := int(ops[i+1])
			switch ops[i] % 5 {
			case 0: // write a frame of arg*73 bytes (up to 18,615: small and full chunks)
				p := make([]byte, arg*73)
				for j := range p {
					p[j] = next
					next++
				}
				b.write(p)
				want = append(want, p...)
			case 1: // peek
				p := b.peek()
				if !bytes.Equal(p, want[:len(p)]) || (len(p) == 0) != (len(want) == 0) {
					t.Fatalf("peek: %d bytes, not the next ones (%d buffered)", len(p), len(want))
				}
			case 2: // discard arg*37 bytes of what peek lends
				n := min(arg*37, len(b.peek()))
				b.discard(n)
				want = want[n:]
			case 3: // read up to arg*91 bytes
				got := make([]byte, arg*91)
				n := b.read(got)
				if n != min(len(got), len(want)) || !bytes.Equal(got[:n], want[:n]) {
					t.Fatalf("read %d of %d bytes, not the next ones", n, len(got))
				}
				want = want[n:]
			case 4:
				if arg%8 == 0 {
					b.release()
					want = nil
				}
			}
			if b.len() != len(want) {
				t.Fatalf("len %d, want %d", b.len(), len(want))
			}
			held := 0
			for j, c := range b.chunks {
				if len(c) != smallChunkSize && len(c) != recvChunkSize {
					t.Fatalf("chunk %d of %d bytes", j, len(c))
				}
				held += len(c)
			}
			if len(b.chunks) > 0 && held-b.r-(len(b.chunks[len(b.chunks)-1])-b.w) != b.n {
				t.Fatalf("chunks hold %d bytes from r=%d to w=%d, count %d", held, b.r, b.w, b.n)
			}
		}
	})
}

// TestStreamPeekDiscard reads a response only with Peek and Discard: the
// bytes arrive in order, discarded bytes give their window back (the
// server can send more than one window's worth), and the end is io.EOF.
func TestStreamPeekDiscard(t *testing.T) {
	const total = 3 * DefaultStreamWindow / 2
	want := make([]byte, total)
	for i := range want {
		want[i] = byte(i * 13)
	}
	updates := make(chan uint32, 64)
	srv := newTestServer(t, serverOpts{}, func(sc *serverConn) {
		sc.handshake()
		h := sc.headers()
		sc.writeHeaders(h.StreamID, 200, false)
		frames := sc.frames()
		window := int(DefaultStreamWindow)
		for off := 0; off < total; {
			for window == 0 {
				f, ok := <-frames
				if !ok {
					return
				}
				if f.Type == http2.FrameWindowUpdate && f.StreamID == h.StreamID {
					window += int(f.Increment)
					updates <- f.Increment
				}
			}
			n := min(window, total-off, 16<<10)
			sc.writeData(h.StreamID, off+n == total, want[off:off+n])
			off += n
			window -= n
		}
		for range frames {
		}
	})
	tr := newTransport(t, testConfig(nil))
	ctx := testCtx(t)
	st, err := tr.NewStream(ctx, srv.url, nil, bodyOf(""))
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := st.Response(ctx); err != nil {
		t.Fatal(err)
	}
	wake := make(chan struct{}, 1)
	st.SetNotify(func() {
		select {
		case wake <- struct{}{}:
		default:
		}
	})
	var got []byte
	for {
		p, err := st.Peek()
		if len(p) > 0 {
			got = append(got, p...)
			st.Discard(len(p))
			continue
		}
		if err == io.EOF {
			break
		}
		if err != eventstream.ErrWouldBlock {
			t.Fatalf("Peek after %d bytes: %v", len(got), err)
		}
		select {
		case <-wake:
		case <-ctx.Done():
			t.Fatalf("stalled after %d of %d bytes", len(got), total)
		}
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("got %d bytes, want %d, in order", len(got), total)
	}
	if len(updates) == 0 {
		t.Fatal("the server got no stream WINDOW_UPDATE for the discarded bytes")
	}
}

// TestStreamPeekAfterReset: bytes that came before a reset are lent
// first; then Peek reports the reset, as Read would.
func TestStreamPeekAfterReset(t *testing.T) {
	srv := newTestServer(t, serverOpts{}, func(sc *serverConn) {
		sc.handshake()
		h := sc.headers()
		sc.writeHeaders(h.StreamID, 200, false)
		sc.writeData(h.StreamID, false, []byte("before"))
		sc.writeReset(h.StreamID, http2.ErrCodeInternal)
		sc.drain()
	})
	tr := newTransport(t, testConfig(nil))
	ctx := testCtx(t)
	st, err := tr.NewStream(ctx, srv.url, nil, newBody(10))
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := st.Response(ctx); err != nil {
		t.Fatal(err)
	}
	select {
	case <-st.Done():
	case <-ctx.Done():
		t.Fatal("the reset never came")
	}
	p, err := st.Peek()
	if string(p) != "before" || err != nil {
		t.Fatalf("Peek = %q, %v; want the bytes before the reset", p, err)
	}
	st.Discard(len(p))
	var se *StreamError
	if p, err := st.Peek(); len(p) != 0 || !errors.As(err, &se) || !se.Remote || se.Code != http2.ErrCodeInternal {
		t.Fatalf("Peek after the bytes = %q, %v; want the remote reset", p, err)
	}
}

// TestRecvBufferKeepsChunkList: a stream that passes replies through a
// few chunks at a time (written ahead, read behind) keeps one list of
// chunks: the list is not reallocated as chunks go through it, and the
// bytes come out in order.
func TestRecvBufferKeepsChunkList(t *testing.T) {
	var b recvBuffer
	reply := make([]byte, 720) // a 640 B audio frame in its message
	got := make([]byte, len(reply))
	var list *[]byte
	for i := range 3000 {
		for j := range reply {
			reply[j] = byte(i + j)
		}
		b.write(reply)
		if i < 6 {
			continue // keep about two chunks buffered
		}
		if n := b.read(got); n != len(got) || got[0] != byte(i-6) || got[len(got)-1] != byte(i-6+len(got)-1) {
			t.Fatalf("reply %d: read %d bytes starting %d", i-6, n, got[0])
		}
		if list == nil {
			list = &b.chunks[:1][0]
		} else if &b.chunks[:1][0] != list {
			t.Fatalf("reply %d: the chunk list moved (reallocated or resliced; %d chunks, room for %d)", i-6, len(b.chunks), cap(b.chunks))
		}
	}
	b.release()
}
