package bidi_test

import (
	"context"
	"fmt"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/sagemaker-bidi/sagemaker-bidi/bidi"
	"github.com/sagemaker-bidi/sagemaker-bidi/bidi/biditest"
)

// TestNoGoroutineLeaks opens many sessions, ends them in every way a
// session can end, and checks that no goroutine of package bidi survives
// and that the goroutine count returns to where it was.
func TestNoGoroutineLeaks(t *testing.T) {
	waitNoBidiGoroutines(t, leakBound) // other tests' leftovers
	srv := newServer(t, biditest.HandlerFunc(func(st *biditest.Stream) {
		if st.EndpointName == "fail" {
			st.Fail(424, "ModelError", map[string]any{"Message": "container refused"})
			return
		}
		if st.EndpointName == "exception" {
			st.Accept()
			st.SendException("ModelStreamError", []byte(`{"Message":"boom","ErrorCode":"E"}`))
			return
		}
		biditest.Echo().ServeBidi(st)
	}))
	c := srv.Client()
	// Warm the connection so that the baseline includes it.
	warm := open(t, c, testCtx(t))
	roundTrip(t, warm, "warm")
	warm.CloseSend()
	drainEOF(t, warm)
	warm.Close()
	waitNoBidiGoroutines(t, leakBound)
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
	waitNoBidiGoroutines(t, leakBound)

	// The goroutine count comes back too (transport goroutines of the
	// streams included), once idle connections are closed on both sides.
	// Nothing signals goroutines' exit: waitFor polls.
	if !waitFor(leakBound, func() bool {
		c.CloseIdleConnections()
		return runtime.NumGoroutine() <= before
	}) {
		t.Fatalf("goroutines: %d before, %d after closing %d sessions", before, runtime.NumGoroutine(), n)
	}
	waitNoEngineGoroutines(t, leakBound)
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
		done, err := recvPending(ctx, sess)
		if err != nil {
			return fmt.Errorf("session %d: %w", i, err)
		}
		sess.Close()
		<-done
	case 2: // cancel the session's context with a Recv pending
		done, err := recvPending(ctx, sess)
		if err != nil {
			return fmt.Errorf("session %d: %w", i, err)
		}
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

// recvPending starts a Recv on sess in a new goroutine and returns once it
// is blocked, with a channel closed when it returns (goBlocked without a
// *testing.T, for the scenarios' goroutines).
func recvPending(ctx context.Context, sess *bidi.Session) (<-chan struct{}, error) {
	done := make(chan struct{})
	id := make(chan string, 1)
	go func() {
		defer close(done)
		id <- goroutineID()
		sess.Recv(ctx)
	}()
	return done, waitBlocked(<-id, "(*Session).Recv", done)
}
