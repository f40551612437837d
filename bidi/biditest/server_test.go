package biditest

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"io"
	"net/http"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"

	"github.com/sagemaker-bidi/sagemaker-bidi/internal/wire"
)

func TestServerConfig(t *testing.T) {
	s := newTestServer(t, nil)
	if !strings.HasPrefix(s.URL, "https://127.0.0.1:") && !strings.HasPrefix(s.URL, "https://[::1]:") {
		t.Fatalf("URL %q", s.URL)
	}
	cert := s.Certificate()
	if cert == nil || cert.VerifyHostname("127.0.0.1") != nil || cert.VerifyHostname("localhost") != nil || cert.VerifyHostname("::1") != nil {
		t.Fatalf("certificate does not cover the loopback names")
	}
	cfg := s.AWSConfig()
	if cfg.Region != defaultRegion || aws.ToString(cfg.BaseEndpoint) != s.URL || cfg.HTTPClient != s.client {
		t.Fatalf("AWSConfig %+v", cfg)
	}
	c, err := cfg.Credentials.Retrieve(t.Context())
	if err != nil || c.AccessKeyID != defaultAccessKeyID || c.SecretAccessKey != defaultSecretAccessKey {
		t.Fatalf("credentials %v %v", c.AccessKeyID, err)
	}
	opts := s.Client().Options()
	if opts.TLSConfig == nil || opts.TLSConfig.RootCAs == nil || aws.ToString(opts.BaseEndpoint) != s.URL || opts.Region != defaultRegion {
		t.Fatalf("client options %+v: want the SDK's own engine trusting the server", opts)
	}

	// The client trusts only this server's certificate.
	other := newTestServer(t, nil)
	req, _ := http.NewRequestWithContext(t.Context(), "POST", other.URL+"/", nil)
	if resp, err := s.client.Do(req); err == nil {
		resp.Body.Close()
		t.Fatal("the client of AWSConfig trusted another server's certificate")
	}
}

func TestHTTP1Rejected(t *testing.T) {
	called := make(chan struct{}, 1)
	s := newTestServer(t, handlerCalled(called))
	pool := x509.NewCertPool()
	pool.AddCert(s.Certificate())
	tr := &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}, Protocols: new(http.Protocols)}
	tr.Protocols.SetHTTP1(true)
	defer tr.CloseIdleConnections()
	rs := openRaw(t, s, "e", func(o *rawOptions) { o.client = &http.Client{Transport: tr} })
	rs.pw.Close()
	expectRejection(t, s, rs, called, http.StatusHTTPVersionNotSupported, "HttpVersionNotSupportedException", ruleHTTP2)
}

func TestH2C(t *testing.T) {
	s := newTestServer(t, Echo(), func(s *Server) { s.H2C = true })
	if !strings.HasPrefix(s.URL, "http://") || s.Certificate() != nil {
		t.Fatalf("URL %q", s.URL)
	}
	rs := openRaw(t, s, "e")
	rs.sendText("plain")
	if m := rs.mustNext(); string(m.Payload) != "plain" || rs.resp.ProtoMajor != 2 {
		t.Fatalf("echo %q over %s", m.Payload, rs.resp.Proto)
	}
	rs.end()
	if _, err := rs.next(); err != io.EOF {
		t.Fatal(err)
	}
}

// echoOnce sends one text and checks the echo.
func echoOnce(t *testing.T, rs *rawStream, text string) {
	t.Helper()
	if err := rs.sendText(text); err != nil {
		t.Fatal(err)
	}
	m := rs.mustNext()
	var p wire.Part
	wire.ParsePart(m, &p)
	if !p.Valid() || string(p.Bytes) != text {
		t.Fatalf("echo %q, want %q", m.Payload, text)
	}
}

// openAfterGoAway opens a stream right after GoAway and waits for its
// response. HTTP/2 has no acknowledgement of GOAWAY, so a client may still
// pick the old connection and be refused; like a real client, retry then.
func openAfterGoAway(t *testing.T, s *Server) *rawStream {
	t.Helper()
	for attempt := 1; ; attempt++ {
		rs := openRaw(t, s, "e")
		_, err := rs.response()
		if err == nil {
			return rs
		}
		if attempt == 3 || !strings.Contains(err.Error(), "GOAWAY") {
			t.Fatalf("open after GoAway: %v", err)
		}
	}
}

func TestGoAway(t *testing.T) {
	s := newTestServer(t, Echo())
	a := openRaw(t, s, "e")
	echoOnce(t, a, "a1")

	s.GoAway()

	// A new stream goes to a new connection.
	b := openAfterGoAway(t, s)
	echoOnce(t, b, "b1")
	streams := s.Streams()
	if len(streams) != 2 || streams[0].RemoteAddr == streams[1].RemoteAddr {
		t.Fatalf("stream after GOAWAY reused the old connection (%d streams)", len(streams))
	}
	// The running stream finishes normally.
	echoOnce(t, a, "a2")
	a.end()
	if _, err := a.next(); err != io.EOF {
		t.Fatalf("old stream end: %v", err)
	}
	b.end()
	if _, err := b.next(); err != io.EOF {
		t.Fatalf("new stream end: %v", err)
	}
	if v := s.Violations(); len(v) != 0 {
		t.Fatal(v)
	}
}

func TestCloseClientConnections(t *testing.T) {
	errc := make(chan error, 1)
	s := newTestServer(t, HandlerFunc(func(st *Stream) {
		st.Accept()
		_, err := st.RecvPart()
		<-st.Context().Done()
		errc <- err
	}))
	rs := openRaw(t, s, "e")
	rs.mustResponse()
	s.CloseClientConnections()
	if err := recvWithin(t, errc, "handler"); err == nil || errors.As(err, new(*Violation)) {
		t.Fatalf("RecvPart after the connection closed: %v", err)
	}
	if _, err := rs.next(); err == nil || err == io.EOF {
		t.Fatalf("client read after the connection closed: %v", err)
	}
	// The server still accepts connections.
	s2 := openRaw(t, s, "e")
	if resp := s2.mustResponse(); resp.StatusCode != 200 {
		t.Fatalf("status %d", resp.StatusCode)
	}
}

