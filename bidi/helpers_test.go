package bidi_test

import (
	"context"
	"fmt"
	"io"
	"net"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/smithy-go/logging"

	"github.com/sagemaker-bidi/sagemaker-bidi/bidi"
	"github.com/sagemaker-bidi/sagemaker-bidi/bidi/biditest"
	"github.com/sagemaker-bidi/sagemaker-bidi/eventstream"
)

// The helpers shared by the tests of package bidi_test: a biditest server
// and sessions on it, client options, a logger, a stalling proxy, and the
// waits that order a test's events without sleeping.

// The credentials and region a biditest.Server accepts by default (as
// its Credentials and Region fields document), for the tests whose
// credentials provider or bench server does not see the Server.
var (
	serverCredentials = aws.Credentials{AccessKeyID: "AKIDBIDITEST", SecretAccessKey: "biditest-secret-access-key-0000"}
	serverRegion      = "us-west-2"
)

// testCtx returns a context that bounds a test's waits: a bound on a
// hang, generous enough for -race on a saturated machine.
func testCtx(t *testing.T) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	t.Cleanup(cancel)
	return ctx
}

// newServer starts a biditest server with h and setup applied; at cleanup
// it closes it and fails the test on any protocol violation.
func newServer(t *testing.T, h biditest.Handler, setup ...func(*biditest.Server)) *biditest.Server {
	t.Helper()
	srv := biditest.NewUnstartedServer(h)
	for _, f := range setup {
		f(srv)
	}
	srv.Start()
	t.Cleanup(func() {
		srv.Close()
		for _, v := range srv.Violations() {
			t.Errorf("server saw a protocol violation: %v", v)
		}
	})
	return srv
}

// open opens a session with endpoint "my-endpoint" and closes it at
// cleanup.
func open(t *testing.T, c *bidi.Client, ctx context.Context) *bidi.Session {
	t.Helper()
	sess, err := c.Open(ctx, &bidi.OpenInput{EndpointName: "my-endpoint"})
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() { sess.Close() })
	return sess
}

// roundTrip sends s and expects it back.
func roundTrip(t *testing.T, sess *bidi.Session, s string) {
	t.Helper()
	ctx := testCtx(t)
	if err := sess.Send(ctx, bidi.Text(s)); err != nil {
		t.Fatalf("Send: %v", err)
	}
	m, err := sess.Recv(ctx)
	if err != nil {
		t.Fatalf("Recv: %v", err)
	}
	if string(m.Data) != s || m.Type != bidi.DataTypeUTF8 {
		t.Fatalf("Recv = %q (%v), want %q (UTF8)", m.Data, m.Type, s)
	}
}

// drainEOF receives until io.EOF, failing on another error.
func drainEOF(t *testing.T, sess *bidi.Session) {
	t.Helper()
	ctx := testCtx(t)
	for {
		_, err := sess.Recv(ctx)
		if err == io.EOF {
			return
		}
		if err != nil {
			t.Fatalf("Recv: %v, want io.EOF", err)
		}
	}
}

// serverStream returns the i-th stream the server received. A stream is
// listed before its handler runs, so once the client has had an answer
// (a response, a message, an error sent by the handler) it is there.
func serverStream(t *testing.T, srv *biditest.Server, i int) *biditest.Stream {
	t.Helper()
	ss := srv.Streams()
	if len(ss) <= i {
		t.Fatalf("server has %d streams, want more than %d", len(ss), i)
	}
	return ss[i]
}

// noRetry disables retries of opening.
func noRetry(o *bidi.Options) { o.RetryMaxAttempts = 1 }

// fastRetry allows three attempts with short backoffs.
func fastRetry(o *bidi.Options) {
	o.RetryMaxAttempts = 3
	o.RetryMaxBackoff = 5 * time.Millisecond
}

// captureLogger records every log line.
type captureLogger struct {
	mu    sync.Mutex
	lines []string
}

func (l *captureLogger) Logf(c logging.Classification, format string, v ...any) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.lines = append(l.lines, string(c)+" "+fmt.Sprintf(format, v...))
}

func (l *captureLogger) text() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return strings.Join(l.lines, "\n")
}

