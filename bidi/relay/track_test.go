package relay

import (
	"context"
	"net/http"
	"testing"
	"testing/synctest"
	"time"

	"github.com/coder/websocket"

	"github.com/sagemaker-bidi/sagemaker-bidi/bidi"
)

// gatedOpen makes a Handler's Open announce each open on opening and
// wait for release (or the open's context) before opening a plain
// session.
func gatedOpen(opening, release chan struct{}) func(*bidi.Client, *Options) {
	return func(c *bidi.Client, o *Options) {
		open := Sessions(c)
		o.Open = func(ctx context.Context, in *bidi.OpenInput) (Model, error) {
			opening <- struct{}{}
			select {
			case <-release:
			case <-ctx.Done():
				return nil, ctx.Err()
			}
			return open(ctx, in)
		}
	}
}

// trackedCalls returns how many calls h lists.
func trackedCalls(h *Handler) int {
	h.callsMu.Lock()
	defer h.callsMu.Unlock()
	n := 0
	for c := h.calls; c != nil; c = c.next {
		n++
	}
	return n
}

// Close cancels the opens in progress: it returns at once (on the
// bubble's clock), the client learns 1001 "going away", and the Handler
// lists no call after.
func TestCloseCancelsOpens(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		opening, release := make(chan struct{}), make(chan struct{})
		e := newBubbleEnv(t, nil, &Options{PingInterval: -1}, gatedOpen(opening, release))
		closed := make(chan error, 1)
		go func() {
			c, _, err := websocket.Dial(t.Context(), e.url(), &websocket.DialOptions{HTTPClient: e.web})
			if err != nil {
				closed <- err
				return
			}
			_, err = readUntilClose(t, c)
			closed <- err
		}()
		<-opening
		if n := trackedCalls(e.h); n != 1 {
			t.Fatalf("%d calls listed while one opens, want 1", n)
		}
		start := time.Now()
		e.h.Close()
		if d := time.Since(start); d != 0 {
			t.Fatalf("Close took %v with an open in progress, want it cancelled at once", d)
		}
		wantClose(t, <-closed, websocket.StatusGoingAway, "going away")
		if n := trackedCalls(e.h); n != 0 {
			t.Fatalf("%d calls listed after Close", n)
		}
	})
}

// Shutdown reaches a call whose model was still opening: once open, the
// call starts, ends its input at once and closes with 1001 after its
// model's FinishQuiet; Shutdown returns then, with no call listed.
func TestShutdownReachesOpeningCall(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const quiet = time.Second
		opening, release := make(chan struct{}), make(chan struct{})
		e := newBubbleEnv(t, nil, &Options{FinishQuiet: quiet, PingInterval: -1}, gatedOpen(opening, release))
		conns := make(chan *websocket.Conn, 1)
		go func() {
			c, _, err := websocket.Dial(t.Context(), e.url(), &websocket.DialOptions{HTTPClient: e.web})
			if err != nil {
				t.Errorf("dial: %v", err)
				close(conns)
				return
			}
			conns <- c
		}()
		<-opening
		shut := make(chan error, 1)
		go func() { shut <- e.h.Shutdown(t.Context()) }()
		synctest.Wait() // Shutdown waits for the call
		select {
		case err := <-shut:
			t.Fatalf("Shutdown returned %v while a call was opening", err)
		default:
		}
		start := time.Now()
		close(release)
		c := <-conns
		if c == nil {
			return
		}
		_, err := readUntilClose(t, c)
		wantClose(t, err, websocket.StatusGoingAway, "going away")
		if d := time.Since(start); d != quiet {
			t.Errorf("closed %v after the open, want FinishQuiet, 1s", d)
		}
		if err := <-shut; err != nil {
			t.Fatal(err)
		}
		if n := trackedCalls(e.h); n != 0 {
			t.Fatalf("%d calls listed after Shutdown", n)
		}
		if _, resp, err := websocket.Dial(t.Context(), e.url(), &websocket.DialOptions{HTTPClient: e.web}); err == nil || resp.StatusCode != http.StatusServiceUnavailable {
			t.Fatalf("after Shutdown: %v", err)
		}
	})
}

// The list of calls holds only the calls in progress: after calls that
// ended every way a client can end them, it is empty.
func TestCallsUnlistedAtTheirEnd(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newBubbleEnv(t, nil, &Options{FinishQuiet: time.Millisecond, PingInterval: -1})
		for i := range 3 {
			c := e.dial(t)
			echo(t, c, "x")
			switch i {
			case 0:
				c.Close(websocket.StatusNormalClosure, "")
			case 1:
				c.CloseNow()
			case 2:
				c.Close(websocket.StatusGoingAway, "")
			}
		}
		time.Sleep(time.Minute) // past every finish's quiet and timeout
		synctest.Wait()
		if n := e.h.Active(); n != 0 {
			t.Fatalf("%d calls active", n)
		}
		if n := trackedCalls(e.h); n != 0 {
			t.Fatalf("%d calls listed after every call ended", n)
		}
	})
}

// A request that passed the Handler's first check before Close began is
// refused when it would join the calls: 503 "shutting down", nothing
// opened, no call listed, and Close returns once it was answered. The
// request is held in its authorization while Close runs.
func TestTrackRefusedOnceClosed(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		opening, release := make(chan struct{}, 1), make(chan struct{})
		e := newBubbleEnv(t, nil, &Options{PingInterval: -1}, gatedOpen(opening, release))
		authorizing, authorized := make(chan struct{}), make(chan struct{})
		authorize := e.h.authorize
		e.h.authorize = func(r *http.Request) (*bidi.OpenInput, error) {
			close(authorizing)
			<-authorized
			return authorize(r)
		}
		type dialed struct {
			resp *http.Response
			err  error
		}
		dial := make(chan dialed, 1)
		go func() {
			_, resp, err := websocket.Dial(t.Context(), e.url(), &websocket.DialOptions{HTTPClient: e.web})
			dial <- dialed{resp, err}
		}()
		<-authorizing
		closed := make(chan struct{})
		go func() { e.h.Close(); close(closed) }()
		synctest.Wait() // Close waits for the request
		close(authorized)
		d := <-dial
		if d.err == nil || d.resp == nil || d.resp.StatusCode != http.StatusServiceUnavailable {
			t.Fatalf("dial while Close ran: %v, %v; want 503", d.err, d.resp)
		}
		<-closed
		select {
		case <-opening:
			t.Fatal("a model was opened for a request refused as shutting down")
		default:
		}
		if n := trackedCalls(e.h); n != 0 || e.h.Active() != 0 {
			t.Fatalf("%d calls listed, %d active, want none", n, e.h.Active())
		}
	})
}
