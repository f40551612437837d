package biditest

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"log"
	"net"
	"net/http"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"testing/synctest"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"

	"github.com/sagemaker-bidi/sagemaker-bidi/bidi"
	"github.com/sagemaker-bidi/sagemaker-bidi/internal/memnet"
	"github.com/sagemaker-bidi/sagemaker-bidi/internal/wire"
)

// The tests of the limits a hostile local client meets: accept backoff,
// timeouts, caps on connections, streams and buffered bytes, bounded
// error text, the stream-age cap against a client that stops reading,
// and the byte budgets of WholeMessages and recording.

// exhaustedListener fails its first n accepts as a process out of
// descriptors does (EMFILE), then accepts; recovered is closed by the
// first accept that follows the failures.
type exhaustedListener struct {
	net.Listener
	mu        sync.Mutex
	n         int
	recovered chan struct{}
}

func (l *exhaustedListener) Accept() (net.Conn, error) {
	l.mu.Lock()
	if l.n > 0 {
		l.n--
		l.mu.Unlock()
		return nil, &net.OpError{Op: "accept", Net: "tcp", Err: os.NewSyscallError("accept4", syscall.EMFILE)}
	}
	if l.recovered != nil {
		close(l.recovered)
		l.recovered = nil
	}
	l.mu.Unlock()
	return l.Listener.Accept()
}

// A run of failed accepts (the descriptor limit reached) does not stop
// the server: it retries with backoff and serves the next client.
func TestAcceptRetriesTemporaryErrors(t *testing.T) {
	inner, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ln := &exhaustedListener{Listener: inner, n: 4, recovered: make(chan struct{})}
	recovered := ln.recovered
	s := newTestServer(t, Echo(), func(s *Server) {
		s.Listener = ln
		s.ErrorLog = discardLog()
	})
	recvWithin(t, recovered, "an accept after the failures")
	rs := openRaw(t, s, "e")
	rs.sendText("still serving")
	if m := rs.mustNext(); string(m.Payload) != "still serving" {
		t.Fatalf("echo %q", m.Payload)
	}
}

// A connection that stalls in the TLS handshake (half a record, the
// slowloris of TLS) is dropped after HandshakeTimeout.
func TestHandshakeTimeout(t *testing.T) {
	s := newTestServer(t, Echo(), func(s *Server) {
		s.HandshakeTimeout = 50 * time.Millisecond
		s.ErrorLog = discardLog()
	})
	c, err := net.Dial("tcp", s.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.Write([]byte{0x16, 0x03, 0x01}) // half a TLS record header
	expectClosedByServer(t, c)
}

// An HTTP/2 connection that never opens a stream is closed after
// IdleTimeout.
func TestIdleTimeout(t *testing.T) {
	// On a synctest clock over memnet: net/http closes the connection a
	// second after its GOAWAY, which takes no real time then.
	synctest.Test(t, func(t *testing.T) {
		l := memnet.Listen()
		s := newTestServer(t, Echo(), func(s *Server) {
			s.IdleTimeout = 50 * time.Millisecond
			s.Listener = l
		})
		raw, err := l.DialContext(t.Context(), "tcp", "")
		if err != nil {
			t.Fatal(err)
		}
		c := handshakeH2(t, s, raw)
		defer c.Close()
		start := time.Now()
		expectClosedByServer(t, c)
		if d := time.Since(start); d < 50*time.Millisecond {
			t.Fatalf("closed after %v, before the idle timeout", d)
		}
	})
}

// dialH2 opens a TLS connection negotiating h2 and sends the HTTP/2
// preface and an empty SETTINGS frame, and nothing else.
func dialH2(t *testing.T, s *Server) net.Conn {
	t.Helper()
	pool := x509.NewCertPool()
	pool.AddCert(s.Certificate())
	c, err := tls.Dial("tcp", s.Listener.Addr().String(), &tls.Config{RootCAs: pool, NextProtos: []string{"h2"}})
	if err != nil {
		t.Fatal(err)
	}
	return prefaceH2(t, c)
}

// handshakeH2 is dialH2 over raw, a connection to s already made.
func handshakeH2(t *testing.T, s *Server, raw net.Conn) net.Conn {
	t.Helper()
	pool := x509.NewCertPool()
	pool.AddCert(s.Certificate())
	c := tls.Client(raw, &tls.Config{RootCAs: pool, ServerName: "127.0.0.1", NextProtos: []string{"h2"}})
	if err := c.HandshakeContext(t.Context()); err != nil {
		t.Fatal(err)
	}
	return prefaceH2(t, c)
}

// prefaceH2 sends the HTTP/2 preface and an empty SETTINGS frame on c.
func prefaceH2(t *testing.T, c net.Conn) net.Conn {
	t.Helper()
	preface := "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"
	settings := []byte{0, 0, 0, 0x4, 0, 0, 0, 0, 0} // length 0, type SETTINGS, no flags, stream 0
	if _, err := c.Write(append([]byte(preface), settings...)); err != nil {
		t.Fatal(err)
	}
	return c
}

// expectClosedByServer reads c until it fails and fails the test if that
// is a read timeout (testTimeout) rather than the server closing it.
func expectClosedByServer(t *testing.T, c net.Conn) {
	t.Helper()
	c.SetReadDeadline(time.Now().Add(testTimeout))
	_, err := io.Copy(io.Discard, c)
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		t.Fatalf("the server kept the connection open: %v", err)
	}
}

