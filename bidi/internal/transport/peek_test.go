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
// the borrower is still decoding.
func TestRecvBufferReleaseKeepsLentChunk(t *testing.T) {
	var b recvBuffer
	b.write(bytes.Repeat([]byte{'a'}, 1000))
	p := b.peek()
	b.release()
	// Take chunks from the pool as other streams would, and write them.
	var taken []*[recvChunkSize]byte
	for range 64 {
		c := chunkPool.Get().(*[recvChunkSize]byte)
		for i := range c {
			c[i] = 'x'
		}
		taken = append(taken, c)
	}
	for _, c := range taken {
		chunkPool.Put(c)
	}
	if !bytes.Equal(p, bytes.Repeat([]byte{'a'}, 1000)) {
		t.Fatal("a lent chunk was reused after release")
	}
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
