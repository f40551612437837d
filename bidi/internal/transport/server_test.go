package transport

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"

	"github.com/sagemaker-bidi/sagemaker-bidi/eventstream"
	"github.com/sagemaker-bidi/sagemaker-bidi/internal/loopbackcert"
	"github.com/sagemaker-bidi/sagemaker-bidi/internal/memnet"
)

// This file is the test harness: a scriptable raw HTTP/2 server on
// loopback (testServer), a test request body (testBody) and the check that
// no goroutine of the engine outlives its Transport.

// frameTimeout bounds every read of a script, so that a script never
// hangs a test.
const frameTimeout = 5 * time.Second

// serverOpts configures a testServer.
type serverOpts struct {
	TLS bool // TLS with ALPN h2 and the test certificate; else h2c
	// SmallBuffers shrinks the kernel socket buffers of the accepted
	// connections, so that a peer that stops reading stalls its writer
	// after a few KiB.
	SmallBuffers bool
	// NextProtos replaces the server's ALPN list (TLS only).
	NextProtos []string
	// RequireClientCert makes the TLS server require a client
	// certificate (TLS only).
	RequireClientCert bool
	// Mem listens on a memnet.Listener instead of loopback, for a test
	// in a testing/synctest bubble: the client dials it with the
	// server's dial (Config.DialContext).
	Mem bool
}

// dial is the Config.DialContext of a client of a server with Mem set.
func (s *testServer) dial(ctx context.Context, network, addr string) (net.Conn, error) {
	return s.ln.(*memnet.Listener).DialContext(ctx, network, addr)
}

// testServer accepts connections on loopback and runs script on each, in
// a goroutine of its own. Scripts read and write raw frames through a
// serverConn.
type testServer struct {
	t      *testing.T
	ln     net.Listener
	url    *url.URL
	opts   serverOpts
	script func(*serverConn)

	accepted atomic.Int32
	wg       sync.WaitGroup
	done     chan struct{} // closed by close
	mu       sync.Mutex
	conns    []net.Conn
}

func newTestServer(t *testing.T, opts serverOpts, script func(*serverConn)) *testServer {
	t.Helper()
	var ln net.Listener
	if opts.Mem {
		ln = memnet.Listen()
	} else {
		lc := net.ListenConfig{}
		if opts.SmallBuffers {
			lc.Control = smallBuffers
		}
		var err error
		if ln, err = lc.Listen(context.Background(), "tcp", "127.0.0.1:0"); err != nil {
			t.Fatal(err)
		}
	}
	scheme := "http"
	if opts.TLS {
		scheme = "https"
	}
	s := &testServer{
		t:      t,
		ln:     ln,
		url:    &url.URL{Scheme: scheme, Host: ln.Addr().String(), Path: "/invocations"},
		opts:   opts,
		script: script,
		done:   make(chan struct{}),
	}
	s.wg.Add(1)
	go s.accept()
	t.Cleanup(s.close)
	return s
}

func (s *testServer) accept() {
	defer s.wg.Done()
	for {
		raw, err := s.ln.Accept()
		if err != nil {
			return
		}
		s.mu.Lock()
		s.conns = append(s.conns, raw)
		s.mu.Unlock()
		n := s.accepted.Add(1)
		nc := raw
		if s.opts.TLS {
			cfg := serverTLS()
			if s.opts.NextProtos != nil {
				cfg = cfg.Clone()
				cfg.NextProtos = s.opts.NextProtos
			}
			if s.opts.RequireClientCert {
				cfg = cfg.Clone()
				cfg.ClientAuth = tls.RequireAnyClientCert
			}
			nc = tls.Server(raw, cfg)
		}
		sc := &serverConn{t: s.t, srv: s, n: int(n), raw: raw, nc: nc}
		sc.fr = http2.NewFramer(nc, nc)
		sc.fr.ReadMetaHeaders = hpack.NewDecoder(4096, nil)
		sc.fr.MaxHeaderListSize = 1 << 20
		sc.henc = hpack.NewEncoder(&sc.hbuf)
		s.wg.Add(1)
		go func() {
			defer s.wg.Done()
			defer raw.Close()
			s.script(sc)
		}()
	}
}

// close stops the server, closes its connections and waits for the
// scripts.
func (s *testServer) close() {
	close(s.done)
	s.ln.Close()
	s.mu.Lock()
	for _, c := range s.conns {
		c.Close()
	}
	s.mu.Unlock()
	waited := make(chan struct{})
	go func() { s.wg.Wait(); close(waited) }()
	select {
	case <-waited:
	case <-time.After(10 * time.Second):
		s.t.Errorf("server scripts still running 10s after the server closed")
	}
}

