package model

import (
	"bufio"
	"crypto/rand"
	"crypto/sha1"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// This file is a frame-level WebSocket client for tests: coder/websocket
// reassembles messages and answers control frames itself, so it cannot show
// FIN bits, opcodes of continuation frames, pongs or a missing close frame.

const (
	opContinuation = 0x0
	opText         = 0x1
	opBinary       = 0x2
	opClose        = 0x8
	opPing         = 0x9
	opPong         = 0xa
)

type frame struct {
	fin     bool
	opcode  byte
	payload []byte
}

func (f frame) String() string {
	return fmt.Sprintf("{op=%#x fin=%v len=%d}", f.opcode, f.fin, len(f.payload))
}

type rawConn struct {
	t  *testing.T
	c  net.Conn
	br *bufio.Reader
}

// dialRaw performs the opening handshake by hand on a TCP connection to srv
// and fails the test unless the answer is 101 with the right accept key.
func dialRaw(t *testing.T, srv *httptest.Server, pathQuery string) *rawConn {
	t.Helper()
	c, err := net.Dial("tcp", srv.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	var k [16]byte
	rand.Read(k[:])
	key := base64.StdEncoding.EncodeToString(k[:])
	fmt.Fprintf(c, "GET %s HTTP/1.1\r\nHost: %s\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"+
		"Sec-WebSocket-Key: %s\r\nSec-WebSocket-Version: 13\r\n\r\n", pathQuery, srv.Listener.Addr(), key)
	br := bufio.NewReader(c)
	c.SetReadDeadline(time.Now().Add(5 * time.Second))
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusSwitchingProtocols {
		body, _ := io.ReadAll(resp.Body)
		t.Fatalf("upgrade: %s: %s", resp.Status, body)
	}
	sum := sha1.Sum([]byte(key + "258EAFA5-E914-47DA-95CA-C5AB0DC85B11"))
	if got, want := resp.Header.Get("Sec-WebSocket-Accept"), base64.StdEncoding.EncodeToString(sum[:]); got != want {
		t.Fatalf("Sec-WebSocket-Accept = %q, want %q", got, want)
	}
	return &rawConn{t: t, c: c, br: br}
}

// writeFrame sends one masked frame, as a client must.
func (rc *rawConn) writeFrame(fin bool, opcode byte, payload []byte) {
	rc.t.Helper()
	b0 := opcode
	if fin {
		b0 |= 0x80
	}
	hdr := []byte{b0}
	switch n := len(payload); {
	case n < 126:
		hdr = append(hdr, 0x80|byte(n))
	case n <= 0xffff:
		hdr = append(hdr, 0x80|126)
		hdr = binary.BigEndian.AppendUint16(hdr, uint16(n))
	default:
		hdr = append(hdr, 0x80|127)
		hdr = binary.BigEndian.AppendUint64(hdr, uint64(n))
	}
	var mask [4]byte
	rand.Read(mask[:])
	hdr = append(hdr, mask[:]...)
	masked := make([]byte, len(payload))
	for i, b := range payload {
		masked[i] = b ^ mask[i%4]
	}
	if _, err := rc.c.Write(append(hdr, masked...)); err != nil {
		rc.t.Fatalf("write frame: %v", err)
	}
}

// readFrame reads one frame, waiting at most d. Server frames must be
// unmasked and have no RSV bits (no extension was negotiated).
func (rc *rawConn) readFrame(d time.Duration) (frame, error) {
	rc.c.SetReadDeadline(time.Now().Add(d))
	var h [2]byte
	if _, err := io.ReadFull(rc.br, h[:]); err != nil {
		return frame{}, err
	}
	if h[0]&0x70 != 0 {
		return frame{}, errors.New("RSV bits set")
	}
	if h[1]&0x80 != 0 {
		return frame{}, errors.New("server frame is masked")
	}
	n := uint64(h[1] & 0x7f)
	switch n {
	case 126:
		var b [2]byte
		if _, err := io.ReadFull(rc.br, b[:]); err != nil {
			return frame{}, err
		}
		n = uint64(binary.BigEndian.Uint16(b[:]))
	case 127:
		var b [8]byte
		if _, err := io.ReadFull(rc.br, b[:]); err != nil {
			return frame{}, err
		}
		n = binary.BigEndian.Uint64(b[:])
	}
	if n > 1<<24 {
		return frame{}, fmt.Errorf("frame of %d bytes", n)
	}
	p := make([]byte, n)
	if _, err := io.ReadFull(rc.br, p); err != nil {
		return frame{}, err
	}
	return frame{fin: h[0]&0x80 != 0, opcode: h[0] & 0x0f, payload: p}, nil
}

// mustFrame reads one frame or fails the test.
func (rc *rawConn) mustFrame() frame {
	rc.t.Helper()
	f, err := rc.readFrame(5 * time.Second)
	if err != nil {
		rc.t.Fatalf("read frame: %v", err)
	}
	return f
}

// readMessage reads the frames of one data message, failing on control
// frames, and returns them.
func (rc *rawConn) readMessage() []frame {
	rc.t.Helper()
	var fs []frame
	for {
		f := rc.mustFrame()
		if f.opcode >= opClose {
			rc.t.Fatalf("control frame %v inside a message (after %v)", f, fs)
		}
		if (len(fs) == 0) != (f.opcode != opContinuation) {
			rc.t.Fatalf("frame %v at position %d of a message", f, len(fs))
		}
		fs = append(fs, f)
		if f.fin {
			return fs
		}
	}
}

// expectSilence fails the test if a frame arrives within d.
func (rc *rawConn) expectSilence(d time.Duration) {
	rc.t.Helper()
	f, err := rc.readFrame(d)
	if err == nil {
		rc.t.Fatalf("got frame %v (%q), want none", f, f.payload)
	}
	var ne net.Error
	if !errors.As(err, &ne) || !ne.Timeout() {
		rc.t.Fatalf("read: %v, want a timeout", err)
	}
}

func joinPayloads(fs []frame) string {
	var sb strings.Builder
	for _, f := range fs {
		sb.Write(f.payload)
	}
	return sb.String()
}
