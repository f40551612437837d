package bidi_test

import (
	"context"
	"fmt"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sagemaker-bidi/sagemaker-bidi/bidi"
	"github.com/sagemaker-bidi/sagemaker-bidi/bidi/biditest"
)

// bidiGoroutines returns the stacks of the goroutines that run code of
// package bidi itself (not biditest, not the tests).
func bidiGoroutines() []string {
	buf := make([]byte, 4<<20)
	buf = buf[:runtime.Stack(buf, true)]
	var out []string
	for _, g := range strings.Split(string(buf), "\n\n") {
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
	buf := make([]byte, 4<<20)
	buf = buf[:runtime.Stack(buf, true)]
	var out []string
	for _, g := range strings.Split(string(buf), "\n\n") {
		if strings.Contains(g, "\ngithub.com/sagemaker-bidi/sagemaker-bidi/bidi/internal/transport.") {
			out = append(out, g)
		}
	}
	return out
}

// waitNoEngineGoroutines fails the test if goroutines of the engine are
// still running after timeout.
func waitNoEngineGoroutines(t *testing.T, timeout time.Duration) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		gs := engineGoroutines()
		if len(gs) == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d engine goroutine(s) still running:\n%s", len(gs), strings.Join(gs, "\n\n"))
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// waitNoBidiGoroutines fails the test if goroutines of package bidi are
// still running after timeout.
func waitNoBidiGoroutines(t *testing.T, timeout time.Duration) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		gs := bidiGoroutines()
		if len(gs) == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d goroutine(s) of package bidi still running:\n%s", len(gs), strings.Join(gs, "\n\n"))
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestNoGoroutineLeaks opens many sessions, ends them in every way a
// session can end, and checks that no goroutine of package bidi survives
// and that the goroutine count returns to where it was.
func TestNoGoroutineLeaks(t *testing.T) {
	waitNoBidiGoroutines(t, 5*time.Second) // other tests' leftovers
	srv := newServer(t, biditest.HandlerFunc(func(st *biditest.Stream) {
		if st.EndpointName == "fail" {
			st.Fail(424, "ModelError", map[string]any{"Message": "container refused"})
			return
		}
		if st.EndpointName == "exception" {
			st.Accept()
			st.SendModelStreamError("E", "boom")
			return
		}
		st.Accept()
		for {
			m, err := st.Recv()
			if err != nil {
				return
			}
			if st.Send(m) != nil {
				return
			}
		}
	}))
	c := srv.Client()
	// Warm the connection so that the baseline includes it.
	warm := open(t, c, testCtx(t))
	roundTrip(t, warm, "warm")
	warm.CloseSend()
	drainEOF(t, warm)
	warm.Close()
	waitNoBidiGoroutines(t, 5*time.Second)
	before := runtime.NumGoroutine()

	const n = 60
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs <- leakScenario(c, i)
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Error(err)
		}
	}
	waitNoBidiGoroutines(t, 5*time.Second)

	// The goroutine count comes back too (transport goroutines of the
	// streams included), once idle connections are closed on both sides.
	deadline := time.Now().Add(5 * time.Second)
	for {
		c.CloseIdleConnections()
		after := runtime.NumGoroutine()
		if after <= before {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("goroutines: %d before, %d after closing %d sessions", before, after, n)
		}
		time.Sleep(20 * time.Millisecond)
	}
	waitNoEngineGoroutines(t, 5*time.Second)
}

// leakScenario runs session i to one of its possible ends.
func leakScenario(c *bidi.Client, i int) error {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	name := "echo"
	switch i % 6 {
	case 4:
		name = "fail"
	case 5:
		name = "exception"
	}
	sctx, scancel := context.WithCancel(ctx)
	defer scancel()
	sess, err := c.Open(sctx, &bidi.OpenInput{EndpointName: name})
	if err != nil {
		return fmt.Errorf("session %d: Open: %w", i, err)
	}
	defer sess.Close()
	switch i % 6 {
	case 0: // graceful end
		if err := sess.Send(ctx, bidi.Text("x")); err != nil {
			return fmt.Errorf("session %d: Send: %w", i, err)
		}
		sess.CloseSend()
		for {
			if _, err := sess.Recv(ctx); err != nil {
				break
			}
		}
	case 1: // Close with a Recv pending
		done := make(chan struct{})
		go func() { sess.Recv(ctx); close(done) }()
		time.Sleep(time.Millisecond)
		sess.Close()
		<-done
	case 2: // cancel the session's context with a Recv pending
		done := make(chan struct{})
		go func() { sess.Recv(ctx); close(done) }()
		time.Sleep(time.Millisecond)
		scancel()
		<-done
	case 3: // Close right away, nothing exchanged
		sess.Close()
	case 4, 5: // the service fails the stream
		for {
			if _, err := sess.Recv(ctx); err != nil {
				break
			}
		}
	}
	return nil
}