// serverConn is one accepted connection, as a script sees it.
type serverConn struct {
	t   *testing.T
	srv *testServer
	n   int      // 1 for the first connection accepted
	raw net.Conn // the TCP connection
	nc  net.Conn // raw, or the TLS connection over it
	fr  *http2.Framer

	wmu  sync.Mutex // serialises writes and the encoder
	henc *hpack.Encoder
	hbuf bytes.Buffer
}

// fatalf fails the test and ends the script.
func (sc *serverConn) fatalf(format string, args ...any) {
	sc.t.Helper()
	sc.t.Errorf("server conn %d: "+format, append([]any{sc.n}, args...)...)
	runtime.Goexit()
}

// frame is a copy of a frame read by the server (the framer's frames are
// valid until its next read).
type frame struct {
	Type      http2.FrameType
	StreamID  uint32
	EndStream bool
	Ack       bool
	Data      []byte              // DATA
	Fields    []hpack.HeaderField // HEADERS, decoded
	Code      http2.ErrCode       // RST_STREAM, GOAWAY
	LastID    uint32              // GOAWAY
	Increment uint32              // WINDOW_UPDATE
	Settings  []http2.Setting     // SETTINGS
	Ping      [8]byte             // PING
}

func (f frame) String() string {
	return fmt.Sprintf("%v stream=%d end=%v ack=%v len=%d code=%v inc=%d", f.Type, f.StreamID, f.EndStream, f.Ack, len(f.Data), f.Code, f.Increment)
}

// field returns the value of the header field name.
func (f frame) field(name string) string {
	for _, hf := range f.Fields {
		if hf.Name == name {
			return hf.Value
		}
	}
	return ""
}

func copyFrame(f http2.Frame) frame {
	c := frame{Type: f.Header().Type, StreamID: f.Header().StreamID}
	switch f := f.(type) {
	case *http2.DataFrame:
		c.Data = bytes.Clone(f.Data())
		c.EndStream = f.StreamEnded()
	case *http2.MetaHeadersFrame:
		c.Fields = append([]hpack.HeaderField(nil), f.Fields...)
		c.EndStream = f.StreamEnded()
	case *http2.RSTStreamFrame:
		c.Code = f.ErrCode
	case *http2.GoAwayFrame:
		c.Code, c.LastID = f.ErrCode, f.LastStreamID
	case *http2.WindowUpdateFrame:
		c.Increment = f.Increment
	case *http2.SettingsFrame:
		c.Ack = f.IsAck()
		f.ForeachSetting(func(s http2.Setting) error { c.Settings = append(c.Settings, s); return nil })
	case *http2.PingFrame:
		c.Ack, c.Ping = f.IsAck(), f.Data
	}
	return c
}

// readFrame reads the next frame within frameTimeout.
func (sc *serverConn) readFrame() (frame, error) {
	sc.nc.SetReadDeadline(time.Now().Add(frameTimeout))
	f, err := sc.fr.ReadFrame()
	if err != nil {
		return frame{}, err
	}
	return copyFrame(f), nil
}

// expect reads frames until one satisfies pred, skipping the others.
func (sc *serverConn) expect(what string, pred func(frame) bool) frame {
	sc.t.Helper()
	for {
		f, err := sc.readFrame()
		if err != nil {
			sc.fatalf("waiting for %s: %v", what, err)
		}
		if pred(f) {
			return f
		}
	}
}

// headers waits for the HEADERS of a new stream.
func (sc *serverConn) headers() frame {
	sc.t.Helper()
	return sc.expect("HEADERS", func(f frame) bool { return f.Type == http2.FrameHeaders })
}

// reset waits for a RST_STREAM on stream id.
func (sc *serverConn) reset(id uint32) frame {
	sc.t.Helper()
	return sc.expect(fmt.Sprintf("RST_STREAM on stream %d", id), func(f frame) bool {
		return f.Type == http2.FrameRSTStream && f.StreamID == id
	})
}

// goAway waits for a GOAWAY from the client.
func (sc *serverConn) goAway() frame {
	sc.t.Helper()
	return sc.expect("GOAWAY", func(f frame) bool { return f.Type == http2.FrameGoAway })
}

