package wsframe

import (
	"bufio"
	"context"
	"crypto/sha1"
	"encoding/base64"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"
)

func testContext(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// Interoperability with coder/websocket, an independent implementation of
// the server side: a fragmented message, a message back, a ping, and the
// close handshake.
func TestDialCoderWebSocket(t *testing.T) {
	type result struct {
		typ  websocket.MessageType
		data string
		path string
		err  error
	}
	results := make(chan result, 4)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c, err := websocket.Accept(w, r, &websocket.AcceptOptions{CompressionMode: websocket.CompressionDisabled})
		if err != nil {
			results <- result{err: err}
			return
		}
		ctx := r.Context()
		typ, data, err := c.Read(ctx)
		results <- result{typ: typ, data: string(data), path: r.URL.RequestURI(), err: err}
		c.Write(ctx, websocket.MessageBinary, []byte("reply"))
		go c.Ping(ctx) // answered by the test below
		_, _, err = c.Read(ctx)
		results <- result{err: err}
	}))
	defer srv.Close()

	ctx := testContext(t)
	c, err := Dial(ctx, "ws"+strings.TrimPrefix(srv.URL, "http")+"/a/b?x=1&y=%2F", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	for _, f := range []struct {
		fin bool
		op  Opcode
		p   string
	}{{false, OpText, "one "}, {false, OpContinuation, "two "}, {true, OpContinuation, "three"}} {
		if err := c.WriteFrame(f.fin, f.op, []byte(f.p)); err != nil {
			t.Fatal(err)
		}
	}
	r := <-results
	if r.err != nil || r.typ != websocket.MessageText || r.data != "one two three" || r.path != "/a/b?x=1&y=%2F" {
		t.Fatalf("server read %v %q at %q: %v", r.typ, r.data, r.path, r.err)
	}
	f, err := c.ReadFrame()
	if err != nil || f.Opcode != OpBinary || !f.Fin || string(f.Payload) != "reply" {
		t.Fatalf("client read %v %v %q: %v", f.Opcode, f.Fin, f.Payload, err)
	}
	f, err = c.ReadFrame()
	if err != nil || f.Opcode != OpPing {
		t.Fatalf("client read %v: %v, want a ping", f.Opcode, err)
	}
	if err := c.WriteFrame(true, OpPong, f.Payload); err != nil {
		t.Fatal(err)
	}
	if err := c.WriteFrame(true, OpClose, ClosePayload(4001, "done")); err != nil {
		t.Fatal(err)
	}
	r = <-results
	var ce websocket.CloseError
	if !errors.As(r.err, &ce) || ce.Code != 4001 || ce.Reason != "done" {
		t.Fatalf("server read after close: %v, want close 4001 done", r.err)
	}
	f, err = c.ReadFrame()
	if err != nil || f.Opcode != OpClose {
		t.Fatalf("client read %v: %v, want the close answer", f.Opcode, err)
	}
	if code, _, _ := ParseClose(f.Payload); code != 4001 {
		t.Errorf("close answer %d, want 4001", code)
	}
}

func TestDialRefused(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, strings.Repeat("busy ", 2000), http.StatusServiceUnavailable)
	}))
	defer srv.Close()
	_, err := Dial(testContext(t), srv.URL, nil)
	var he *HandshakeError
	if !errors.As(err, &he) || he.StatusCode != 503 || he.Status != "503 Service Unavailable" ||
		len(he.Body) != MaxErrorBody || !strings.HasPrefix(string(he.Body), "busy busy") {
		t.Fatalf("Dial = %v (%+v)", err, he)
	}
	if strings.Contains(err.Error(), "busy") {
		t.Error("the error text includes the body")
	}
}

// rawServer answers one connection with resp, built from the client's key.
func rawServer(t *testing.T, resp func(key string) string) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	conns := make(chan net.Conn, 1)
	t.Cleanup(func() {
		ln.Close()
		if c := <-conns; c != nil {
			c.Close()
		}
	})
	go func() {
		c, err := ln.Accept()
		conns <- c
		if err != nil {
			return
		}
		req, err := http.ReadRequest(bufio.NewReader(c))
		if err != nil {
			return
		}
		if r := resp(req.Header.Get("Sec-WebSocket-Key")); r != "" {
			c.Write([]byte(r))
		}
	}()
	return "ws://" + ln.Addr().String()
}

func accept(key string) string {
	sum := sha1.Sum([]byte(key + acceptGUID))
	return base64.StdEncoding.EncodeToString(sum[:])
}

func TestDialChecksTheUpgrade(t *testing.T) {
	for _, tc := range []struct {
		name string
		resp func(key string) string
		want string
	}{
		{"wrong accept", func(string) string {
			return "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Accept: bm9wZQ==\r\n\r\n"
		}, "wrong Sec-WebSocket-Accept"},
		{"no upgrade header", func(k string) string {
			return "HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\nSec-WebSocket-Accept: " + accept(k) + "\r\n\r\n"
		}, "no Upgrade: websocket header"},
		{"unrequested extension", func(k string) string {
			return "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Accept: " + accept(k) +
				"\r\nSec-WebSocket-Extensions: permessage-deflate\r\n\r\n"
		}, "the server chose an extension that was not offered"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Dial(testContext(t), rawServer(t, tc.resp), nil)
			var he *HandshakeError
			if !errors.As(err, &he) || he.StatusCode != 101 || he.Reason != tc.want {
				t.Fatalf("Dial = %v, want %q", err, tc.want)
			}
		})
	}
}

// Frames a server sends right behind its 101 response, in the same
// segment, are not lost.
func TestDialKeepsEarlyFrames(t *testing.T) {
	url := rawServer(t, func(k string) string {
		return "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Accept: " + accept(k) +
			"\r\n\r\n" + string(rfcHelloUnmasked)
	})
	c, err := Dial(testContext(t), url, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if f, err := c.ReadFrame(); err != nil || string(f.Payload) != "Hello" {
		t.Fatalf("ReadFrame = %q, %v", f.Payload, err)
	}
}

// A server that never answers: Dial returns when ctx ends.
func TestDialContext(t *testing.T) {
	url := rawServer(t, func(string) string { return "" })
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err := Dial(ctx, url, nil)
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Dial = %v, want the deadline", err)
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Errorf("Dial took %v", d)
	}
}

func TestDialBadURL(t *testing.T) {
	for _, u := range []string{"ftp://host/", "ws://", "://x"} {
		if _, err := Dial(testContext(t), u, nil); err == nil {
			t.Errorf("Dial(%q) succeeded", u)
		} else if errors.As(err, new(*HandshakeError)) {
			t.Errorf("Dial(%q) = %v, not a handshake", u, err)
		}
	}
}
