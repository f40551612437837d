package relay

import (
	"context"
	"time"

	"github.com/sagemaker-bidi/sagemaker-bidi/bidi"
)

// Model is the model side of a relayed call: the part of [bidi.Session]
// and [bidi.RotatingSession] the relay drives. Both implement it.
//
// The relay calls Send from one goroutine and Recv from another,
// concurrently; CloseSend (or Finish, see [Finisher]) after the last
// Send, from the sending goroutine; Close once, when the call is over,
// from any goroutine, while Send or Recv may be blocked (Close must
// unblock them). Recv must return io.EOF only at a clean end.
//
// A message Recv returns is the relay's from then on: the relay may give
// its Data to its pools of buffers once the message is on its way to the
// client (see [MessageBuffer]), so a Model must not keep or reuse it. A
// bidi session keeps no reference to what it returned.
type Model interface {
	Send(ctx context.Context, m bidi.Message) error
	Recv(ctx context.Context) (bidi.Message, error)
	CloseSend() error
	Close() error
}

// Finisher is implemented by a [Model] that can end its input without
// losing the model's last replies, as [bidi.Session.Finish] does: keep the
// input open until the model has been quiet for quiet, then end it and
// wait for the end. When a call ends gracefully (the client's
// EndOfInput message, its close, the idle or lifetime limit, Shutdown),
// the relay calls Finish if the Model has it; otherwise it keeps the input
// open itself until the model has sent nothing for the quiet period (or
// has ended), then calls CloseSend. Its receiving goroutine keeps reading
// meanwhile. [bidi.Session] and [bidi.RotatingSession] both implement it
// (the latter finishes every stream of the call, the ones rotated away
// from included), so the relay's own wait serves only other Models.
type Finisher interface {
	Finish(ctx context.Context, quiet time.Duration) error
}

// OpenFunc opens the model side of a call for input in. ctx governs the
// whole call, as the context given to [bidi.Client.Open] does: it ends
// when the call ends. OpenFunc should return only once the service has
// answered (or refused: the error then reaches the client, see
// [CloseFor]), so that a refused open is reported before any message is
// relayed.
type OpenFunc func(ctx context.Context, in *bidi.OpenInput) (Model, error)

// Rotating returns an OpenFunc that opens a [bidi.RotatingSession] with
// r (nil means the zero Rotation) for each call, so that a call can last
// longer than the service lets one stream last. OpenRotating returns
// once the service answered the first stream.
func Rotating(c *bidi.Client, r *bidi.Rotation) OpenFunc {
	return func(ctx context.Context, in *bidi.OpenInput) (Model, error) {
		rs, err := c.OpenRotating(ctx, in, r)
		if err != nil {
			return nil, err
		}
		return rs, nil
	}
}

// Sessions returns an OpenFunc that opens one plain [bidi.Session] per
// call, waiting for the service's answer (OpenInput.AwaitResponse), so
// that a refused open is Open's error.
func Sessions(c *bidi.Client) OpenFunc {
	return func(ctx context.Context, in *bidi.OpenInput) (Model, error) {
		in2 := *in
		in2.AwaitResponse = true
		s, err := c.Open(ctx, &in2)
		if err != nil {
			return nil, err
		}
		return s, nil
	}
}
