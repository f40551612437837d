package model

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"io"
	"net"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/coder/websocket"
)

func TestCloseAfter(t *testing.T) {
	srv, _ := newServer(t, Options{})
	c := dial(t, srv, "/invocations-bidirectional-stream?mode=echo&close_after=2&close_code=4001&close_reason=bye%20now")
	ctx := testContext(t)
	for _, msg := range []string{"one", "two"} {
		if err := c.Write(ctx, websocket.MessageText, []byte(msg)); err != nil {
			t.Fatal(err)
		}
		if _, p, err := c.Read(ctx); err != nil || string(p) != msg {
			t.Fatalf("echo of %q = %q, %v", msg, p, err)
		}
	}
	_, _, err := c.Read(ctx)
	var ce websocket.CloseError
	if !errors.As(err, &ce) || ce.Code != 4001 || ce.Reason != "bye now" {
		t.Fatalf("read after 2 messages: %v, want close 4001 \"bye now\"", err)
	}
}

// TestCloseMidStream closes after three SSE messages of a chat stream.
func TestCloseMidStream(t *testing.T) {
	srv, _ := newServer(t, Options{})
	c := dial(t, srv, "/invocations-bidirectional-stream?close_after=3")
	ctx := testContext(t)
	c.Write(ctx, websocket.MessageText, chatRequestJSON("a long answer", true))
	for i := range 3 {
		if _, p, err := c.Read(ctx); err != nil {
			t.Fatalf("message %d: %v", i, err)
		} else if string(p[:6]) != "data: " {
			t.Fatalf("message %d = %q", i, p)
		}
	}
	_, _, err := c.Read(ctx)
	var ce websocket.CloseError
	if !errors.As(err, &ce) || ce.Code != websocket.StatusInternalError || ce.Reason != "close_after reached" {
		t.Fatalf("read after 3 messages: %v, want close 1011", err)
	}
}

func TestCloseAfterZero(t *testing.T) {
	srv, _ := newServer(t, Options{})
	rc := dialRaw(t, srv, "/x?close_after=0&close_code=1001")
	f := rc.mustFrame()
	if f.opcode != opClose || len(f.payload) < 2 || binary.BigEndian.Uint16(f.payload) != 1001 {
		t.Fatalf("first frame = %v %q, want close 1001", f, f.payload)
	}
}

// TestCloseAbrupt: the connection ends without a close frame.
func TestCloseAbrupt(t *testing.T) {
	srv, _ := newServer(t, Options{})
	rc := dialRaw(t, srv, "/?mode=echo&close_after=1&abrupt=true")
	rc.writeFrame(true, opText, []byte("x"))
	if fs := rc.readMessage(); joinPayloads(fs) != "x" {
		t.Fatalf("echo = %v", fs)
	}
	f, err := rc.readFrame(5 * time.Second)
	if err == nil {
		t.Fatalf("got frame %v after the abrupt close", f)
	}
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		t.Fatalf("connection still open: %v", err)
	}
	if !errors.Is(err, io.EOF) && !errors.Is(err, net.ErrClosed) {
		t.Logf("read after abrupt close: %v", err) // a reset is fine too
	}
}

func TestGarbage(t *testing.T) {
	srv, _ := newServer(t, Options{})
	rc := dialRaw(t, srv, "/?garbage_after=1&mode=echo")
	rc.writeFrame(true, opText, []byte("ok"))
	if fs := rc.readMessage(); joinPayloads(fs) != "ok" {
		t.Fatalf("echo = %v", fs)
	}
	fs := rc.readMessage()
	if fs[0].opcode != opText || utf8.ValidString(joinPayloads(fs)) {
		t.Fatalf("garbage = %v %q, want a text message of invalid UTF-8", fs, joinPayloads(fs))
	}
	// The session goes on.
	rc.writeFrame(true, opText, []byte("still"))
	if fs := rc.readMessage(); joinPayloads(fs) != "still" {
		t.Fatalf("echo after garbage = %v", fs)
	}
}

func TestHello(t *testing.T) {
	srv, _ := newServer(t, Options{})
	c := dial(t, srv, "/custom/path?hello=true&mode=echo")
	_, p, err := c.Read(testContext(t))
	if err != nil {
		t.Fatal(err)
	}
	var hello map[string]string
	if err := json.Unmarshal(p, &hello); err != nil {
		t.Fatal(err)
	}
	if hello["path"] != "/custom/path" || hello["query"] != "hello=true&mode=echo" || hello["mode"] != "echo" {
		t.Fatalf("hello = %s", p)
	}
}

func TestPingAnswered(t *testing.T) {
	srv, _ := newServer(t, Options{})
	rc := dialRaw(t, srv, "/")
	rc.writeFrame(true, opPing, []byte("p1"))
	if f := rc.mustFrame(); f.opcode != opPong || string(f.payload) != "p1" {
		t.Fatalf("answer to ping = %v %q, want pong p1", f, f.payload)
	}
}

// TestNoPong: the session reads and echoes but never answers a ping.
func TestNoPong(t *testing.T) {
	srv, _ := newServer(t, Options{})
	rc := dialRaw(t, srv, "/?no_pong=true")
	rc.writeFrame(true, opPing, []byte("p1"))
	rc.writeFrame(true, opText, []byte("after ping"))
	// The ping is read before the text, so a pong would come first.
	if fs := rc.readMessage(); joinPayloads(fs) != "after ping" {
		t.Fatalf("frames = %v, want the echo and no pong", fs)
	}
	rc.writeFrame(true, opClose, binary.BigEndian.AppendUint16(nil, 1000))
	if f := rc.mustFrame(); f.opcode != opClose {
		t.Fatalf("answer to close = %v, want close", f)
	}
}

// TestDeaf: after one message the session stops reading, so pings and the
// close handshake go unanswered, and it drops the connection when hold
// expires.
func TestDeaf(t *testing.T) {
	srv, _ := newServer(t, Options{})
	rc := dialRaw(t, srv, "/?deaf_after=1&hold=1s")
	start := time.Now()
	rc.writeFrame(true, opText, []byte("heard"))
	if fs := rc.readMessage(); joinPayloads(fs) != "heard" {
		t.Fatalf("echo = %v", fs)
	}
	rc.writeFrame(true, opPing, []byte("p1"))
	rc.writeFrame(true, opText, []byte("unheard"))
	rc.writeFrame(true, opClose, binary.BigEndian.AppendUint16(nil, 1000))
	rc.expectSilence(300 * time.Millisecond)
	f, err := rc.readFrame(5 * time.Second)
	if err == nil {
		t.Fatalf("got %v, want the connection dropped", f)
	}
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		t.Fatalf("connection not dropped after hold: %v", err)
	}
	if d := time.Since(start); d < time.Second {
		t.Fatalf("dropped after %v, before hold", d)
	}
}

// TestDeafClosedByHandler: Close ends a deaf session at once.
func TestDeafClosedByHandler(t *testing.T) {
	srv, h := newServer(t, Options{})
	rc := dialRaw(t, srv, "/?deaf_after=0")
	rc.writeFrame(true, opPing, []byte("p1"))
	rc.expectSilence(200 * time.Millisecond)
	done := make(chan struct{})
	go func() {
		h.Close()
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("Close did not end the deaf session")
	}
	if _, err := rc.readFrame(5 * time.Second); err == nil {
		t.Fatal("connection still open after Close")
	}
}
