package relay

import (
	"context"
	"encoding/binary"
	"sync/atomic"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/sagemaker-bidi/sagemaker-bidi/bidi"
)

// Audio frames through a RotatingSession that replaces its stream every
// few milliseconds: the client sees every frame once, in order, and the
// normal close. (RotatingSession has no Finish yet; the relay keeps the
// last stream's input open until the model is quiet, then CloseSend.
// Once it gains Finish, the relay calls it instead: see Finisher.)
func TestRotatingSessionLosesNothing(t *testing.T) {
	var rotations atomic.Int32
	e := newEnv(t, nil, &Options{EndOfInput: endOfInput, FinishQuiet: 20 * time.Millisecond}, nil,
		func(c *bidi.Client, o *Options) {
			o.Open = Rotating(c, &bidi.Rotation{
				After:       30 * time.Millisecond,
				FinishQuiet: 5 * time.Millisecond,
				OnRotate: func(ev bidi.RotationEvent) {
					if ev.Reason == bidi.RotationAge {
						rotations.Add(1)
					}
				},
			})
		})
	c := e.dial(t)
	const window = 16 // frames in flight: the client paces itself on the replies
	replies := make(chan uint32, window)
	errc := make(chan error, 1)
	go func() {
		for {
			_, b, err := c.Read(t.Context())
			if err != nil {
				errc <- err
				close(replies)
				return
			}
			replies <- binary.LittleEndian.Uint32(b)
		}
	}()
	frame := make([]byte, 640)
	var next uint32
	sent := uint32(0)
	// Stream until at least three planned rotations happened, and a
	// little more.
	for rotations.Load() < 3 || sent < 200 {
		for sent-next < window {
			binary.LittleEndian.PutUint32(frame, sent)
			if err := c.Write(t.Context(), websocket.MessageBinary, frame); err != nil {
				t.Fatal(err)
			}
			sent++
		}
		n, ok := <-replies
		if !ok {
			t.Fatalf("ended after %d replies: %v", next, <-errc)
		}
		if n != next {
			t.Fatalf("reply %d is frame %d", next, n)
		}
		next++
	}
	c.Write(t.Context(), websocket.MessageText, []byte("end"))
	for n := range replies {
		if n != next {
			t.Fatalf("reply %d is frame %d", next, n)
		}
		next++
	}
	wantClose(t, <-errc, websocket.StatusNormalClosure, "")
	if next != sent {
		t.Fatalf("%d replies for %d frames", next, sent)
	}
	t.Logf("%d frames, %d rotations", sent, rotations.Load())
}

// Without Finish, the relay keeps the model's input open after the
// client's end until the model is quiet: a reply that comes late still
// reaches the client, and CloseSend comes only after it.
func TestEndOfInputWaitsForQuietWithoutFinish(t *testing.T) {
	fm := newFakeModel()
	var closeSends atomic.Int32
	ended := make(chan struct{})
	e := newEnv(t, nil, &Options{
		FinishQuiet: time.Hour, // only the model's own end ends the wait
		EndOfInput: func(m bidi.Message) bool {
			if endOfInput(m) {
				close(ended)
				return true
			}
			return false
		},
		Open: func(ctx context.Context, in *bidi.OpenInput) (Model, error) {
			return closeSendCounter{fm, &closeSends}, nil
		},
	}, nil)
	c := e.dial(t)
	c.Write(t.Context(), websocket.MessageText, []byte("question"))
	c.Write(t.Context(), websocket.MessageText, []byte("end"))
	<-ended
	fm.replies <- bidi.Text("late answer")
	if _, b, err := c.Read(t.Context()); err != nil || string(b) != "late answer" {
		t.Fatalf("read %q %v", b, err)
	}
	if n := closeSends.Load(); n != 0 {
		t.Fatalf("CloseSend called %d times before the model was quiet", n)
	}
	fm.end <- nil
	_, err := readUntilClose(t, c)
	wantClose(t, err, websocket.StatusNormalClosure, "")
}

// closeSendCounter counts CloseSend calls; the fake model then ends, as
// SageMaker ends the container's connection when the input ends.
type closeSendCounter struct {
	*fakeModel
	n *atomic.Int32
}

func (c closeSendCounter) CloseSend() error {
	c.n.Add(1)
	select {
	case c.end <- nil:
	default:
	}
	return nil
}