// A connection over MaxConnections is closed at once; once one closes,
// the server accepts streams again.
func TestMaxConnections(t *testing.T) {
	s := newTestServer(t, Echo(), func(s *Server) {
		s.MaxConnections = 2
		s.ErrorLog = discardLog()
	})
	var held []net.Conn
	for range 2 {
		c := dialH2(t, s)
		defer c.Close()
		held = append(held, c)
	}
	waitUntil(t, "two connections held", func() bool { return connCount(s) == 2 })
	over, err := net.Dial("tcp", s.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer over.Close()
	expectClosedByServer(t, over)

	held[0].Close()
	waitUntil(t, "a connection released", func() bool { return connCount(s) == 1 })
	rs := openRaw(t, s, "e")
	rs.sendText("room again")
	if m := rs.mustNext(); string(m.Payload) != "room again" {
		t.Fatalf("echo %q", m.Payload)
	}
}

func connCount(s *Server) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.conns)
}

// waitUntil polls cond until it holds, or fails the test after
// testTimeout.
func waitUntil(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(testTimeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting until %s", what)
		}
		time.Sleep(time.Millisecond)
	}
}

// A stream over MaxSessions is answered 503 ServiceUnavailableError
// without reaching the handler; a stream ending makes room.
func TestMaxSessions(t *testing.T) {
	release := make(chan struct{})
	running := make(chan struct{}, 2)
	s := newTestServer(t, HandlerFunc(func(st *Stream) {
		running <- struct{}{}
		<-release
	}), func(s *Server) {
		s.MaxSessions = 1
		s.ErrorLog = discardLog()
	})
	first := openRaw(t, s, "e")
	recvWithin(t, running, "the first stream")
	second := openRaw(t, s, "e")
	resp := second.mustResponse()
	if resp.StatusCode != http.StatusServiceUnavailable || resp.Header.Get("X-Amzn-ErrorType") != "ServiceUnavailableError" {
		t.Fatalf("over the cap: %d %v", resp.StatusCode, resp.Header)
	}
	close(release)
	first.end()
	first.mustResponse()
	waitUntil(t, "the first stream ended", func() bool {
		s.mu.Lock()
		defer s.mu.Unlock()
		return s.sessions == 0
	})
	third := openRaw(t, s, "e")
	recvWithin(t, running, "a stream once there is room")
	third.end()
}

