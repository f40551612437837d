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
// few milliseconds: the client sees every frame once and the normal
// close. Around a rotation the old stream's last replies and the new
// one's first may interleave, as RotatingSession.Recv returns them (see
// bidi.RotatingSession's order). The relay ends the call with RotatingSession.Finish (see
// Finisher), which finishes every stream of the call.
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
	// Frames in flight: the client paces itself on the replies, so at
	// most window replies wait anywhere, and 8 × (640 + 64) bytes fit
	// the default 8 KiB queue to the client: a reader slowed by a loaded
	// machine is never "too slow" (16 did not fit once the kernel's
	// buffers were full, and the relay closed the call with 1008).
	const window = 8
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
	var sent, got, reordered uint32 // frames sent; replies received; those after a later frame's
	seen := map[uint32]bool{}
	var highest uint32
	take := func(n uint32) {
		if n >= sent || seen[n] {
			t.Fatalf("reply %d is frame %d: sent %d, seen before %v", got, n, sent, seen[n])
		}
		seen[n] = true
		if n < highest {
			reordered++
		}
		highest = max(highest, n)
		got++
	}
	// Stream until at least three planned rotations happened, and a
	// little more.
	for rotations.Load() < 3 || sent < 200 {
		for sent-got < window {
			binary.LittleEndian.PutUint32(frame, sent)
			if err := c.Write(t.Context(), websocket.MessageBinary, frame); err != nil {
				t.Fatal(err)
			}
			sent++
		}
		n, ok := <-replies
		if !ok {
			t.Fatalf("ended after %d replies: %v", got, <-errc)
		}
		take(n)
	}
	c.Write(t.Context(), websocket.MessageText, []byte("end"))
	for n := range replies {
		take(n)
	}
	wantClose(t, <-errc, websocket.StatusNormalClosure, "")
	if got != sent {
		t.Fatalf("%d replies for %d frames", got, sent)
	}
	t.Logf("%d frames, %d rotations, %d replies after a later frame's", sent, rotations.Load(), reordered)
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

// Both of the bidi session types end a relayed call's input with Finish,
// not with the relay's own quiet wait.
var (
	_ Finisher = (*bidi.Session)(nil)
	_ Finisher = (*bidi.RotatingSession)(nil)
)
