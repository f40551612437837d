package relay

import (
	"encoding/binary"
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
