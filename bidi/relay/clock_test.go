package relay

import (
	"context"
	"encoding/binary"
	"net/http"
	"os"
	"strconv"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/coder/websocket"

	"github.com/sagemaker-bidi/sagemaker-bidi/bidi"
	"github.com/sagemaker-bidi/sagemaker-bidi/bidi/biditest"
)

// The relay's timers on a testing/synctest clock (see newBubbleEnv),
// with both kinds of model session: each limit ends the call exactly
// when due, which no test on a real clock can tell from "about then".
// A graceful end then gives the model FinishQuiet from the moment the
// input ends (Finish's quiet counts from its call when the last reply
// came before it).
func TestTimersOnTheClock(t *testing.T) {
	const quiet = time.Second
	kinds := map[string]func(*bidi.Client, *Options){
		"rotating": func(c *bidi.Client, o *Options) { o.Open = Rotating(c, nil) },
		"plain":    plainSessions,
	}
	for name, kind := range kinds {
		t.Run(name, func(t *testing.T) {
			// IdleTimeout counts from the last data message either way:
			// here the echo of the only message, at 4 s.
			t.Run("idle", func(t *testing.T) {
				synctest.Test(t, func(t *testing.T) {
					e := newBubbleEnv(t, nil, &Options{IdleTimeout: 10 * time.Second, FinishQuiet: quiet, PingInterval: -1}, kind)
					start := time.Now()
					c := e.dial(t)
					time.Sleep(4 * time.Second)
					echo(t, c, "x")
					_, err := readUntilClose(t, c)
					wantClose(t, err, websocket.StatusGoingAway, "idle timeout")
					if d := time.Since(start); d != 4*time.Second+10*time.Second+quiet {
						t.Fatalf("closed after %v, want 15s: 4s to the last message, 10s idle, 1s quiet", d)
					}
				})
			})
			// MaxLifetime counts from the upgrade, whatever the traffic.
			t.Run("lifetime", func(t *testing.T) {
				synctest.Test(t, func(t *testing.T) {
					e := newBubbleEnv(t, nil, &Options{MaxLifetime: 3 * time.Second, FinishQuiet: quiet, PingInterval: -1}, kind)
					start := time.Now()
					c := e.dial(t)
					for range 2 {
						time.Sleep(time.Second)
						echo(t, c, "x")
					}
					_, err := readUntilClose(t, c)
					wantClose(t, err, websocket.StatusGoingAway, "lifetime limit reached")
					if d := time.Since(start); d != 3*time.Second+quiet {
						t.Fatalf("closed after %v, want 4s: 3s of lifetime, 1s quiet", d)
					}
				})
			})
			// EndOfInput: the call closes with 1000 once the model had
			// FinishQuiet to answer.
			t.Run("end of input", func(t *testing.T) {
				synctest.Test(t, func(t *testing.T) {
					e := newBubbleEnv(t, nil, &Options{EndOfInput: endOfInput, FinishQuiet: quiet, PingInterval: -1}, kind)
					start := time.Now()
					c := e.dial(t)
					echo(t, c, "x")
					time.Sleep(2 * time.Second)
					if err := c.Write(t.Context(), websocket.MessageText, []byte("end")); err != nil {
						t.Fatal(err)
					}
					_, err := readUntilClose(t, c)
					wantClose(t, err, websocket.StatusNormalClosure, "")
					if d := time.Since(start); d != 2*time.Second+quiet {
						t.Fatalf("closed after %v, want 3s: the end at 2s, 1s quiet", d)
					}
				})
			})
		})
	}
}

