package bridge_test

import (
	"errors"
	"io"
	"net"
	"os"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/sagemaker-bidi/sagemaker-bidi/bidi"
	"github.com/sagemaker-bidi/sagemaker-bidi/examples/container/model"
	"github.com/sagemaker-bidi/sagemaker-bidi/examples/gateway/bridge"
)

// failingListener fails its accepts: the first temporary ones as a
// process out of descriptors does (EMFILE), then, with permanent set, for
// good; otherwise it accepts.
type failingListener struct {
	net.Listener
	mu        sync.Mutex
	temporary int
	permanent error
}

func (l *failingListener) Accept() (net.Conn, error) {
	l.mu.Lock()
	switch {
	case l.temporary > 0:
		l.temporary--
		l.mu.Unlock()
		return nil, &net.OpError{Op: "accept", Net: "tcp", Err: os.NewSyscallError("accept4", syscall.EMFILE)}
	case l.permanent != nil:
		err := l.permanent
		l.mu.Unlock()
		return nil, err
	}
	l.mu.Unlock()
	return l.Listener.Accept()
}

func loopbackListener(t *testing.T) net.Listener {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	return ln
}

// The descriptor limit reached for a while does not stop the gateway: it
// serves sessions afterwards and stays healthy (Done open).
func TestGatewayAcceptRecovers(t *testing.T) {
	t.Parallel() // mostly waiting: the accept loop's backoff
	ln := &failingListener{Listener: loopbackListener(t), temporary: 6}
	g := startGateway(t, sampleContainer(t, model.Options{Defaults: "mode=echo"}), func(c *bridge.Config) { c.Listener = ln })
	sess := open(t, g.client(t), bidi.OpenInput{})
	ctx := testContext(t)
	if err := sess.Send(ctx, bidi.Text("after EMFILE")); err != nil {
		t.Fatal(err)
	}
	if m, err := sess.Recv(ctx); err != nil || string(m.Data) != "after EMFILE" {
		t.Fatalf("Recv = %q, %v", m.Data, err)
	}
	select {
	case <-g.Done():
		t.Fatalf("Done after temporary failures: %v", g.Err())
	default:
	}
	if !strings.Contains(g.logs.String(), "retrying with backoff") {
		t.Errorf("the failed accepts were not logged:\n%s", g.logs)
	}
}

// A listener that fails for good closes Done, with the error: the
// program stops instead of looking healthy while it accepts nothing.
func TestGatewayDoneOnListenerFailure(t *testing.T) {
	broken := errors.New("listener broken for good")
	ln := &failingListener{Listener: loopbackListener(t), permanent: broken}
	g := startGateway(t, sampleContainer(t, model.Options{}), func(c *bridge.Config) { c.Listener = ln })
	select {
	case <-g.Done():
	case <-testContext(t).Done():
		t.Fatal("Done not closed after a permanent accept error")
	}
	if !errors.Is(g.Err(), broken) {
		t.Fatalf("Err = %v", g.Err())
	}
	g.Close() // Close's own listener error is not a failure
}

// Close does not count as a listener failure.
func TestGatewayCloseIsNotAFailure(t *testing.T) {
	g := startGateway(t, sampleContainer(t, model.Options{}))
	g.Close()
	if err := g.Err(); err != nil {
		t.Fatalf("Err after Close = %v", err)
	}
}

// With EndpointName set, other names get 400 InputValidationError naming
// both.
func TestEndpointName(t *testing.T) {
	g := startGateway(t, sampleContainer(t, model.Options{Defaults: "mode=echo"}), func(c *bridge.Config) { c.EndpointName = "served" })
	if _, err := open(t, g.client(t), bidi.OpenInput{EndpointName: "served"}).Response(testContext(t)); err != nil {
		t.Fatalf("the served endpoint: %v", err)
	}
	_, err := open(t, g.client(t), bidi.OpenInput{EndpointName: "other"}).Response(testContext(t))
	var ive *bidi.InputValidationError
	if !errors.As(err, &ive) || !strings.Contains(ive.Message, `"other"`) || !strings.Contains(ive.Message, `"served"`) {
		t.Fatalf("another endpoint: %v, want an InputValidationError naming both", err)
	}
}

// A client event over the gateway's MaxEventSize (default 1 MiB) fails the
// stream at once; smaller parts pass.
func TestGatewayMaxEventSize(t *testing.T) {
	g := startGateway(t, sampleContainer(t, model.Options{Defaults: "mode=echo"}))
	c := g.client(t, func(o *bidi.Options) { o.MaxPartSize = 2 << 20 })
	sess := open(t, c, bidi.OpenInput{})
	ctx := testContext(t)
	if err := sess.Send(ctx, bidi.Binary(make([]byte, 512<<10))); err != nil {
		t.Fatal(err)
	}
	if m, err := sess.Recv(ctx); err != nil || len(m.Data) != 512<<10 {
		t.Fatalf("Recv = %d bytes, %v", len(m.Data), err)
	}
	sess.Send(ctx, bidi.Binary(make([]byte, 2<<20))) // one part of 2 MiB
	if _, err := sess.Recv(ctx); err == nil || !strings.Contains(err.Error(), "MaxEventSize") {
		t.Fatalf("after a 2 MiB event: %v, want the MaxEventSize violation", err)
	}
}

// Rejected requests are logged a few times per window, then counted.
func TestViolationLogThrottled(t *testing.T) {
	g := startGateway(t, sampleContainer(t, model.Options{}))
	c := clientFor(t, g.Gateway, testAccessKey, "wrong-secret")
	for range 30 {
		sess, err := c.Open(testContext(t), &bidi.OpenInput{EndpointName: "e"})
		if err == nil {
			_, err = sess.Response(testContext(t))
			sess.Close()
		}
		if err == nil {
			t.Fatal("a wrong signature was accepted")
		}
	}
	waitFor(t, "a logged rejection", func() bool { return strings.Contains(g.logs.String(), "request rejected") })
	g.Close() // flushes the violations still queued
	if n := strings.Count(g.logs.String(), "request rejected"); n > 5 {
		t.Fatalf("%d lines for 30 rejections", n)
	}
}

// Failed TLS handshakes, which any local process can cause, are logged a
// few times per window, then counted.
func TestHandshakeErrorLogThrottled(t *testing.T) {
	g := startGateway(t, sampleContainer(t, model.Options{}))
	addr := strings.TrimPrefix(g.URL(), "https://")
	for range 20 {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		c.Write([]byte("\x00not a TLS record at all\r\n\r\n"))
		// The server logs the failure before it closes the connection.
		c.SetReadDeadline(time.Now().Add(10 * time.Second))
		io.Copy(io.Discard, c)
		c.Close()
	}
	if n := strings.Count(g.logs.String(), "TLS handshake error"); n == 0 || n > 5 {
		t.Fatalf("%d lines for 20 failed handshakes:\n%s", n, g.logs)
	}
}
