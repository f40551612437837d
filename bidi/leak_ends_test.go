package bidi_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sagemaker-bidi/sagemaker-bidi/bidi"
	"github.com/sagemaker-bidi/sagemaker-bidi/bidi/biditest"
)

// The ways TestNoGoroutineOutlivesClose ends a session; session i ends
// the way i%numEnds.
const (
	endClean      = iota // Send, CloseSend, Recv to io.EOF
	endModelError        // the model sends a ModelStreamError
	endReset             // the server resets the stream (RST_STREAM) after a message
	endGoAway            // a round trip, the server's GOAWAY, then a clean end on the old connection
	endCancel            // the Open context is cancelled with a Recv pending
	endCloseSend         // Close while another goroutine keeps sending
	endRefused           // the service answers 424 before the stream starts
	numEnds
)

// TestNoGoroutineOutlivesClose opens 1,000 sessions against biditest, in
// concurrent batches, ends each in one of the ways a session can end
// (clean end, model error, reset, GOAWAY, context cancelled, Close during
// Send, refused), checks that each ended as that way says, then closes
// every session and the client's idle connections: the goroutine count
// returns to what it was before, and no goroutine running this module's
// code (the engine, the session layer, biditest) is left. The wait for
// that is bounded by leakBound, which only ends the wait for a goroutine
// that never exits.
func TestNoGoroutineOutlivesClose(t *testing.T) {
	waitNoBidiGoroutines(t, leakBound) // other tests' leftovers
	srv := newServer(t, biditest.HandlerFunc(func(st *biditest.Stream) {
		switch st.EndpointName {
		case "model-error":
			st.Accept()
			st.SendException("ModelStreamError", []byte(`{"Message":"boom","ErrorCode":"E"}`))
		case "reset":
			st.Accept()
			if _, err := st.Recv(); err != nil {
				return
			}
			st.Reset()
		case "refused":
			st.Fail(424, "ModelError", map[string]any{"Message": "container refused"})
		default:
			st.Accept() // answered before the first message: Response returns
			biditest.Echo().ServeBidi(st)
		}
	}))
	c := srv.Client()
	warm := open(t, c, testCtx(t))
	roundTrip(t, warm, "warm")
	warm.CloseSend()
	drainEOF(t, warm)
	warm.Close()
	waitNoBidiGoroutines(t, leakBound)
	c.CloseIdleConnections()
	before := moduleGoroutines()
	beforeN := runtime.NumGoroutine()

	const total, batch = 1000, 100
	start := time.Now()
	for b := 0; b < total; b += batch {
		// Every other batch, the server sends GOAWAY once each of the
		// batch's sessions has had its answer: the sessions end on
		// connections that are going away.
		goAway := b/batch%2 == 1
		var opened, ended sync.WaitGroup
		proceed := make(chan struct{})
		errs := make(chan error, batch)
		for i := b; i < b+batch; i++ {
			opened.Add(1)
			ended.Add(1)
			go func() {
				defer ended.Done()
				errs <- endSession(c, i, &opened, proceed)
			}()
		}
		opened.Wait()
		if goAway {
			srv.GoAway()
		}
		close(proceed)
		ended.Wait()
		close(errs)
		for err := range errs {
			if err != nil {
				t.Error(err)
			}
		}
		if t.Failed() {
			t.FailNow()
		}
	}
	t.Logf("%d sessions ended in %v", total, time.Since(start).Round(time.Millisecond))

	start = time.Now()
	var after []string
	ok := waitFor(leakBound, func() bool {
		c.CloseIdleConnections()
		after = moduleGoroutines()
		return runtime.NumGoroutine() <= beforeN && len(newStacks(before, after)) == 0
	})
	if !ok {
		t.Fatalf("goroutines: %d before, %d after ending %d sessions; of this module, new since before:\n%s",
			beforeN, runtime.NumGoroutine(), total, strings.Join(newStacks(before, after), "\n\n"))
	}
	t.Logf("goroutines back to %d (%d of this module) %v after the last session ended",
		runtime.NumGoroutine(), len(after), time.Since(start).Round(time.Millisecond))
}

