package bridge_test

import (
	"bufio"
	"crypto/sha1"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"
)

// This file is a model container for tests that works at the frame level,
// written apart from package wsframe so that the two check each other: it
// records every frame the gateway sends (FIN bit, opcode, masking) and
// writes any frame, valid or not.

// WebSocket opcodes, as the container writes them.
const (
	opCont   = 0x0
	opText   = 0x1
	opBinary = 0x2
	opClose  = 0x8
	opPing   = 0x9
	opPong   = 0xA
)

// rawFrame is one frame as the container received it.
type rawFrame struct {
	fin     bool
	op      byte
	masked  bool
	payload []byte
}

func (f rawFrame) String() string {
	return fmt.Sprintf("{op=%#x fin=%v masked=%v %q}", f.op, f.fin, f.masked, f.payload)
}

// closeCode returns the code of a close frame, or 1005 without one.
func (f rawFrame) closeCode() int {
	if len(f.payload) < 2 {
		return 1005
	}
	return int(binary.BigEndian.Uint16(f.payload))
}

// rawContainer accepts WebSocket upgrades on any path and answers GET
// /ping with pingStatus; each upgraded connection is handed to the test
// as a rawPeer.
type rawContainer struct {
	url   string
	ln    net.Listener
	peers chan *rawPeer
	// pingStatus is the status of GET /ping; set before the first request.
	pingStatus int
}

func newRawContainer(t *testing.T) *rawContainer {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	rc := &rawContainer{url: "ws://" + ln.Addr().String(), ln: ln, peers: make(chan *rawPeer, 16), pingStatus: 200}
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go rc.serve(t, c)
		}
	}()
	t.Cleanup(func() {
		ln.Close()
		<-done
		for {
			select {
			case p := <-rc.peers:
				p.c.Close()
			default:
				return
			}
		}
	})
	return rc
}

func (rc *rawContainer) serve(t *testing.T, c net.Conn) {
	br := bufio.NewReader(c)
	c.SetDeadline(time.Now().Add(5 * time.Second))
	req, err := http.ReadRequest(br)
	if err != nil {
		c.Close()
		return
	}
	if req.URL.Path == "/ping" {
		fmt.Fprintf(c, "HTTP/1.1 %d %s\r\nContent-Length: 0\r\nConnection: close\r\n\r\n", rc.pingStatus, http.StatusText(rc.pingStatus))
		c.Close()
		return
	}
	key := req.Header.Get("Sec-WebSocket-Key")
	if !strings.EqualFold(req.Header.Get("Upgrade"), "websocket") || key == "" || req.Header.Get("Sec-WebSocket-Version") != "13" {
		fmt.Fprintf(c, "HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")
		c.Close()
		return
	}
	sum := sha1.Sum([]byte(key + "258EAFA5-E914-47DA-95CA-C5AB0DC85B11"))
	fmt.Fprintf(c, "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Accept: %s\r\n\r\n",
		base64.StdEncoding.EncodeToString(sum[:]))
	c.SetDeadline(time.Time{})
	rc.peers <- &rawPeer{t: t, c: c, br: br, path: req.URL.Path, query: req.URL.RawQuery, header: req.Header}
}

// accept returns the next upgraded connection.
func (rc *rawContainer) accept(t *testing.T) *rawPeer {
	t.Helper()
	select {
	case p := <-rc.peers:
		t.Cleanup(func() { p.c.Close() })
		return p
	case <-time.After(5 * time.Second):
		t.Fatal("the gateway did not connect to the container")
		return nil
	}
}

// rawPeer is the container's side of one WebSocket connection.
type rawPeer struct {
	t      *testing.T
	c      net.Conn
	br     *bufio.Reader
	path   string
	query  string
	header http.Header
}