// within runs f and returns its error, failing the test if f does not
// return within 5 s (f is then left running).
func within(t *testing.T, what string, f func() error) error {
	t.Helper()
	errc := make(chan error, 1)
	go func() { errc <- f() }()
	select {
	case err := <-errc:
		return err
	case <-time.After(5 * time.Second):
		t.Fatalf("%s still blocked after 5s", what)
		return nil
	}
}

// waitFor polls cond until it holds or timeout passes, and reports
// whether it held. It is for the conditions nothing can signal: that a
// goroutine is blocked or has exited, or that a session has learnt on its
// own goroutine that the stream ended (Send is then the only witness).
// Every other wait in these tests is on a channel, a hook or a call's
// return. It is the only sleep that orders events in these tests, and it
// only decides how often to look.
func waitFor(timeout time.Duration, cond func() bool) bool {
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(time.Millisecond)
	}
	return true
}

// goBlocked runs f in a new goroutine and returns once that goroutine is
// blocked inside method (of package bidi, "(*Session).Recv" say), so that
// a test can act on a call that is pending for sure: a Recv waiting for
// data, a Send held by flow control. The returned channel is closed when
// f returns. goBlocked fails the test if f returns first.
func goBlocked(t *testing.T, method string, f func()) <-chan struct{} {
	t.Helper()
	done := make(chan struct{})
	id := make(chan string, 1)
	go func() {
		defer close(done)
		id <- goroutineID()
		f()
	}()
	if err := waitBlocked(<-id, method, done); err != nil {
		t.Fatal(err)
	}
	return done
}

// goroutineID returns the calling goroutine's number, as stack dumps
// print it.
func goroutineID() string {
	var buf [64]byte
	s := strings.TrimPrefix(string(buf[:runtime.Stack(buf[:], false)]), "goroutine ")
	id, _, _ := strings.Cut(s, " ")
	return id
}

// waitBlocked waits until goroutine id is parked (not running or
// runnable) with a frame of package bidi's method on its stack; done is
// closed if the goroutine's function returns. Nothing can signal that a
// goroutine has parked, so it polls the goroutines' stacks (see waitFor).
func waitBlocked(id, method string, done <-chan struct{}) error {
	header := "goroutine " + id + " ["
	frame := "\ngithub.com/sagemaker-bidi/sagemaker-bidi/bidi." + method + "("
	var returned bool
	ok := waitFor(10*time.Second, func() bool {
		select {
		case <-done:
			returned = true
			return true
		default:
		}
		for _, g := range goroutineStacks() {
			if status, ok := strings.CutPrefix(g, header); ok {
				return !strings.HasPrefix(status, "running") && !strings.HasPrefix(status, "runnable") &&
					!strings.HasPrefix(status, "syscall") && strings.Contains(g, frame)
			}
		}
		return false
	})
	switch {
	case returned:
		return fmt.Errorf("%s returned instead of blocking", method)
	case !ok:
		return fmt.Errorf("goroutine %s did not block in %s within 10s", id, method)
	}
	return nil
}

// goroutineStacks returns the stack of every goroutine.
func goroutineStacks() []string {
	buf := make([]byte, 256<<10)
	for {
		n := runtime.Stack(buf, true)
		if n < len(buf) {
			return strings.Split(string(buf[:n]), "\n\n")
		}
		buf = make([]byte, 2*len(buf))
	}
}

// bidiGoroutines returns the stacks of the goroutines that run code of
// package bidi itself (not biditest, not the tests).
func bidiGoroutines() []string {
	var out []string
	for _, g := range goroutineStacks() {
		for _, line := range strings.Split(g, "\n") {
			if strings.HasPrefix(line, "github.com/sagemaker-bidi/sagemaker-bidi/bidi.") {
				out = append(out, g)
				break
			}
		}
	}
	return out
}

// engineGoroutines returns the stacks of the goroutines of the HTTP/2
// engine (connection readers and writers, dials).
func engineGoroutines() []string {
	var out []string
	for _, g := range goroutineStacks() {
		if strings.Contains(g, "\ngithub.com/sagemaker-bidi/sagemaker-bidi/bidi/internal/transport.") {
			out = append(out, g)
		}
	}
	return out
}