// body reads the DATA of stream id until END_STREAM and returns it.
func (sc *serverConn) body(id uint32) []byte {
	sc.t.Helper()
	var b []byte
	for {
		f := sc.expect("DATA", func(f frame) bool { return f.StreamID == id })
		switch f.Type {
		case http2.FrameData:
			b = append(b, f.Data...)
			if f.EndStream {
				return b
			}
		case http2.FrameRSTStream:
			sc.fatalf("stream %d reset by the client (%v) while reading its body", id, f.Code)
		}
	}
}

// frames reads frames in a goroutine of its own until the connection
// ends, and sends them on the returned channel, closed at the end.
func (sc *serverConn) frames() <-chan frame {
	ch := make(chan frame, 16)
	go func() {
		defer close(ch)
		for {
			sc.nc.SetReadDeadline(time.Now().Add(30 * time.Second))
			f, err := sc.fr.ReadFrame()
			if err != nil {
				return
			}
			ch <- copyFrame(f)
		}
	}()
	return ch
}

// drain reads and drops frames until the connection ends: the end of a
// script that lets the client finish in its own time.
func (sc *serverConn) drain() {
	for {
		sc.nc.SetReadDeadline(time.Now().Add(30 * time.Second))
		if _, err := sc.fr.ReadFrame(); err != nil {
			return
		}
	}
}

// eof waits until the client closes the connection and reports whether it
// did within frameTimeout (frames before are dropped).
func (sc *serverConn) eof() bool {
	for {
		_, err := sc.readFrame()
		if err != nil {
			return !isTimeout(err)
		}
	}
}

// handshake reads the client preface and SETTINGS and answers with
// settings and the SETTINGS acknowledgement.
func (sc *serverConn) handshake(settings ...http2.Setting) {
	sc.t.Helper()
	sc.nc.SetReadDeadline(time.Now().Add(frameTimeout))
	preface := make([]byte, len(http2.ClientPreface))
	if _, err := io.ReadFull(sc.nc, preface); err != nil {
		sc.fatalf("reading the client preface: %v", err)
	}
	if string(preface) != http2.ClientPreface {
		sc.fatalf("client preface %q", preface)
	}
	f, err := sc.readFrame()
	if err != nil || f.Type != http2.FrameSettings || f.Ack {
		sc.fatalf("first client frame %v, %v; want SETTINGS", f, err)
	}
	sc.write(func() error { return sc.fr.WriteSettings(settings...) })
	// The client's dial completes with the SETTINGS above: a client that
	// then closes at once (Transport.Close during the dial) may be gone
	// before this acknowledgement, which the tests' own checks cover.
	sc.tryWrite(func() error { return sc.fr.WriteSettingsAck() })
}

// handshakeTolerant is handshake for a server whose SETTINGS make the
// client leave: writes after the SETTINGS may fail.
func (sc *serverConn) handshakeTolerant(settings ...http2.Setting) {
	sc.t.Helper()
	sc.nc.SetReadDeadline(time.Now().Add(frameTimeout))
	preface := make([]byte, len(http2.ClientPreface))
	if _, err := io.ReadFull(sc.nc, preface); err != nil {
		sc.fatalf("reading the client preface: %v", err)
	}
	sc.write(func() error { return sc.fr.WriteSettings(settings...) })
	sc.tryWrite(func() error { return sc.fr.WriteSettingsAck() })
}

// write runs one framer write under the write lock; a failed write ends
// the script (the client went away).
func (sc *serverConn) write(w func() error) {
	sc.t.Helper()
	if err := sc.tryWrite(w); err != nil {
		sc.fatalf("write: %v", err)
	}
}

func (sc *serverConn) tryWrite(w func() error) error {
	sc.wmu.Lock()
	defer sc.wmu.Unlock()
	sc.nc.SetWriteDeadline(time.Now().Add(frameTimeout))
	return w()
}

// writeHeaders writes a response head: :status, then name/value pairs.
func (sc *serverConn) writeHeaders(id uint32, status int, end bool, kv ...string) {
	sc.t.Helper()
	sc.write(func() error {
		sc.hbuf.Reset()
		sc.henc.WriteField(hpack.HeaderField{Name: ":status", Value: fmt.Sprint(status)})
		for i := 0; i+1 < len(kv); i += 2 {
			sc.henc.WriteField(hpack.HeaderField{Name: kv[i], Value: kv[i+1]})
		}
		return sc.fr.WriteHeaders(http2.HeadersFrameParam{StreamID: id, BlockFragment: sc.hbuf.Bytes(), EndStream: end, EndHeaders: true})
	})
}

