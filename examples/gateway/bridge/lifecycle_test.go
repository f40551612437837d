package bridge_test

import (
	"context"
	"errors"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/sagemaker-bidi/sagemaker-bidi/bidi"
	"github.com/sagemaker-bidi/sagemaker-bidi/examples/container/model"
	"github.com/sagemaker-bidi/sagemaker-bidi/examples/gateway/bridge"
)

// A container that does not accept the WebSocket within SageMaker's
// 250 ms is refused as SageMaker refuses it, and the message names the
// limit.
func TestAcceptDeadline(t *testing.T) {
	t.Parallel() // mostly waiting: SageMaker's 250 ms accept limit
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() { // accepts TCP, never answers the handshake
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			t.Cleanup(func() { c.Close() })
		}
	}()
	g := startGateway(t, "ws://"+ln.Addr().String(), func(c *bridge.Config) {
		c.DialTimeout = 0 // the default: SageMaker's limit
		c.HealthTimeout = -1
	})
	if d := g.Handler().Options().DialTimeout; d != bridge.SageMakerAcceptLimit || bridge.SageMakerAcceptLimit != 250*time.Millisecond {
		t.Fatalf("default DialTimeout %v", d)
	}
	// From before Open: Open returns once the request is sent, and the
	// gateway's 250 ms start when it arrives, which may be before Open
	// returns.
	start := time.Now()
	sess := open(t, g.client(t), bidi.OpenInput{})
	_, err = sess.Recv(testContext(t))
	var me *bidi.ModelError
	if !errors.As(err, &me) || me.Message != bridge.UpgradeFailedMessage || !strings.Contains(me.OriginalMessage, "SageMaker allows 250ms") {
		t.Fatalf("Recv = %v, want a 424 ModelError naming SageMaker's limit", err)
	}
	if d := time.Since(start); d < 250*time.Millisecond {
		t.Errorf("refused after %v, before the limit", d)
	}
	waitFor(t, "the log line", func() bool {
		return strings.Contains(g.logs.String(), "did not accept the WebSocket connection within 250ms")
	})
}

// Shutdown stops accepting, lets a running session finish, and returns
// once it has; the log does not mistake it for a client that went away.
func TestShutdownDrains(t *testing.T) {
	g := startGateway(t, sampleContainer(t, model.Options{Defaults: "mode=echo"}))
	c := g.client(t)
	sess := open(t, c, bidi.OpenInput{})
	echoOnce(t, sess, "before")

	done := make(chan error, 1)
	go func() { done <- g.Shutdown(testContext(t)) }()
	echoOnce(t, sess, "during the shutdown")
	if err := sess.CloseSend(); err != nil {
		t.Fatal(err)
	}
	expectEOF(t, sess)
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("Shutdown = %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Shutdown did not return after the session ended")
	}
	if late, err := c.Open(testContext(t), &bidi.OpenInput{EndpointName: "e"}); err == nil {
		defer late.Close()
		if _, err := late.Recv(testContext(t)); err == nil {
			t.Fatal("a session opened after Shutdown")
		}
	}
	if strings.Contains(g.logs.String(), "client went away") {
		t.Errorf("the log blames the client:\n%s", g.logs)
	}
}

// A session still running when the grace period ends is aborted with a
// clear reason: the client gets an InternalStreamFailure, the container a
// close frame 1001 "gateway shutting down".
func TestShutdownAbortsAfterGrace(t *testing.T) {
	rc := newRawContainer(t)
	g := startGateway(t, rc.url)
	sess := open(t, g.client(t), bidi.OpenInput{})
	peer := rc.accept(t)
	ctx := testContext(t)
	sess.Send(ctx, bidi.Text("hello"))
	if f := peer.readData(); string(f.payload) != "hello" {
		t.Fatalf("frame = %v", f)
	}

	grace, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- g.Shutdown(grace) }()
	f := peer.readData()
	if f.op != opClose || f.closeCode() != 1001 || string(f.payload[2:]) != "gateway shutting down" {
		t.Fatalf("frame = %v, want close 1001 \"gateway shutting down\"", f)
	}
	peer.writeClose(1001, "")
	_, err := sess.Recv(ctx)
	var isf *bidi.InternalStreamFailure
	if !errors.As(err, &isf) || !strings.Contains(isf.Message, "shutting down") {
		t.Fatalf("Recv = %v, want an InternalStreamFailure about the shutdown", err)
	}
	if err := <-done; err != context.DeadlineExceeded {
		t.Fatalf("Shutdown = %v, want DeadlineExceeded", err)
	}
	logs := g.logs.String()
	if strings.Contains(logs, "client went away") || !strings.Contains(logs, "sessions aborted") {
		t.Errorf("log:\n%s", logs)
	}
}

// The connection cap ends a stream as SageMaker ends one at its cap: the
// client gets an InternalStreamFailure and may open a new stream at once;
// the container's WebSocket is closed with 1001 "connection cap reached".
func TestConnectionCap(t *testing.T) {
	t.Parallel() // mostly waiting: the 300 ms cap
	rc := newRawContainer(t)
	g := startGateway(t, rc.url, func(c *bridge.Config) { c.MaxStreamAge = 300 * time.Millisecond })
	c := g.client(t)
	sess := open(t, c, bidi.OpenInput{})
	peer := rc.accept(t)
	ctx := testContext(t)
	_, err := sess.Recv(ctx)
	var isf *bidi.InternalStreamFailure
	if !errors.As(err, &isf) || !strings.Contains(isf.Message, "maximum duration") {
		t.Fatalf("Recv = %v, want an InternalStreamFailure at the cap", err)
	}
	f := peer.readData()
	if f.op != opClose || f.closeCode() != 1001 || string(f.payload[2:]) != "connection cap reached" {
		t.Fatalf("frame = %v, want close 1001 \"connection cap reached\"", f)
	}
	peer.writeClose(1001, "")
	waitFor(t, "the session to end", func() bool { return g.Handler().ActiveSessions() == 0 })
	if logs := g.logs.String(); !strings.Contains(logs, "stream reached the connection cap (300ms)") || strings.Contains(logs, "client went away") {
		t.Errorf("log:\n%s", logs)
	}

	// The rotation: a new stream works.
	sess2 := open(t, c, bidi.OpenInput{})
	peer2 := rc.accept(t)
	sess2.Send(ctx, bidi.Text("again"))
	if f := peer2.readData(); string(f.payload) != "again" {
		t.Fatalf("frame = %v", f)
	}
}

// The default connection cap is 30 minutes.
func TestDefaultConnectionCap(t *testing.T) {
	g := startGateway(t, "ws://127.0.0.1:1")
	if got := g.Server().MaxStreamAge; got != bridge.DefaultMaxStreamAge || bridge.DefaultMaxStreamAge != 30*time.Minute {
		t.Fatalf("MaxStreamAge %v", got)
	}
	g2 := startGateway(t, "ws://127.0.0.1:1", func(c *bridge.Config) { c.MaxStreamAge = -1 })
	if got := g2.Server().MaxStreamAge; got != 0 {
		t.Fatalf("MaxStreamAge %v with no cap", got)
	}
}