func TestPauseConnections(t *testing.T) {
	s := newTestServer(t, Echo())
	// A client that checks idle connections with PINGs.
	tr := s.client.Transport.(*http.Transport).Clone()
	tr.HTTP2 = &http.HTTP2Config{SendPingTimeout: 50 * time.Millisecond, PingTimeout: 100 * time.Millisecond}
	defer tr.CloseIdleConnections()
	rs := openRaw(t, s, "e", func(o *rawOptions) { o.client = &http.Client{Transport: tr} })
	echoOnce(t, rs, "before")

	resume := s.PauseConnections()
	start := time.Now()
	if _, err := rs.next(); err == nil || err == io.EOF {
		t.Fatalf("read from a paused server: %v, want a dead-peer error", err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Fatalf("dead peer detected after %v", d)
	}
	resume()
	resume() // a second time does nothing
	rs2 := openRaw(t, s, "e")
	echoOnce(t, rs2, "after")
}

func TestMaxConcurrentStreams(t *testing.T) {
	for _, limit := range []uint32{0, 1} {
		release := make(chan struct{})
		s := newTestServer(t, HandlerFunc(func(st *Stream) {
			st.Accept()
			select {
			case <-release:
			case <-st.Context().Done():
			}
		}), func(s *Server) { s.MaxConcurrentStreams = limit })
		a := openRaw(t, s, "e")
		a.mustResponse()
		b := openRaw(t, s, "e")
		b.mustResponse()
		close(release)
		streams := s.Streams()
		shared := streams[0].RemoteAddr == streams[1].RemoteAddr
		if shared != (limit == 0) {
			t.Errorf("MaxConcurrentStreams %d: streams share a connection = %v", limit, shared)
		}
	}
}

func TestNonReadingHandlerBlocksClient(t *testing.T) {
	release := make(chan struct{})
	received := make(chan int, 1)
	s := newTestServer(t, HandlerFunc(func(st *Stream) {
		st.Accept()
		select {
		case <-release:
		case <-st.Context().Done():
			return
		}
		n := 0
		for {
			if _, err := st.RecvPart(); err != nil {
				received <- n
				return
			}
			n++
		}
	}), func(s *Server) { s.MaxReceiveBufferPerStream = 16 << 10 })

	const parts = 64 // of 4 KiB: 256 KiB, far beyond the 16 KiB window
	rs := openRaw(t, s, "e")
	rs.mustResponse()
	var written atomic.Int32
	done := make(chan error, 1)
	go func() {
		payload := make([]byte, 4<<10)
		for i := 0; i < parts; i++ {
			if err := rs.sendPart(wire.Part{Bytes: payload}); err != nil {
				done <- err
				return
			}
			written.Add(1)
		}
		done <- rs.end()
	}()

	// Wait until the client is blocked: net/http's request-body writer
	// waits for flow-control window. (The wait names a function internal
	// to net/http; if a Go release renames it, this wait times out.)
	if err := waitParked("net/http.(*http2clientStream).awaitFlowControl"); err != nil {
		t.Fatal(err)
	}
	if n := written.Load(); n >= parts/2 {
		t.Fatalf("the client wrote %d of %d parts to a handler that does not read", n, parts)
	}
	close(release)
	if err := recvWithin(t, done, "writer"); err != nil {
		t.Fatal(err)
	}
	if n := recvWithin(t, received, "handler"); n != parts {
		t.Fatalf("handler received %d parts, want %d", n, parts)
	}
}

func TestCloseWaitsForHandlersAndLeaksNothing(t *testing.T) {
	before := runtime.NumGoroutine()

	var returned atomic.Int32
	cancelled := make(chan struct{}, 4)
	release := make(chan struct{})
	s := NewServer(HandlerFunc(func(st *Stream) {
		defer returned.Add(1)
		st.Accept()
		<-st.Context().Done()
		cancelled <- struct{}{}
		<-release // Close must wait for this
	}))
	var streams []*rawStream
	for range 3 {
		rs := openRaw(t, s, "e")
		rs.mustResponse()
		streams = append(streams, rs)
	}
	s.GoAway() // a shut-down generation must not leak either
	streams = append(streams, openAfterGoAway(t, s))

	closed := make(chan struct{})
	go func() { s.Close(); close(closed) }()
	for range 4 {
		recvWithin(t, cancelled, "a handler's context cancelled by Close")
	}
	select {
	case <-closed:
		t.Fatal("Close returned while the handlers were running")
	default:
	}
	close(release)
	recvWithin(t, closed, "Close")
	if n := returned.Load(); n != 4 {
		t.Fatalf("Close returned with %d of 4 handlers done", n)
	}
	s.Close() // idempotent
	for _, rs := range streams {
		rs.close()
	}

	// Nothing signals goroutines' exit: poll.
	deadline := time.Now().Add(5 * time.Second)
	for runtime.NumGoroutine() > before {
		if time.Now().After(deadline) {
			buf := make([]byte, 1<<16)
			t.Fatalf("%d goroutines before, %d after Close:\n%s", before, runtime.NumGoroutine(), buf[:runtime.Stack(buf, true)])
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func TestCloseUnstarted(t *testing.T) {
	s := NewUnstartedServer(nil)
	s.Close()
	defer func() {
		if recover() == nil {
			t.Fatal("Start after Close did not panic")
		}
	}()
	s.Start()
}
