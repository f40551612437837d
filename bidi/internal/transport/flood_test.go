package transport

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net"
	"strings"
	"testing"
	"time"

	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"
)

// smallBufferDialer dials with small kernel socket buffers, so that a
// peer that stops reading stalls the client's writer after a few KiB.
func smallBufferDialer() func(ctx context.Context, network, addr string) (net.Conn, error) {
	d := &net.Dialer{Control: smallBuffers}
	return d.DialContext
}

// onlyConn returns the pool's only connection.
func onlyConn(t *testing.T, tr *Transport, srv *testServer) *conn {
	t.Helper()
	p := poolOf(t, tr, srv)
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.conns) != 1 {
		t.Fatalf("%d connections, want 1", len(p.conns))
	}
	return p.conns[0]
}

// TestControlFloodNotRead: a server floods PINGs (or SETTINGS) and never
// reads the acknowledgements. The client queues a bounded number of them
// and then stops reading (the server's writes stall); the stream's
// context and Transport.Close still end everything.
func TestControlFloodNotRead(t *testing.T) {
	for _, kind := range []string{"PING", "SETTINGS"} {
		t.Run(kind, func(t *testing.T) {
			var one bytes.Buffer
			fr := http2.NewFramer(&one, nil)
			if kind == "PING" {
				fr.WritePing(false, [8]byte{1})
			} else {
				fr.WriteSettings(http2.Setting{ID: http2.SettingMaxConcurrentStreams, Val: 100})
			}
			batch := bytes.Repeat(one.Bytes(), 256)
			written := make(chan int, 1)
			srv := newTestServer(t, serverOpts{SmallBuffers: true}, func(sc *serverConn) {
				sc.handshake()
				h := sc.headers()
				sc.writeHeaders(h.StreamID, 200, false)
				n := 0
				for {
					sc.nc.SetWriteDeadline(time.Now().Add(200 * time.Millisecond))
					if _, err := sc.nc.Write(batch); err != nil {
						if !isTimeout(err) {
							sc.fatalf("flood: %v", err)
						}
						break
					}
					n += 256
					if n > 1e6 {
						break // the client kept reading: the test fails below
					}
				}
				written <- n
				sc.eof()
			})
			cfg := testConfig(nil)
			cfg.DialContext = smallBufferDialer()
			tr := newTransport(t, cfg)
			ctx := testCtx(t)
			sctx, cancel := context.WithCancel(ctx)
			st, err := tr.NewStream(sctx, srv.url, nil, newBody(10))
			if err != nil {
				t.Fatal(err)
			}
			if _, _, err := st.Response(ctx); err != nil {
				t.Fatal(err)
			}
			n := <-written
			if n > 1e6 {
				t.Fatalf("the client read %d frames without its acknowledgements being read", n)
			}
			cc := onlyConn(t, tr, srv)
			cc.mu.Lock()
			queued, responses := len(cc.ctrl), cc.responses
			cc.mu.Unlock()
			if responses > maxQueuedControlResponses || queued > maxQueuedControlResponses+4 {
				t.Errorf("%d control frames queued (%d acknowledgements), bound %d", queued, responses, maxQueuedControlResponses)
			}
			t.Logf("server wrote %d frames before it stalled; %d queued", n, queued)
			cancel()
			if _, err := readWait(st, make([]byte, 1)); !errors.Is(err, context.Canceled) {
				t.Errorf("Read = %v, want context.Canceled", err)
			}
		})
	}
}

// TestIgnoredFrameFloods: unknown frame types, PRIORITY frames and empty
// DATA frames, by the ten thousand, are ignored: nothing is queued, and
// the stream's data comes through.
func TestIgnoredFrameFloods(t *testing.T) {
	srv := newTestServer(t, serverOpts{}, func(sc *serverConn) {
		sc.handshake()
		h := sc.headers()
		sc.writeHeaders(h.StreamID, 200, false)
		var flood bytes.Buffer
		fr := http2.NewFramer(&flood, nil)
		for i := range 10000 {
			fr.WriteRawFrame(0xfa, 0x7, uint32(i), []byte("unknown extension frame"))
			fr.WritePriority(h.StreamID, http2.PriorityParam{StreamDep: 0, Weight: 3})
			fr.WriteData(h.StreamID, false, nil)
		}
		sc.writeRaw(flood.Bytes())
		sc.ping()
		sc.writeData(h.StreamID, true, []byte("hello"))
		sc.drain()
	})
	tr := newTransport(t, testConfig(nil))
	ctx := testCtx(t)
	st, err := tr.NewStream(ctx, srv.url, nil, bodyOf(""))
	if err != nil {
		t.Fatal(err)
	}
	if b, err := readAllAfterResponse(ctx, st); err != io.EOF || string(b) != "hello" {
		t.Fatalf("read %q, %v", b, err)
	}
}

