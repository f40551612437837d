package relay

import (
	"bufio"
	"encoding/binary"
	"errors"
	"io"
	"net"
	"net/http"
	"os"
	"testing"
	"time"

	"github.com/coder/websocket"
)

// A client that breaks the protocol is failed, not closed with a
// handshake: after the close frame the relay reads nothing more and drops
// the connection, however much the client goes on sending. Here each
// fault is followed by a frame that announces 1 TiB and streams it as
// fast as the connection takes it. coder/websocket's close handshake
// would read and discard that payload a byte at a time until the
// client's close frame, its 5 s wait notwithstanding: for as long as the
// client streams.
func TestProtocolFaultFailsConnection(t *testing.T) {
	for _, tc := range []struct {
		name  string
		fault []byte
		code  websocket.StatusCode
	}{
		{"message too big", maskedFrame(0x2, make([]byte, 2048)), websocket.StatusMessageTooBig},
		{"text not UTF-8", maskedFrame(0x1, []byte{'a', 0xff, 0xfe}), websocket.StatusInvalidFramePayloadData},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, nil, &Options{MaxMessageSize: 1024}, nil)
			conn, br := rawUpgrade(t, e.hs.Listener.Addr().String(), nil)
			defer conn.Close()

			g := streamGiantFrame(conn, tc.fault)
			if code := readCloseFrame(t, br); code != tc.code {
				t.Fatalf("close code %d, want %d", code, tc.code)
			}
			g.wantDropped(t, br)
		})
	}
}

// A graceful close reads a bounded amount of what the client sends: a
// client that answers the relay's close frame with a frame announcing 1
// TiB, streamed, instead of its own close frame is dropped once
// closeReadLimit bytes were read.
func TestCloseHandshakeReadsBounded(t *testing.T) {
	e := newEnv(t, nil, &Options{MaxLifetime: 30 * time.Millisecond, FinishQuiet: time.Millisecond}, nil)
	conn, br := rawUpgrade(t, e.hs.Listener.Addr().String(), nil)
	defer conn.Close()
	if code := readCloseFrame(t, br); code != websocket.StatusGoingAway {
		t.Fatalf("close code %d, want %d", code, websocket.StatusGoingAway)
	}
	streamGiantFrame(conn, nil).wantDropped(t, br)
}

// giantFrame is a client streaming, after some frames, a binary frame
// that announces 1 TiB, as fast as the connection takes it.
type giantFrame struct {
	conn    net.Conn
	started time.Time
	written int64      // bytes written after the frames; the writer's until done
	done    chan error // the write error that ended the writer
}

// streamGiantFrame starts writing first and then the giant frame on conn.
func streamGiantFrame(conn net.Conn, first []byte) *giantFrame {
	g := &giantFrame{conn: conn, started: time.Now(), done: make(chan error, 1)}
	// FIN, binary, masked, a 64-bit length, the mask key.
	header := binary.BigEndian.AppendUint64([]byte{0x82, 0x80 | 127}, 1<<40)
	header = append(header, 1, 2, 3, 4)
	go func() {
		if _, err := conn.Write(append(first, header...)); err != nil {
			g.done <- err
			return
		}
		chunk := make([]byte, 32<<10)
		for {
			n, err := conn.Write(chunk)
			g.written += int64(n)
			if err != nil {
				g.done <- err
				return
			}
		}
	}()
	return g
}

// wantDropped reads the rest of what the relay sends and fails unless
// the relay dropped the connection well within the close handshake's 5
// s, having let the client write little more than the socket buffers
// hold (a few MiB on loopback), not what a reading relay would take.
// The read deadline only keeps a failure from hanging.
func (g *giantFrame) wantDropped(t *testing.T, br *bufio.Reader) {
	t.Helper()
	g.conn.SetReadDeadline(time.Now().Add(20 * time.Second))
	if _, err := io.Copy(io.Discard, br); errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatal("the relay kept reading the client after its close frame")
	}
	if err := <-g.done; err == nil {
		t.Fatal("the client's writes did not fail")
	}
	if d := time.Since(g.started); d > 4*time.Second {
		t.Errorf("the relay dropped the connection %v after the giant frame began", d)
	}
	if g.written > 64<<20 {
		t.Errorf("the client wrote %d MiB of its giant frame before the relay dropped the connection", g.written>>20)
	}
}

// rawUpgrade dials addr and upgrades the connection to a WebSocket by
// hand, so that a test can write any bytes; early follows the request at
// once, before the 101.
func rawUpgrade(t *testing.T, addr string, early []byte) (net.Conn, *bufio.Reader) {
	t.Helper()
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	conn.SetDeadline(time.Now().Add(20 * time.Second)) // a failure fails, not hangs
	req := "GET / HTTP/1.1\r\nHost: x\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n" +
		"Sec-WebSocket-Version: 13\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n\r\n"
	if _, err := conn.Write(append([]byte(req), early...)); err != nil {
		t.Fatal(err)
	}
	br := bufio.NewReader(conn)
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusSwitchingProtocols {
		t.Fatalf("upgrade: status %d", resp.StatusCode)
	}
	conn.SetDeadline(time.Time{})
	return conn, br
}

// maskedFrame encodes one final client frame (masked, as a client's must
// be) of the given opcode.
func maskedFrame(opcode byte, payload []byte) []byte {
	f := []byte{0x80 | opcode}
	switch n := len(payload); {
	case n < 126:
		f = append(f, 0x80|byte(n))
	case n < 1<<16:
		f = append(f, 0x80|126, byte(n>>8), byte(n))
	default:
		f = binary.BigEndian.AppendUint64(append(f, 0x80|127), uint64(n))
	}
	key := [4]byte{9, 8, 7, 6}
	f = append(f, key[:]...)
	for i, b := range payload {
		f = append(f, b^key[i%4])
	}
	return f
}

// readCloseFrame reads the server's frames up to its close frame and
// returns the close code; a server frame is not masked.
func readCloseFrame(t *testing.T, br *bufio.Reader) websocket.StatusCode {
	t.Helper()
	for {
		var hdr [2]byte
		if _, err := io.ReadFull(br, hdr[:]); err != nil {
			t.Fatalf("before the close frame: %v", err)
		}
		n := int(hdr[1] & 0x7f)
		switch n {
		case 126:
			var l [2]byte
			io.ReadFull(br, l[:])
			n = int(binary.BigEndian.Uint16(l[:]))
		case 127:
			var l [8]byte
			io.ReadFull(br, l[:])
			n = int(binary.BigEndian.Uint64(l[:]))
		}
		payload := make([]byte, n)
		if _, err := io.ReadFull(br, payload); err != nil {
			t.Fatalf("frame payload: %v", err)
		}
		if hdr[0]&0x0f == 0x8 {
			if n < 2 {
				return websocket.StatusNoStatusRcvd
			}
			return websocket.StatusCode(binary.BigEndian.Uint16(payload))
		}
	}
}