func (sc *serverConn) writeData(id uint32, end bool, data []byte) {
	sc.t.Helper()
	sc.write(func() error { return sc.fr.WriteData(id, end, data) })
}

func (sc *serverConn) writeReset(id uint32, code http2.ErrCode) {
	sc.t.Helper()
	sc.write(func() error { return sc.fr.WriteRSTStream(id, code) })
}

func (sc *serverConn) writeGoAway(last uint32, code http2.ErrCode) {
	sc.t.Helper()
	sc.write(func() error { return sc.fr.WriteGoAway(last, code, []byte("test")) })
}

func (sc *serverConn) writeWindowUpdate(id, inc uint32) {
	sc.t.Helper()
	sc.write(func() error { return sc.fr.WriteWindowUpdate(id, inc) })
}

// writeRaw writes bytes as they are (hand-made frames).
func (sc *serverConn) writeRaw(b []byte) {
	sc.t.Helper()
	sc.write(func() error { _, err := sc.nc.Write(b); return err })
}

// ping writes a PING and waits for its acknowledgement: everything the
// server sent before was processed by the client's read loop.
func (sc *serverConn) ping() {
	sc.t.Helper()
	data := [8]byte{'s', 'y', 'n', 'c'}
	sc.write(func() error { return sc.fr.WritePing(false, data) })
	sc.expect("PING ack", func(f frame) bool { return f.Type == http2.FramePing && f.Ack && f.Ping == data })
}

// smallBuffers is a socket Control function that shrinks the kernel
// buffers.
func smallBuffers(network, address string, c syscall.RawConn) error {
	return c.Control(func(fd uintptr) {
		syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVBUF, 4096)
		syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_SNDBUF, 4096)
	})
}

// The test certificate: self-signed, for the loopback addresses.
var (
	certOnce  sync.Once
	serverCfg *tls.Config
	clientCfg *tls.Config
)

func makeCert() {
	cert, err := loopbackcert.New("transport test")
	if err != nil {
		panic(err)
	}
	pool := x509.NewCertPool()
	pool.AddCert(cert.Leaf)
	serverCfg = &tls.Config{Certificates: []tls.Certificate{cert}, NextProtos: []string{"h2"}}
	clientCfg = &tls.Config{RootCAs: pool}
}

func serverTLS() *tls.Config { certOnce.Do(makeCert); return serverCfg }
func clientTLS() *tls.Config { certOnce.Do(makeCert); return clientCfg }

// testConfig is a Config for tests: it trusts the test certificate,
// dials within a second, keeps idle connections, and counts dials.
func testConfig(dials *atomic.Int32) Config {
	cfg := Config{
		TLSConfig:   clientTLS(),
		DialTimeout: 2 * time.Second,
		IdleTimeout: -1,
	}
	if dials != nil {
		cfg.Hooks = &Hooks{Dialed: func(string, error) { dials.Add(1) }}
	}
	return cfg
}

// newTransport returns a Transport that is closed when the test ends,
// after which no goroutine of the engine may be left.
func newTransport(t *testing.T, cfg Config) *Transport {
	t.Helper()
	tr := New(cfg)
	t.Cleanup(func() {
		tr.Close()
		checkNoEngineGoroutines(t)
	})
	return tr
}

// engineGoroutines returns the stacks of the goroutines running engine
// code (or created by it).
func engineGoroutines() []string {
	buf := make([]byte, 1<<20)
	for {
		n := runtime.Stack(buf, true)
		if n < len(buf) {
			buf = buf[:n]
			break
		}
		buf = make([]byte, 2*len(buf))
	}
	var found []string
	for _, g := range strings.Split(string(buf), "\n\n") {
		for _, m := range []string{"transport.(*conn)", "transport.(*pool)", "transport.(*Stream)", "transport.(*Transport)"} {
			if strings.Contains(g, m) {
				found = append(found, g)
				break
			}
		}
	}
	return found
}

// checkNoEngineGoroutines fails t if engine goroutines are still running
// a moment after the transport closed.
func checkNoEngineGoroutines(t *testing.T) {
	t.Helper()
	// Goroutines leave at once; the bound only ends the wait for one
	// that never does, with room for a loaded machine.
	deadline := time.Now().Add(10 * time.Second)
	for {
		gs := engineGoroutines()
		if len(gs) == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Errorf("%d engine goroutines left after Close:\n%s", len(gs), strings.Join(gs, "\n\n"))
			return
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// waitFor polls cond (a state of the engine) until it holds, for at most
// frameTimeout.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(frameTimeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(time.Millisecond)
	}
}