// TestHeaderListOverLimit: a response head whose decoded size is over the
// header list limit (1 MiB from 5 KB on the wire, through the HPACK
// dynamic table) is a stream error; the connection, its HPACK state
// intact, carries the next stream.
func TestHeaderListOverLimit(t *testing.T) {
	rst := make(chan frame, 1)
	srv := newTestServer(t, serverOpts{}, func(sc *serverConn) {
		sc.handshake()
		h := sc.headers()
		big := strings.Repeat("v", 4000)
		kv := []string{}
		for range 300 {
			kv = append(kv, "x-big", big)
		}
		sc.writeHeaders(h.StreamID, 200, false, kv...)
		rst <- sc.reset(h.StreamID)
		h = sc.headers()
		sc.writeHeaders(h.StreamID, 200, true, "x-big", big)
		sc.drain()
	})
	tr := newTransport(t, testConfig(nil))
	ctx := testCtx(t)
	st, err := tr.NewStream(ctx, srv.url, nil, bodyOf(""))
	if err != nil {
		t.Fatal(err)
	}
	var se *StreamError
	if _, _, err := st.Response(ctx); !errors.As(err, &se) || se.Code != http2.ErrCodeProtocol || se.Remote {
		t.Fatalf("Response = %v, want a local *StreamError(PROTOCOL_ERROR)", err)
	}
	if f := <-rst; f.Code != http2.ErrCodeProtocol {
		t.Errorf("server saw %v", f)
	}
	st, err = tr.NewStream(ctx, srv.url, nil, bodyOf(""))
	if err != nil {
		t.Fatal(err)
	}
	_, header, err := st.Response(ctx)
	if err != nil || len(header.Get("X-Big")) != 4000 {
		t.Fatalf("next stream: %v", err)
	}
}

// TestContinuationFlood: a response head that never ends, in
// CONTINUATION frames full of header fields or empty. The connection
// fails with a *ConnError(PROTOCOL_ERROR) once the header block passes
// what the header list limit allows, instead of reading forever.
func TestContinuationFlood(t *testing.T) {
	for _, kind := range []string{"fields", "empty"} {
		t.Run(kind, func(t *testing.T) {
			srv := newTestServer(t, serverOpts{}, func(sc *serverConn) {
				sc.handshake()
				h := sc.headers()
				sc.write(func() error {
					sc.hbuf.Reset()
					sc.henc.WriteField(hpack.HeaderField{Name: ":status", Value: "200"})
					return sc.fr.WriteHeaders(http2.HeadersFrameParam{StreamID: h.StreamID, BlockFragment: sc.hbuf.Bytes()})
				})
				var frag []byte
				if kind == "fields" {
					var b bytes.Buffer
					enc := hpack.NewEncoder(&b)
					for range 10 {
						enc.WriteField(hpack.HeaderField{Name: "x-flood", Value: strings.Repeat("f", 1000), Sensitive: true})
					}
					frag = b.Bytes()
				}
				var flood bytes.Buffer
				fr := http2.NewFramer(&flood, nil)
				for range 1000 {
					fr.WriteContinuation(h.StreamID, false, frag)
				}
				for sent := 0; sent < 64<<20; sent += flood.Len() {
					if err := sc.tryWrite(func() error { _, err := sc.nc.Write(flood.Bytes()); return err }); err != nil {
						return // the client closed the connection
					}
				}
				sc.fatalf("the client read 64 MiB of CONTINUATION frames")
			})
			tr := newTransport(t, testConfig(nil))
			ctx := testCtx(t)
			st, err := tr.NewStream(ctx, srv.url, nil, newBody(10))
			if err != nil {
				t.Fatal(err)
			}
			var ce *ConnError
			if _, _, err := st.Response(ctx); !errors.As(err, &ce) || ce.Code != http2.ErrCodeProtocol {
				t.Fatalf("Response = %v, want a *ConnError(PROTOCOL_ERROR)", err)
			}
		})
	}
}