// A client that answers no ping is dropped exactly PingInterval plus
// PingTimeout after it connected; one that answers is never dropped.
func TestPingsOnTheClock(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		aborted := make(chan time.Duration, 1)
		start := time.Now()
		testHookAbort = func(kind string) {
			if kind == KindPingTimeout {
				aborted <- time.Since(start)
			}
		}
		defer func() { testHookAbort = nil }()
		e := newBubbleEnv(t, nil, &Options{PingInterval: time.Second, PingTimeout: 500 * time.Millisecond, IdleTimeout: -1})
		deaf := e.dial(t) // never reads: coder/websocket answers pings only while reading
		listening := e.dial(t)
		heard := make(chan string, 1) // what listening reads: reading answers the pings
		go func() {
			defer close(heard)
			for {
				_, b, err := listening.Read(t.Context())
				if err != nil {
					return
				}
				heard <- string(b)
			}
		}()
		if d := <-aborted; d != 1500*time.Millisecond {
			t.Fatalf("the deaf client was dropped after %v, want 1.5s", d)
		}
		if _, _, err := deaf.Read(t.Context()); err == nil || websocket.CloseStatus(err) != -1 {
			t.Fatalf("read after the ping timeout: %v, want the connection gone without a close frame", err)
		}
		time.Sleep(time.Minute) // sixty pings, all answered
		select {
		case d := <-aborted:
			t.Fatalf("the listening client was dropped after %v", d)
		default:
		}
		if err := listening.Write(t.Context(), websocket.MessageText, []byte("still here")); err != nil {
			t.Fatal(err)
		}
		if got := <-heard; got != "still here" {
			t.Fatalf("the listening client heard %q", got)
		}
		listening.Close(websocket.StatusNormalClosure, "")
	})
}

// A model without Finish (see Finisher) has its input ended by the
// relay itself: CloseSend comes exactly FinishQuiet after the model's
// last reply, or after the end of input if the model was quieter.
func TestQuietWithoutFinishOnTheClock(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const quiet = time.Second
		fm := newFakeModel()
		closedAt := make(chan time.Duration, 1)
		start := time.Now()
		e := newBubbleEnv(t, nil, &Options{
			EndOfInput: endOfInput, FinishQuiet: quiet, PingInterval: -1,
			Open: func(context.Context, *bidi.OpenInput) (Model, error) {
				return closeSendClock{fm, func() { closedAt <- time.Since(start) }}, nil
			},
		})
		c := e.dial(t)
		if err := c.Write(t.Context(), websocket.MessageText, []byte("end")); err != nil {
			t.Fatal(err)
		}
		time.Sleep(700 * time.Millisecond)
		fm.replies <- bidi.Text("late answer")
		if _, b, err := c.Read(t.Context()); err != nil || string(b) != "late answer" {
			t.Fatalf("read %q %v", b, err)
		}
		if d := <-closedAt; d != 700*time.Millisecond+quiet {
			t.Fatalf("CloseSend after %v, want 1.7s: the last reply at 0.7s, 1s quiet", d)
		}
		_, err := readUntilClose(t, c)
		wantClose(t, err, websocket.StatusNormalClosure, "")
	})
}

// closeSendClock calls at on CloseSend; the fake model then ends, as
// SageMaker ends the container's connection when the input ends.
type closeSendClock struct {
	*fakeModel
	at func()
}

func (c closeSendClock) CloseSend() error {
	c.at()
	c.end <- nil
	return nil
}

// FinishTimeout bounds a graceful end: a model that never ends after
// the end of input is cut off exactly FinishTimeout after it, with 1001.
func TestFinishTimeoutOnTheClock(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		fm := newFakeModel() // never ends unless told
		e := newBubbleEnv(t, nil, &Options{
			EndOfInput: endOfInput, FinishQuiet: time.Second, FinishTimeout: 5 * time.Second, PingInterval: -1,
			Open: func(context.Context, *bidi.OpenInput) (Model, error) { return fm, nil },
		})
		c := e.dial(t)
		time.Sleep(time.Second)
		start := time.Now()
		if err := c.Write(t.Context(), websocket.MessageText, []byte("end")); err != nil {
			t.Fatal(err)
		}
		_, err := readUntilClose(t, c)
		wantClose(t, err, websocket.StatusGoingAway, "going away")
		if d := time.Since(start); d != 5*time.Second {
			t.Fatalf("closed %v after the end of input, want FinishTimeout, 5s", d)
		}
	})
}

