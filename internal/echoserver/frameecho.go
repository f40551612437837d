package echoserver

import (
	"bufio"
	"bytes"
	"crypto/tls"
	"encoding/binary"
	"errors"
	"io"
	"net"
	"sync"
	"time"

	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"
)

// FrameEcho is the event-stream echo of Event, served by a minimal HTTP/2
// server written on x/net/http2's Framer instead of net/http. One
// goroutine per connection reads its frames, answers each at once into a
// buffered writer and flushes before it waits for more input, so that the
// echoes of many streams share TLS records and system calls; there is no
// goroutine per stream. net/http's server runs every frame of a
// connection through one goroutine and makes each handler's flush a
// round trip to it, which limits what one connection carries long before
// the client does; FrameEcho lets the load program measure thousands of
// streams on one connection.
//
// It is a measuring tool, not a conforming server: requests are not
// checked (no path, header or signature check), it never pushes, never
// refuses a stream and ends a connection on any frame it cannot use.
// Flow control is kept both ways.
type FrameEcho struct {
	// URL is the base URL of the server, https://127.0.0.1:port.
	URL string

	ln    net.Listener
	wg    sync.WaitGroup
	mu    sync.Mutex
	conns map[net.Conn]struct{} // open connections, closed by Close
	done  bool
}

// The windows FrameEcho grants: a client may have this much unread on a
// stream and on a connection. Window updates are sent once a quarter of
// a window has been read.
const (
	frameEchoStreamWindow = 1 << 20
	frameEchoConnWindow   = 16 << 20
	frameEchoMaxEnvelope  = 16 << 20 // larger declared messages end the stream
)

// StartFrameEcho serves FrameEcho on a loopback port with the certificate
// of cfg (cloned; ALPN "h2" only).
func StartFrameEcho(cfg *tls.Config) (*FrameEcho, error) {
	cfg = cfg.Clone()
	cfg.NextProtos = []string{http2.NextProtoTLS}
	ln, err := tls.Listen("tcp", "127.0.0.1:0", cfg)
	if err != nil {
		return nil, err
	}
	s := &FrameEcho{URL: "https://" + ln.Addr().String(), ln: ln, conns: map[net.Conn]struct{}{}}
	s.wg.Go(s.accept)
	return s, nil
}

// Close stops the listener, closes every connection and waits for their
// goroutines.
func (s *FrameEcho) Close() error {
	err := s.ln.Close()
	s.mu.Lock()
	s.done = true
	for c := range s.conns {
		c.Close()
	}
	s.mu.Unlock()
	s.wg.Wait()
	return err
}

func (s *FrameEcho) accept() {
	for {
		nc, err := s.ln.Accept()
		if err != nil {
			return
		}
		s.mu.Lock()
		if s.done {
			s.mu.Unlock()
			nc.Close()
			return
		}
		s.conns[nc] = struct{}{}
		s.mu.Unlock()
		s.wg.Go(func() {
			defer func() {
				s.mu.Lock()
				delete(s.conns, nc)
				s.mu.Unlock()
				nc.Close()
			}()
			serveFrameEcho(nc)
		})
	}
}

// echoConn is one connection's state; only its goroutine touches it.
type echoConn struct {
	br   *bufio.Reader
	bw   *bufio.Writer
	fr   *http2.Framer
	henc *hpack.Encoder
	hbuf bytes.Buffer

	streams     map[uint32]*echoStream
	lastID      uint32 // highest stream the client opened
	sendWindow  int64  // what the client lets us send on the connection
	peerWindow  int32  // the client's SETTINGS_INITIAL_WINDOW_SIZE
	peerFrame   int    // the client's SETTINGS_MAX_FRAME_SIZE
	recvUnacked uint32 // connection bytes read and not yet given back
	blocked     map[*echoStream]struct{}
}

type echoStream struct {
	id         uint32
	in         []byte // bytes of an envelope not yet complete
	out        []byte // echo bytes; out[sent:] waits for window
	sent       int
	sendWindow int64
	unacked    uint32
	ended      bool // the client ended its side: end ours once out is sent
}

var errFrameEcho = errors.New("echoserver: unusable frame")

// serveFrameEcho serves one connection until it fails or the peer goes
// away; a TLS connection is handshaken first.
func serveFrameEcho(nc net.Conn) error {
	if tc, ok := nc.(*tls.Conn); ok {
		tc.SetDeadline(time.Now().Add(10 * time.Second))
		if err := tc.Handshake(); err != nil {
			return err
		}
		tc.SetDeadline(time.Time{})
	}
	c := &echoConn{
		br:         bufio.NewReaderSize(nc, 64<<10),
		bw:         bufio.NewWriterSize(nc, 64<<10),
		streams:    map[uint32]*echoStream{},
		sendWindow: 65535,
		peerWindow: 65535,
		peerFrame:  16384,
		blocked:    map[*echoStream]struct{}{},
	}
	preface := make([]byte, len(http2.ClientPreface))
	if _, err := io.ReadFull(c.br, preface); err != nil || string(preface) != http2.ClientPreface {
		return errFrameEcho
	}
	c.fr = http2.NewFramer(c.bw, c.br)
	c.fr.ReadMetaHeaders = hpack.NewDecoder(4096, nil)
	c.henc = hpack.NewEncoder(&c.hbuf)
	c.fr.WriteSettings(
		http2.Setting{ID: http2.SettingMaxConcurrentStreams, Val: 1 << 20},
		http2.Setting{ID: http2.SettingInitialWindowSize, Val: frameEchoStreamWindow},
	)
	c.fr.WriteWindowUpdate(0, frameEchoConnWindow-65535)
	for {
		if c.br.Buffered() == 0 {
			// About to wait for input: what was answered goes out now.
			if err := c.bw.Flush(); err != nil {
				return err
			}
		}
		f, err := c.fr.ReadFrame()
		if err != nil {
			c.bw.Flush()
			return err
		}
		if err := c.handle(f); err != nil {
			c.fr.WriteGoAway(c.lastID, http2.ErrCodeProtocol, nil)
			c.bw.Flush()
			return err
		}
	}
}

