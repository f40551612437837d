package relay

import (
	"bytes"
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/coder/websocket"

	"github.com/sagemaker-bidi/sagemaker-bidi/bidi"
)

// BenchmarkEcho is one 640-byte round trip (20 ms of 16 kHz audio) to
// biditest's echo: on a bidi session used directly, and through the relay
// (all in this process, on loopback). "relay" uses coder/websocket's
// Read and Write with the benchmark's context, as a casual client would;
// "relay-lean" reads into a buffer of its own without a cancellable
// context, so that what it measures beyond "direct" is the relay and the
// two WebSocket hops, not the client library's allocations;
// "websocket-echo" is those hops alone, to a server that echoes itself.
func BenchmarkEcho(b *testing.B) {
	frame := make([]byte, 640)
	b.Run("direct", func(b *testing.B) {
		e := newEnv(b, nil, nil, nil)
		s, err := e.client.Open(b.Context(), &bidi.OpenInput{EndpointName: "ep", AwaitResponse: true})
		if err != nil {
			b.Fatal(err)
		}
		defer s.Close()
		b.ReportAllocs()
		for b.Loop() {
			if err := s.Send(b.Context(), bidi.Binary(frame)); err != nil {
				b.Fatal(err)
			}
			if _, err := s.Recv(b.Context()); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("relay", func(b *testing.B) {
		e := newEnv(b, nil, nil, nil, plainSessions)
		c := e.dial(b)
		b.ReportAllocs()
		for b.Loop() {
			if err := c.Write(b.Context(), websocket.MessageBinary, frame); err != nil {
				b.Fatal(err)
			}
			if _, _, err := c.Read(b.Context()); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("relay-lean", func(b *testing.B) {
		e := newEnv(b, nil, nil, nil, plainSessions)
		leanLoop(b, e.dial(b), frame)
	})
	b.Run("websocket-echo", func(b *testing.B) {
		// The hop the relay adds, alone: the same lean client and frame
		// to a plain WebSocket server (no TLS, as the relay's here) that
		// echoes each message itself. relay-lean's time is about
		// direct's plus this one's when the relay adds nothing else.
		hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			c, err := websocket.Accept(w, r, nil)
			if err != nil {
				return
			}
			defer c.CloseNow()
			var buf bytes.Buffer
			for {
				typ, rd, err := c.Reader(context.Background())
				if err != nil {
					return
				}
				buf.Reset()
				if _, err := buf.ReadFrom(rd); err != nil {
					return
				}
				if err := c.Write(context.Background(), typ, buf.Bytes()); err != nil {
					return
				}
			}
		}))
		defer hs.Close()
		c, _, err := websocket.Dial(b.Context(), "ws"+strings.TrimPrefix(hs.URL, "http"), nil)
		if err != nil {
			b.Fatal(err)
		}
		defer c.CloseNow()
		leanLoop(b, c, frame)
	})
}

// leanLoop times leanRoundTrip on c and checks the last echo.
func leanLoop(b *testing.B, c *websocket.Conn, frame []byte) {
	var buf bytes.Buffer
	buf.Grow(4096)
	b.ReportAllocs()
	for b.Loop() {
		if err := leanRoundTrip(c, frame, &buf); err != nil {
			b.Fatal(err)
		}
	}
	if !bytes.Equal(buf.Bytes(), frame) {
		b.Fatalf("echo of %d bytes, want the %d sent", buf.Len(), len(frame))
	}
}

// leanRoundTrip writes frame and reads one message into buf, without a
// cancellable context (which costs coder/websocket an AfterFunc per call)
// or a buffer per message.
func leanRoundTrip(c *websocket.Conn, frame []byte, buf *bytes.Buffer) error {
	if err := c.Write(context.Background(), websocket.MessageBinary, frame); err != nil {
		return err
	}
	_, r, err := c.Reader(context.Background())
	if err != nil {
		return err
	}
	buf.Reset()
	_, err = buf.ReadFrom(r)
	return err
}