// OpenTimeout bounds the model's open: a model that never answers is
// given up exactly OpenTimeout after the request, and the client told
// with 1013 after the upgrade, or, with RefuseWithHTTPStatus, with 504
// instead of it; the handler holds nothing after.
func TestOpenTimeoutOnTheClock(t *testing.T) {
	for _, refuse := range []bool{false, true} {
		synctest.Test(t, func(t *testing.T) {
			e := newBubbleEnv(t, biditest.HandlerFunc(func(st *biditest.Stream) {
				<-st.Context().Done() // never answers
			}), &Options{OpenTimeout: 3 * time.Second, PingInterval: -1, RefuseWithHTTPStatus: refuse}, plainSessions)
			start := time.Now()
			c, resp, err := websocket.Dial(t.Context(), e.url(), &websocket.DialOptions{HTTPClient: e.web})
			if d := time.Since(start); d != 3*time.Second {
				t.Fatalf("answered after %v, want OpenTimeout, 3s", d)
			}
			if refuse {
				if err == nil || resp == nil || resp.StatusCode != http.StatusGatewayTimeout {
					t.Fatalf("dial: %v, %v; want 504", err, resp)
				}
			} else {
				if err != nil {
					t.Fatal(err)
				}
				_, err := readUntilClose(t, c)
				wantClose(t, err, websocket.StatusTryAgainLater, "model open timed out")
			}
			synctest.Wait()
			if n := e.h.Active(); n != 0 {
				t.Fatalf("%d calls active after the refusal", n)
			}
		})
	}
}

// MaxPingsPerSecond counts a client's pings per second of the call: as
// many as allowed in every second for a minute are fine, one more
// within a second closes the call with 1008.
func TestPingFloodOnTheClock(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newBubbleEnv(t, nil, &Options{MaxPingsPerSecond: 3, PingInterval: -1, IdleTimeout: -1})
		c := e.dial(t)
		errc := make(chan error, 1)
		go func() { _, err := readUntilClose(t, c); errc <- err }() // reading takes the pongs
		start := time.Now()
		for s := range 60 {
			for range 3 {
				if err := c.Ping(t.Context()); err != nil {
					t.Fatalf("ping in second %d: %v", s, err)
				}
			}
			time.Sleep(time.Until(start.Add(time.Duration(s+1) * time.Second)))
		}
		for range 4 {
			if c.Ping(t.Context()) != nil {
				break
			}
		}
		wantClose(t, <-errc, websocket.StatusPolicyViolation, "too many pings")
	})
}

// Shutdown ends the calls gracefully: each closes with 1001 once its
// model had FinishQuiet after the shutdown began, and Shutdown returns
// then; a dial after it is refused.
func TestShutdownOnTheClock(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const quiet = time.Second
		e := newBubbleEnv(t, nil, &Options{FinishQuiet: quiet, PingInterval: -1})
		c := e.dial(t)
		echo(t, c, "x")
		time.Sleep(2 * time.Second)
		closed := make(chan time.Duration, 1)
		start := time.Now()
		go func() {
			_, err := readUntilClose(t, c)
			wantClose(t, err, websocket.StatusGoingAway, "going away")
			closed <- time.Since(start)
		}()
		if err := e.h.Shutdown(t.Context()); err != nil {
			t.Fatal(err)
		}
		if d := time.Since(start); d != quiet {
			t.Fatalf("Shutdown returned after %v, want FinishQuiet, 1s", d)
		}
		if d := <-closed; d != quiet {
			t.Fatalf("the call closed %v after the shutdown began, want 1s", d)
		}
		if _, resp, err := websocket.Dial(t.Context(), e.url(), &websocket.DialOptions{HTTPClient: e.web}); err == nil || resp.StatusCode != http.StatusServiceUnavailable {
			t.Fatalf("after Shutdown: %v", err)
		}
	})
}