// testBody is a request body: a byte queue of bounded size. write blocks
// while the queue is full, as a session's Send does.
type testBody struct {
	mu     sync.Mutex
	buf    []byte
	limit  int
	ended  bool
	err    error // returned by ReadNow (a failing body)
	ready  func()
	closed bool
	space  chan struct{} // cap 1: ReadNow took bytes, or Close
	closeC chan struct{} // closed by Close
	closes atomic.Int32
}

func newBody(limit int) *testBody {
	return &testBody{limit: limit, space: make(chan struct{}, 1), closeC: make(chan struct{})}
}

// bodyOf returns an ended body holding b.
func bodyOf(b string) *testBody {
	tb := newBody(len(b) + 1)
	tb.buf = []byte(b)
	tb.ended = true
	return tb
}

func (b *testBody) Bind(ready func()) {
	b.mu.Lock()
	b.ready = ready
	b.mu.Unlock()
	ready()
}

func (b *testBody) ReadNow(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.err != nil {
		return 0, b.err
	}
	n := copy(p, b.buf)
	b.buf = b.buf[n:]
	if n > 0 {
		select {
		case b.space <- struct{}{}:
		default:
		}
	}
	if len(b.buf) == 0 && b.ended {
		return n, io.EOF
	}
	if n == 0 {
		return 0, eventstream.ErrWouldBlock
	}
	return n, nil
}

func (b *testBody) Close() error {
	if b.closes.Add(1) > 1 {
		panic("testBody closed twice")
	}
	b.mu.Lock()
	b.closed = true
	b.mu.Unlock()
	close(b.closeC)
	return nil
}

var errBodyClosed = errors.New("test body closed")

// write queues p, waiting while the queue is full; it fails once the
// engine closed the body or ctx ends.
func (b *testBody) write(ctx context.Context, p []byte) error {
	for len(p) > 0 {
		b.mu.Lock()
		if b.closed {
			b.mu.Unlock()
			return errBodyClosed
		}
		n := min(len(p), b.limit-len(b.buf))
		b.buf = append(b.buf, p[:n]...)
		p = p[n:]
		ready := b.ready
		b.mu.Unlock()
		if n > 0 && ready != nil {
			ready()
		}
		if len(p) == 0 {
			break
		}
		select {
		case <-b.space:
		case <-b.closeC:
		case <-ctx.Done():
			return context.Cause(ctx)
		}
	}
	return nil
}

// end marks the end of the body.
func (b *testBody) end() {
	b.mu.Lock()
	b.ended = true
	ready := b.ready
	b.mu.Unlock()
	if ready != nil {
		ready()
	}
}

// testCtx returns a context that ends with the test or after 10 s.
func testCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// readAll reads st to its end and returns the bytes and the final error
// (io.EOF for a clean end).
func readAll(st *Stream) ([]byte, error) {
	var b []byte
	buf := make([]byte, 4096)
	for {
		n, err := readWait(st, buf)
		b = append(b, buf[:n]...)
		if err != nil {
			return b, err
		}
	}
}

// readWait is a Read that waits, through the stream's notify function,
// until bytes, the end or an error are ready.
func readWait(st *Stream, p []byte) (int, error) {
	wake := make(chan struct{}, 1)
	st.SetNotify(func() {
		select {
		case wake <- struct{}{}:
		default:
		}
	})
	for {
		n, err := st.Read(p)
		if err != eventstream.ErrWouldBlock {
			return n, err
		}
		<-wake
	}
}

// readFull reads exactly len(p) bytes, waiting for them.
func readFull(st *Stream, p []byte) (int, error) {
	n := 0
	for n < len(p) {
		k, err := readWait(st, p[n:])
		n += k
		if err != nil {
			return n, err
		}
	}
	return n, nil
}

// typedErr reports whether err is one the engine promises: a
// *StreamError, a *ConnError, or one matching ErrRefused, ErrNotHTTP2,
// ErrDeadPeer or ErrClosed.
func typedErr(err error) bool {
	var se *StreamError
	var ce *ConnError
	return errors.As(err, &se) || errors.As(err, &ce) || errors.Is(err, ErrRefused) ||
		errors.Is(err, ErrNotHTTP2) || errors.Is(err, ErrDeadPeer) || errors.Is(err, ErrClosed)
}