func (c *echoConn) handle(f http2.Frame) error {
	switch f := f.(type) {
	case *http2.MetaHeadersFrame:
		return c.onHeaders(f)
	case *http2.DataFrame:
		return c.onData(f)
	case *http2.WindowUpdateFrame:
		if f.StreamID == 0 {
			c.sendWindow += int64(f.Increment)
			// send puts back the streams that are still blocked: take
			// them all out first, so that none is visited twice.
			retry := make([]*echoStream, 0, len(c.blocked))
			for st := range c.blocked {
				retry = append(retry, st)
			}
			clear(c.blocked)
			for _, st := range retry {
				c.send(st)
			}
			return nil
		}
		if st := c.streams[f.StreamID]; st != nil {
			st.sendWindow += int64(f.Increment)
			delete(c.blocked, st)
			c.send(st)
		}
	case *http2.SettingsFrame:
		if f.IsAck() {
			return nil
		}
		err := f.ForeachSetting(func(s http2.Setting) error {
			switch s.ID {
			case http2.SettingInitialWindowSize:
				delta := int64(s.Val) - int64(c.peerWindow)
				c.peerWindow = int32(s.Val)
				for _, st := range c.streams {
					st.sendWindow += delta
				}
			case http2.SettingMaxFrameSize:
				c.peerFrame = int(s.Val)
			}
			return nil
		})
		if err != nil {
			return err
		}
		c.fr.WriteSettingsAck()
	case *http2.PingFrame:
		if !f.IsAck() {
			c.fr.WritePing(true, f.Data)
		}
	case *http2.RSTStreamFrame:
		c.drop(f.StreamID)
	case *http2.GoAwayFrame:
		return io.EOF
	}
	return nil
}

func (c *echoConn) onHeaders(f *http2.MetaHeadersFrame) error {
	id := f.StreamID
	if id%2 == 0 || id <= c.lastID {
		return errFrameEcho // trailers or a reused stream: not used by the clients measured
	}
	c.lastID = id
	st := &echoStream{id: id, sendWindow: int64(c.peerWindow)}
	c.streams[id] = st
	c.hbuf.Reset()
	c.henc.WriteField(hpack.HeaderField{Name: ":status", Value: "200"})
	c.henc.WriteField(hpack.HeaderField{Name: "content-type", Value: "application/vnd.amazon.eventstream"})
	c.fr.WriteHeaders(http2.HeadersFrameParam{StreamID: id, BlockFragment: c.hbuf.Bytes(), EndHeaders: true})
	if f.StreamEnded() {
		st.ended = true
		c.send(st)
	}
	return nil
}

func (c *echoConn) onData(f *http2.DataFrame) error {
	n := f.Header().Length
	c.recvUnacked += n
	if c.recvUnacked >= frameEchoConnWindow/4 {
		c.fr.WriteWindowUpdate(0, c.recvUnacked)
		c.recvUnacked = 0
	}
	st := c.streams[f.StreamID]
	if st == nil {
		return nil // reset meanwhile
	}
	st.unacked += n
	if st.unacked >= frameEchoStreamWindow/4 && !f.StreamEnded() {
		c.fr.WriteWindowUpdate(st.id, st.unacked)
		st.unacked = 0
	}
	st.in = append(st.in, f.Data()...)
	off := 0
	for len(st.in)-off >= 12 {
		env := st.in[off:]
		total := int(binary.BigEndian.Uint32(env))
		headers := int(binary.BigEndian.Uint32(env[4:]))
		if total < 16 || total > frameEchoMaxEnvelope || 12+headers > total-4 {
			c.fr.WriteRSTStream(st.id, http2.ErrCodeProtocol)
			c.drop(st.id)
			return nil
		}
		if len(env) < total {
			break
		}
		st.out = append(st.out, env[12+headers:total-4]...)
		off += total
	}
	st.in = st.in[:copy(st.in, st.in[off:])]
	if f.StreamEnded() {
		st.ended = true
	}
	c.send(st)
	return nil
}

// send writes what st has to echo, within the windows, and ends the
// stream once the client ended its side and everything went out.
func (c *echoConn) send(st *echoStream) {
	for st.sent < len(st.out) {
		n := min(int64(len(st.out)-st.sent), int64(c.peerFrame), st.sendWindow, c.sendWindow)
		if n <= 0 {
			c.blocked[st] = struct{}{}
			return
		}
		c.fr.WriteData(st.id, false, st.out[st.sent:st.sent+int(n)])
		st.sendWindow -= n
		c.sendWindow -= n
		st.sent += int(n)
	}
	st.out, st.sent = st.out[:0], 0
	if st.ended {
		c.fr.WriteData(st.id, true, nil)
		c.drop(st.id)
	}
}

func (c *echoConn) drop(id uint32) {
	if st := c.streams[id]; st != nil {
		delete(c.blocked, st)
		delete(c.streams, id)
	}
}