// read returns the next frame, unmasked, within 5 s.
func (p *rawPeer) read() (rawFrame, error) {
	p.c.SetReadDeadline(time.Now().Add(5 * time.Second))
	var h [2]byte
	if _, err := io.ReadFull(p.br, h[:]); err != nil {
		return rawFrame{}, err
	}
	f := rawFrame{fin: h[0]&0x80 != 0, op: h[0] & 0x0F, masked: h[1]&0x80 != 0}
	n := uint64(h[1] & 0x7F)
	switch n {
	case 126:
		var b [2]byte
		if _, err := io.ReadFull(p.br, b[:]); err != nil {
			return rawFrame{}, err
		}
		n = uint64(binary.BigEndian.Uint16(b[:]))
	case 127:
		var b [8]byte
		if _, err := io.ReadFull(p.br, b[:]); err != nil {
			return rawFrame{}, err
		}
		n = binary.BigEndian.Uint64(b[:])
	}
	if h[0]&0x70 != 0 {
		return rawFrame{}, errors.New("reserved bits set")
	}
	if n > 1<<24 {
		return rawFrame{}, fmt.Errorf("frame of %d bytes", n)
	}
	var mask [4]byte
	if f.masked {
		if _, err := io.ReadFull(p.br, mask[:]); err != nil {
			return rawFrame{}, err
		}
	}
	f.payload = make([]byte, n)
	if _, err := io.ReadFull(p.br, f.payload); err != nil {
		return rawFrame{}, err
	}
	for i := range f.payload {
		f.payload[i] ^= mask[i%4]
	}
	return f, nil
}

// answerInBackground reads the gateway's frames on a goroutine of its
// own until the close frame, which it echoes, answering pings with pongs
// if pongs is set and dropping every other frame. The channel gets nil
// after the close frame, or the read error.
func (p *rawPeer) answerInBackground(pongs bool) <-chan error {
	done := make(chan error, 1)
	go func() {
		for {
			f, err := p.read()
			switch {
			case err != nil:
				done <- err
				return
			case f.op == opPing && pongs:
				p.c.Write(frameBytes(true, opPong, f.payload))
			case f.op == opClose:
				p.c.Write(frameBytes(true, opClose, f.payload))
				done <- nil
				return
			}
		}
	}()
	return done
}

// mustRead returns the next frame and fails the test on error.
func (p *rawPeer) mustRead() rawFrame {
	p.t.Helper()
	f, err := p.read()
	if err != nil {
		p.t.Fatalf("container reading a frame: %v", err)
	}
	return f
}

// readData returns the next frame that is not a ping or pong (answering
// pings), failing the test on error.
func (p *rawPeer) readData() rawFrame {
	p.t.Helper()
	for {
		f := p.mustRead()
		switch f.op {
		case opPing:
			p.write(true, opPong, f.payload)
		case opPong:
		default:
			return f
		}
	}
}

// write sends one unmasked frame, as a server does.
func (p *rawPeer) write(fin bool, op byte, payload []byte) {
	p.t.Helper()
	p.writeRaw(frameBytes(fin, op, payload))
}

// writeRaw sends bytes as they are.
func (p *rawPeer) writeRaw(b []byte) {
	p.t.Helper()
	p.c.SetWriteDeadline(time.Now().Add(5 * time.Second))
	if _, err := p.c.Write(b); err != nil {
		p.t.Errorf("container writing: %v", err)
	}
}

// writeClose sends a close frame with code and reason.
func (p *rawPeer) writeClose(code int, reason string) {
	p.t.Helper()
	p.write(true, opClose, append(binary.BigEndian.AppendUint16(nil, uint16(code)), reason...))
}

// frameBytes encodes an unmasked frame.
func frameBytes(fin bool, op byte, payload []byte) []byte {
	b0 := op
	if fin {
		b0 |= 0x80
	}
	var b []byte
	switch n := len(payload); {
	case n <= 125:
		b = []byte{b0, byte(n)}
	case n <= 0xFFFF:
		b = binary.BigEndian.AppendUint16([]byte{b0, 126}, uint16(n))
	default:
		b = binary.BigEndian.AppendUint64([]byte{b0, 127}, uint64(n))
	}
	return append(b, payload...)
}
