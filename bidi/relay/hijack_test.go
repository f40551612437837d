package relay

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"
)

// hijackable is a ResponseWriter whose Hijack returns one end of a pipe
// with a reader that has already buffered early.
type hijackable struct {
	http.ResponseWriter
	conn  net.Conn
	early []byte
}

func (h hijackable) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	br := bufio.NewReaderSize(io.MultiReader(bytes.NewReader(h.early), h.conn), 4096)
	if len(h.early) > 0 {
		if _, err := br.Peek(len(h.early)); err != nil {
			return nil, nil, err
		}
	}
	return h.conn, bufio.NewReadWriter(br, bufio.NewWriterSize(h.conn, 4096)), nil
}

// The relay's Hijack hands out its own smaller buffers, and what the
// server had already read past the request is what the new reader has
// buffered (where coder/websocket looks for it), followed by the
// connection; larger early bytes than the small buffer fit too.
func TestHijackKeepsEarlyBytes(t *testing.T) {
	for _, n := range []int{0, 10, connReadBuf + 100} {
		early := make([]byte, n)
		rand.Read(early)
		server, client := net.Pipe()
		defer server.Close()
		defer client.Close()
		var stored *clientConn
		w := smallBufWriter{hijackable{httptest.NewRecorder(), server, early}, &stored}
		conn, brw, err := w.Hijack()
		if err != nil {
			t.Fatal(err)
		}
		if cc, ok := conn.(*clientConn); !ok || cc.Conn != server || stored != cc {
			t.Fatal("Hijack returned or stored another connection")
		}
		if brw.Reader.Size() != max(connReadBuf, n) || brw.Writer.Size() != connWriteBuf {
			t.Fatalf("buffers of %d and %d bytes", brw.Reader.Size(), brw.Writer.Size())
		}
		if got := brw.Reader.Buffered(); got != n {
			t.Fatalf("%d early bytes: %d buffered", n, got)
		}
		go client.Write([]byte("after"))
		got := make([]byte, n+len("after"))
		if _, err := io.ReadFull(brw.Reader, got); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got[:n], early) || string(got[n:]) != "after" {
			t.Fatalf("%d early bytes: read back wrong", n)
		}
		go func() { brw.WriteString("out"); brw.Flush() }()
		out := make([]byte, 3)
		if _, err := io.ReadFull(client, out); err != nil || string(out) != "out" {
			t.Fatalf("wrote %q, %v", out, err)
		}
	}
}

// A client that sends its first message in the same packet as its
// upgrade request (before the 101 arrives) is relayed that message.
func TestFirstMessageWithTheUpgrade(t *testing.T) {
	e := newEnv(t, nil, nil, nil, plainSessions)
	payload := []byte("early bird")
	conn, br := rawUpgrade(t, e.hs.Listener.Addr().String(), maskedFrame(0x2, payload))
	defer conn.Close()
	conn.SetDeadline(time.Now().Add(10 * time.Second)) // a lost message fails, not hangs
	hdr := make([]byte, 2)
	if _, err := io.ReadFull(br, hdr); err != nil {
		t.Fatal(err)
	}
	if hdr[0] != 0x82 || int(hdr[1]) != len(payload) {
		t.Fatalf("frame header % x", hdr)
	}
	got := make([]byte, len(payload))
	if _, err := io.ReadFull(br, got); err != nil || string(got) != string(payload) {
		t.Fatalf("echo %q, %v", got, err)
	}
}

// unwrapOnly is a middleware's ResponseWriter that does not hijack
// itself but unwraps to one that does.
type unwrapOnly struct{ w http.ResponseWriter }

func (u unwrapOnly) Header() http.Header         { return u.w.Header() }
func (u unwrapOnly) Write(b []byte) (int, error) { return u.w.Write(b) }
func (u unwrapOnly) WriteHeader(code int)        { u.w.WriteHeader(code) }
func (u unwrapOnly) Unwrap() http.ResponseWriter { return u.w }