// An event over MaxEventSize fails the stream from its length prefix: the
// server does not wait for (or buffer) the bytes it announces.
func TestMaxEventSize(t *testing.T) {
	s := newTestServer(t, Echo(), func(s *Server) { s.MaxEventSize = 4 << 10 })
	rs := openRaw(t, s, "e")
	rs.sendText("small")
	if m := rs.mustNext(); string(m.Payload) != "small" {
		t.Fatalf("echo %q", m.Payload)
	}
	// The prelude of a 23 MiB envelope, and nothing more.
	var prelude [12]byte
	binary.BigEndian.PutUint32(prelude[0:], 23<<20)
	binary.BigEndian.PutUint32(prelude[4:], 0)
	binary.BigEndian.PutUint32(prelude[8:], crc32.ChecksumIEEE(prelude[:8]))
	rs.write(prelude[:])
	m := rs.mustNext()
	if wire.String(m, ":message-type") != "error" || !strings.Contains(wire.String(m, ":error-message"), "MaxEventSize") {
		t.Fatalf("after an oversized prelude: %v", m.Headers)
	}
	if rules := violationsOf(s); len(rules) != 1 || rules[0] != ruleFraming {
		t.Fatalf("violations %v", s.Violations())
	}
}

// However many headers a request carries and however long its
// SignedHeaders, the 403 names a few headers only.
func TestSignedHeadersErrorBounded(t *testing.T) {
	s := newTestServer(t, Echo())
	rs := openRaw(t, s, "e", func(o *rawOptions) {
		o.afterSign = func(r *http.Request) {
			for i := range 2000 {
				r.Header.Set("X-Amz-Unsigned-"+strings.Repeat("x", 20)+itoa(i), "v")
			}
		}
	})
	resp := rs.mustResponse()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusForbidden || len(body) > 600 || !strings.Contains(string(body), "1997 more") {
		t.Fatalf("%d, %d-byte body %.300s", resp.StatusCode, len(body), body)
	}
	var v *Violation
	if errs := s.Violations(); len(errs) != 1 || !errors.As(errs[0], &v) || len(v.Error()) > 700 {
		t.Fatalf("violations %v", errs)
	}
}

func itoa(i int) string { return strconv.Itoa(i) }

// At MaxStreamAge a stream ends even while the client reads nothing: the
// handler's Send, blocked by flow control, fails with ErrMaxStreamAge and
// the handler returns.
func TestMaxStreamAgeClientNotReading(t *testing.T) {
	sendErr := make(chan error, 1)
	s := newTestServer(t, HandlerFunc(func(st *Stream) {
		chunk := make([]byte, 16<<10)
		for {
			if err := st.Send(bidi.Binary(chunk)); err != nil {
				sendErr <- err
				return
			}
		}
	}), func(s *Server) { s.MaxStreamAge = 100 * time.Millisecond })
	tr := s.client.Transport.(*http.Transport).Clone()
	tr.HTTP2 = &http.HTTP2Config{MaxReceiveBufferPerStream: 64 << 10}
	defer tr.CloseIdleConnections()
	rs := openRaw(t, s, "e", func(o *rawOptions) { o.client = &http.Client{Transport: tr} })
	rs.mustResponse() // and never read the body
	if err := recvWithin(t, sendErr, "the blocked Send"); !errors.Is(err, ErrMaxStreamAge) {
		t.Fatalf("Send: %v, want ErrMaxStreamAge", err)
	}
	waitUntil(t, "the stream ended", func() bool {
		s.mu.Lock()
		defer s.mu.Unlock()
		return s.sessions == 0
	})
}

// With WholeMessages, held parts count their bookkeeping as well as their
// payload: a flood of empty PARTIAL parts ends like an oversized message.
func TestWholeMessagesCountsPartOverhead(t *testing.T) {
	s := newTestServer(t, Echo(), func(s *Server) { s.WholeMessages, s.MaxRecvMessageSize = true, 16<<10 })
	rs := openRaw(t, s, "e")
	go func() {
		for range 1000 { // 1000 × partOverhead > 16 KiB
			if rs.sendPart(wire.Part{Bytes: []byte{}, DataType: wire.DataTypeBinary, CompletionState: wire.CompletionPartial}) != nil {
				return
			}
		}
	}()
	expectException(t, rs, "ModelStreamError", "1009", "message too big")
}