// endSession opens session i, has it answered, marks opened done, waits
// for proceed and ends the session in way i%numEnds, checking that it
// ended as that way says.
func endSession(c *bidi.Client, i int, opened *sync.WaitGroup, proceed <-chan struct{}) (err error) {
	defer func() {
		if err != nil {
			err = fmt.Errorf("session %d (end %d): %w", i, i%numEnds, err)
		}
	}()
	once := sync.OnceFunc(opened.Done)
	defer once()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	end := i % numEnds
	name := map[int]string{endModelError: "model-error", endReset: "reset", endRefused: "refused"}[end]
	if name == "" {
		name = "echo"
	}
	sctx, scancel := context.WithCancel(ctx)
	defer scancel()
	sess, err := c.Open(sctx, &bidi.OpenInput{EndpointName: name})
	if err != nil {
		return fmt.Errorf("Open: %w", err)
	}
	defer sess.Close()
	_, rerr := sess.Response(ctx)
	if (rerr != nil) != (end == endRefused) {
		return fmt.Errorf("Response: %v", rerr)
	}
	if end == endGoAway {
		if err := echoOnce(ctx, sess, "before"); err != nil {
			return err
		}
	}
	once()
	<-proceed

	switch end {
	case endClean, endGoAway:
		if err := echoOnce(ctx, sess, "x"); err != nil {
			return err
		}
		if err := sess.CloseSend(); err != nil {
			return fmt.Errorf("CloseSend: %w", err)
		}
		if _, err := sess.Recv(ctx); err != io.EOF {
			return fmt.Errorf("Recv after CloseSend = %v, want io.EOF", err)
		}
	case endModelError:
		_, err := sess.Recv(ctx)
		var mse *bidi.ModelStreamError
		if !errors.As(err, &mse) {
			return fmt.Errorf("Recv = %v, want *ModelStreamError", err)
		}
	case endReset:
		if err := sess.Send(ctx, bidi.Text("x")); err != nil {
			return fmt.Errorf("Send: %w", err)
		}
		_, err := sess.Recv(ctx)
		var h2 *bidi.HTTP2Error
		if !errors.As(err, &h2) || !h2.Remote || h2.GoAway {
			return fmt.Errorf("Recv = %v, want the server's RST_STREAM as *HTTP2Error", err)
		}
	case endCancel:
		done := make(chan error, 1)
		go func() {
			_, err := sess.Recv(ctx)
			done <- err
		}()
		scancel()
		if err := <-done; !errors.Is(err, context.Canceled) {
			return fmt.Errorf("Recv after cancel = %v, want context.Canceled", err)
		}
	case endCloseSend:
		sent := make(chan struct{})
		done := make(chan error, 1)
		go func() {
			first := sync.OnceFunc(func() { close(sent) })
			defer first()
			for {
				if err := sess.Send(ctx, bidi.Text("x")); err != nil {
					done <- err
					return
				}
				first()
			}
		}()
		<-sent
		sess.Close()
		if err := <-done; !errors.Is(err, bidi.ErrSessionClosed) {
			return fmt.Errorf("Send after Close = %v, want ErrSessionClosed", err)
		}
	case endRefused:
		_, err := sess.Recv(ctx)
		var me *bidi.ModelError
		if !errors.As(err, &me) {
			return fmt.Errorf("Recv = %v, want *ModelError", err)
		}
	}
	return nil
}

// echoOnce sends s and expects it back.
func echoOnce(ctx context.Context, sess *bidi.Session, s string) error {
	if err := sess.Send(ctx, bidi.Text(s)); err != nil {
		return fmt.Errorf("Send: %w", err)
	}
	m, err := sess.Recv(ctx)
	if err != nil {
		return fmt.Errorf("Recv: %w", err)
	}
	if string(m.Data) != s {
		return fmt.Errorf("Recv = %q, want %q", m.Data, s)
	}
	return nil
}

// moduleGoroutines returns the stacks of the goroutines that run this
// module's code (package bidi, its engine, biditest, the codecs), the
// calling goroutine and the tests' own excepted, each reduced to its
// function names (no arguments, no goroutine numbers) so that stacks
// compare across dumps.
func moduleGoroutines() []string {
	const module = "github.com/sagemaker-bidi/sagemaker-bidi/"
	self := "goroutine " + goroutineID() + " "
	var out []string
	for _, g := range goroutineStacks() {
		if strings.HasPrefix(g, self) {
			continue
		}
		var funcs []string
		mine := false
		for _, line := range strings.Split(g, "\n")[1:] {
			if line == "" || strings.HasPrefix(line, "\t") {
				continue
			}
			if strings.HasPrefix(line, module) && !strings.HasPrefix(line, module+"bidi_test.") &&
				!strings.HasPrefix(line, "testing.") {
				mine = true
			}
			if by, _, ok := strings.Cut(line, " in goroutine "); ok {
				line = by // "created by f in goroutine N"
			} else if i := strings.LastIndexByte(line, '('); i > 0 && strings.HasSuffix(line, ")") {
				line = line[:i] // "f(0xc000123456, ...)"
			}
			funcs = append(funcs, line)
		}
		if mine && !slices.ContainsFunc(funcs, func(f string) bool { return strings.HasPrefix(f, "testing.tRunner(") }) {
			out = append(out, strings.Join(funcs, "\n"))
		}
	}
	slices.Sort(out)
	return out
}

// newStacks returns the stacks in after beyond those in before (a
// multiset difference).
func newStacks(before, after []string) []string {
	left := map[string]int{}
	for _, s := range before {
		left[s]++
	}
	var out []string
	for _, s := range after {
		if left[s] > 0 {
			left[s]--
			continue
		}
		out = append(out, s)
	}
	return out
}