// echo sends text and reads it back.
func echo(t *testing.T, c *websocket.Conn, text string) {
	t.Helper()
	if err := c.Write(t.Context(), websocket.MessageText, []byte(text)); err != nil {
		t.Fatal(err)
	}
	if _, b, err := c.Read(t.Context()); err != nil || string(b) != text {
		t.Fatalf("echo: %q, %v", b, err)
	}
}

// Issue 20's acceptance test of a long call, on a testing/synctest clock
// and so not time-compressed: minutes of paced audio (a 640-byte frame
// every 20 ms) through the relay to a model that answers each frame 60 ms
// after it arrives and drops what it has not answered when its input
// ends, on a RotatingSession that replaces its stream every 5 s. The
// client gets every frame answered once, in order, each exactly 60 ms
// after it sent it, rotations included, and the normal close after its
// end of input. One minute by default (about a second under -race);
// RELAY_AUDIO_MINUTES=10 runs issue 20's ten minutes (12 s).
func TestPacedAudioThroughRotationsOnTheClock(t *testing.T) {
	minutes := 1
	if v, err := strconv.Atoi(os.Getenv("RELAY_AUDIO_MINUTES")); err == nil && v > 0 {
		minutes = v
	}
	synctest.Test(t, func(t *testing.T) {
		const (
			pace  = 20 * time.Millisecond
			delay = 60 * time.Millisecond
			after = 5 * time.Second
		)
		frames := minutes * int(time.Minute/pace)
		var rotations atomic.Int32
		e := newBubbleEnv(t, biditest.StampedEcho(delay, nil), &Options{EndOfInput: endOfInput, PingInterval: -1}, func(c *bidi.Client, o *Options) {
			o.Open = Rotating(c, &bidi.Rotation{
				After: after,
				OnRotate: func(ev bidi.RotationEvent) {
					if ev.Reason != bidi.RotationAge || ev.Err != nil {
						t.Errorf("rotation %+v, want by age", ev)
					}
					rotations.Add(1)
				},
			})
		})
		c := e.dial(t)
		sentAt := make([]time.Time, frames)
		done := make(chan error, 1)
		go func() {
			next := uint32(0)
			for {
				_, b, err := c.Read(t.Context())
				if err != nil {
					if int(next) != frames {
						t.Errorf("%d replies for %d frames", next, frames)
					}
					done <- err
					return
				}
				st, err := biditest.ParseStamp(b)
				if err != nil {
					t.Errorf("reply %d: %v", next, err)
					continue
				}
				n := binary.BigEndian.Uint32(st.Data)
				if n != next {
					t.Errorf("reply %d is frame %d", next, n)
					next = n
				}
				if d := time.Since(sentAt[n]); d != delay {
					t.Errorf("frame %d answered %v after it was sent, want %v", n, d, delay)
				}
				next++
			}
		}()
		frame := make([]byte, 640)
		tick := time.NewTicker(pace)
		defer tick.Stop()
		for i := range frames {
			<-tick.C
			binary.BigEndian.PutUint32(frame, uint32(i))
			sentAt[i] = time.Now()
			if err := c.Write(t.Context(), websocket.MessageBinary, frame); err != nil {
				t.Fatalf("frame %d: %v", i, err)
			}
		}
		if err := c.Write(t.Context(), websocket.MessageText, []byte("end")); err != nil {
			t.Fatal(err)
		}
		wantClose(t, <-done, websocket.StatusNormalClosure, "")
		if want := int32(time.Duration(frames) * pace / after); rotations.Load() < want-1 {
			t.Errorf("%d rotations in %d frames, want about %d", rotations.Load(), frames, want)
		}
		t.Logf("%d frames (%d min), %d rotations", frames, minutes, rotations.Load())
	})
}