// leakBound bounds the waits for goroutines to exit. They exit at once;
// the bound only ends the wait for one that never does, with room for a
// loaded machine (no outcome is decided by it).
const leakBound = 20 * time.Second

// waitNoEngineGoroutines fails the test if goroutines of the engine are
// still running after timeout. Nothing signals a goroutine's exit, so it
// polls (see waitFor).
func waitNoEngineGoroutines(t *testing.T, timeout time.Duration) {
	t.Helper()
	if !waitFor(timeout, func() bool { return len(engineGoroutines()) == 0 }) {
		gs := engineGoroutines()
		t.Fatalf("%d engine goroutine(s) still running:\n%s", len(gs), strings.Join(gs, "\n\n"))
	}
}

// waitNoBidiGoroutines fails the test if goroutines of package bidi are
// still running after timeout. Nothing signals a goroutine's exit, so it
// polls (see waitFor).
func waitNoBidiGoroutines(t *testing.T, timeout time.Duration) {
	t.Helper()
	if !waitFor(timeout, func() bool { return len(bidiGoroutines()) == 0 }) {
		gs := bidiGoroutines()
		t.Fatalf("%d goroutine(s) of package bidi still running:\n%s", len(gs), strings.Join(gs, "\n\n"))
	}
}

// firstSendError sends until Send fails and returns that error: the
// session learns on its own goroutine that the service ended the stream,
// and Send is where that shows (see waitFor).
func firstSendError(t *testing.T, ctx context.Context, sess *bidi.Session) error {
	t.Helper()
	var err error
	if !waitFor(5*time.Second, func() bool { err = sess.Send(ctx, bidi.Text("x")); return err != nil }) {
		t.Fatal("Send kept succeeding after the stream ended")
	}
	return err
}

// stallProxy is a TCP proxy on loopback that can stop forwarding: after
// Stall, bytes in either direction are swallowed and the connections stay
// open, like a peer that hangs or a network path that blackholes traffic.
type stallProxy struct {
	ln      net.Listener
	target  string
	stalled chan struct{}
	once    sync.Once
	closed  chan struct{}

	mu    sync.Mutex
	conns []net.Conn
	wg    sync.WaitGroup
}

func newStallProxy(t *testing.T, target string) *stallProxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &stallProxy{ln: ln, target: target, stalled: make(chan struct{}), closed: make(chan struct{})}
	p.wg.Add(1)
	go p.accept()
	t.Cleanup(p.Close)
	return p
}

// Addr returns the proxy's host:port.
func (p *stallProxy) Addr() string { return p.ln.Addr().String() }

// Stall stops forwarding for good.
func (p *stallProxy) Stall() { p.once.Do(func() { close(p.stalled) }) }

func (p *stallProxy) accept() {
	defer p.wg.Done()
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		u, err := net.Dial("tcp", p.target)
		if err != nil {
			c.Close()
			continue
		}
		p.mu.Lock()
		p.conns = append(p.conns, c, u)
		p.mu.Unlock()
		p.wg.Add(2)
		go p.pipe(u, c)
		go p.pipe(c, u)
	}
}

func (p *stallProxy) pipe(dst io.Writer, src io.Reader) {
	defer p.wg.Done()
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		select {
		case <-p.stalled:
			// Swallow everything from now on, keeping the connection.
			for {
				if _, err := src.Read(buf); err != nil {
					return
				}
			}
		default:
		}
		if n > 0 {
			if _, werr := dst.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			return
		}
	}
}

// Close closes the listener and every connection and waits for the
// forwarding goroutines.
func (p *stallProxy) Close() {
	p.ln.Close()
	p.mu.Lock()
	for _, c := range p.conns {
		c.Close()
	}
	p.mu.Unlock()
	p.wg.Wait()
}

// encodeMessage encodes m for Stream.WriteRaw; it panics on a message
// eventstream cannot encode (a test's bug).
func encodeMessage(m *eventstream.Message) []byte {
	b, err := eventstream.AppendMessage(nil, m)
	if err != nil {
		panic(err)
	}
	return b
}

// fixedBucket is the padding policy Options.Padding's doc comment spells
// out: payload+P a multiple of size.
func fixedBucket(size int) func(int) int {
	return func(n int) int { return (n/size+1)*size - n }
}