// A relay behind middleware whose ResponseWriter only unwraps still
// upgrades and relays.
func TestUpgradeThroughUnwrap(t *testing.T) {
	e := newEnv(t, nil, nil, nil, plainSessions)
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		e.h.ServeHTTP(unwrapOnly{w}, r)
	}))
	t.Cleanup(hs.Close)
	c, _, err := websocket.Dial(t.Context(), "ws"+strings.TrimPrefix(hs.URL, "http"), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c.CloseNow()
	if err := c.Write(t.Context(), websocket.MessageText, []byte("through")); err != nil {
		t.Fatal(err)
	}
	if _, b, err := c.Read(t.Context()); err != nil || string(b) != "through" {
		t.Fatalf("echo %q %v", b, err)
	}
}

// lazyHeader is a gin-like ResponseWriter: WriteHeader only records the
// status, WriteHeaderNow writes it; Hijack is its underlying writer's.
type lazyHeader struct {
	w      http.ResponseWriter
	status *int
}

func (l lazyHeader) Header() http.Header         { return l.w.Header() }
func (l lazyHeader) Write(b []byte) (int, error) { l.WriteHeaderNow(); return l.w.Write(b) }
func (l lazyHeader) WriteHeader(code int)        { *l.status = code }
func (l lazyHeader) WriteHeaderNow() {
	if *l.status != 0 {
		l.w.WriteHeader(*l.status)
		*l.status = 0
	}
}
func (l lazyHeader) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	return http.NewResponseController(l.w).Hijack()
}

// A ResponseWriter that writes its status only on WriteHeaderNow (as
// gin's does) still gets its 101 out before the hijack.
func TestUpgradeThroughLazyHeader(t *testing.T) {
	e := newEnv(t, nil, nil, nil, plainSessions)
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		e.h.ServeHTTP(lazyHeader{w, new(int)}, r)
	}))
	t.Cleanup(hs.Close)
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second) // a missing 101 fails, not hangs
	defer cancel()
	c, _, err := websocket.Dial(ctx, "ws"+strings.TrimPrefix(hs.URL, "http"), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c.CloseNow()
	if err := c.Write(t.Context(), websocket.MessageText, []byte("gin")); err != nil {
		t.Fatal(err)
	}
	if _, b, err := c.Read(t.Context()); err != nil || string(b) != "gin" {
		t.Fatalf("echo %q %v", b, err)
	}
}

// A clientConn reads freely until limitReads, then takes at most the
// limit and fails with errCloseReadLimit once it is used up, also when a
// read that was under way took it below 0; limitReads(0) fails a read at
// once, through the connection's deadline.
func TestClientConnLimit(t *testing.T) {
	server, client := net.Pipe()
	defer client.Close()
	cc := newClientConn(server)
	defer cc.Close()
	go client.Write(bytes.Repeat([]byte{7}, 100))
	buf := make([]byte, 100)
	if n, err := cc.Read(buf[:40]); n != 40 || err != nil {
		t.Fatalf("unlimited read: %d, %v", n, err)
	}
	cc.limitReads(25)
	got := 0
	for got < 25 {
		n, err := cc.Read(buf)
		if err != nil {
			t.Fatalf("within the limit, after %d bytes: %v", got, err)
		}
		got += n
	}
	if got != 25 {
		t.Fatalf("read %d bytes under a limit of 25", got)
	}
	if _, err := cc.Read(buf); !errors.Is(err, errCloseReadLimit) {
		t.Fatalf("past the limit: %v, want errCloseReadLimit", err)
	}
	cc.left.Store(-3) // a read under way counted past 0
	if _, err := cc.Read(buf); !errors.Is(err, errCloseReadLimit) {
		t.Fatalf("below 0: %v, want errCloseReadLimit", err)
	}

	server2, client2 := net.Pipe()
	defer client2.Close()
	cc2 := newClientConn(server2)
	defer cc2.Close()
	read := make(chan error, 1)
	go func() { _, err := cc2.Read(buf); read <- err }() // blocks: nothing is written
	cc2.limitReads(0)
	if err := <-read; !errors.Is(err, os.ErrDeadlineExceeded) && !errors.Is(err, errCloseReadLimit) {
		t.Fatalf("a blocked read after limitReads(0): %v", err)
	}
}