// MaxRecordedBytes bounds what Received keeps across streams; forgetting
// a stream gives its bytes back.
func TestMaxRecordedBytes(t *testing.T) {
	s := newTestServer(t, Echo(), func(s *Server) { s.MaxRecordedBytes = 2 * (400 + partOverhead) })
	send := func() *Stream {
		rs := openRaw(t, s, "e")
		for range 3 {
			rs.sendPart(wire.Part{Bytes: make([]byte, 400), DataType: wire.DataTypeBinary, CompletionState: wire.CompletionComplete})
			rs.mustNext()
		}
		rs.end()
		for {
			if _, err := rs.next(); err != nil {
				break
			}
		}
		streams := s.Streams()
		return streams[len(streams)-1]
	}
	first := send()
	if n := len(first.Received()); n != 2 {
		t.Fatalf("first stream recorded %d parts, want 2 (the budget)", n)
	}
	second := send()
	if n := len(second.Received()); n != 0 {
		t.Fatalf("second stream recorded %d parts over a spent budget", n)
	}
	s.ForgetStream(first)
	third := send()
	if n := len(third.Received()); n != 2 {
		t.Fatalf("after ForgetStream, recorded %d parts, want 2", n)
	}
}

// Credentials holds the credentials in force once the server started.
func TestCredentialsAfterStart(t *testing.T) {
	s := newTestServer(t, Echo())
	if s.Credentials.AccessKeyID != defaultAccessKeyID || s.Credentials.SecretAccessKey != defaultSecretAccessKey {
		t.Fatalf("Credentials after Start: %q", s.Credentials.AccessKeyID)
	}
}

// Expired credentials are refused as the service refuses them, and
// AWSConfig hands them out with their expiry.
func TestExpiredCredentials(t *testing.T) {
	expires := time.Now().Add(-time.Minute)
	creds := aws.Credentials{AccessKeyID: "AKIDEXPIRING", SecretAccessKey: "expiring-secret", CanExpire: true, Expires: expires}
	called := make(chan struct{}, 1)
	s := newTestServer(t, handlerCalled(called), func(s *Server) { s.Credentials = creds })
	got, err := s.AWSConfig().Credentials.Retrieve(context.Background())
	if err != nil || !got.CanExpire || !got.Expires.Equal(expires) || got.AccessKeyID != creds.AccessKeyID {
		t.Fatalf("AWSConfig credentials %+v, %v", got.Expires, err)
	}
	rs := openRaw(t, s, "e", func(o *rawOptions) { o.creds = creds })
	expectRejection(t, s, rs, called, http.StatusForbidden, "ExpiredTokenException", ruleSignature)
}

func discardLog() *log.Logger { return log.New(io.Discard, "", 0) }

// BenchmarkCheckSignedHeaders is the signed-header check of a request
// with 12,000 unsigned x-amz-* headers and 30,000 signed names (the
// attack of issue 22), against the per-header linear scan it replaced.
func BenchmarkCheckSignedHeaders(b *testing.B) {
	r, _ := http.NewRequest(http.MethodPost, "https://localhost/", nil)
	for i := range 12000 {
		r.Header.Set(fmt.Sprintf("X-Amz-H%05d", i), "v")
	}
	signed := make([]string, 0, 30001)
	for i := range 30000 {
		signed = append(signed, fmt.Sprintf("a%05d", i))
	}
	signed = append(signed, "host")
	b.Run("bisection", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if checkSignedHeaders(r, signed) == nil {
				b.Fatal("accepted")
			}
		}
	})
	b.Run("baseline-scan", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			var unsigned []string
			for key := range r.Header {
				name := strings.ToLower(key)
				if strings.HasPrefix(name, "x-amz-") && !slices.Contains(signed, name) {
					unsigned = append(unsigned, name)
				}
			}
			if len(unsigned) == 0 {
				b.Fatal("accepted")
			}
		}
	})
}
