package bidi

import (
	"context"
	"io"
	"iter"
	"time"
)

// A Conversation is the surface a [*Session] and a [*RotatingSession]
// share, for code that carries a conversation without caring whether it
// outlives one stream (a relay, a transcriber): send messages or parts,
// receive messages, end the input at once or gracefully, close. Each
// method has the contract of Session's method of the same name; a
// RotatingSession's are documented on it.
type Conversation interface {
	Send(ctx context.Context, m Message) error
	SendPart(ctx context.Context, p Part) error
	Recv(ctx context.Context) (Message, error)
	Messages(ctx context.Context) iter.Seq2[Message, error]
	Response(ctx context.Context) (*Response, error)
	CloseSend() error
	Finish(ctx context.Context, quiet time.Duration) error
	Close() error
}

var (
	_ Conversation = (*Session)(nil)
	_ Conversation = (*RotatingSession)(nil)
)

// messagesOf is the Messages iterator over recv: it ends after the last
// message at a clean end (io.EOF); any other error is yielded once, with
// a zero Message, and ends it.
func messagesOf(ctx context.Context, recv func(context.Context) (Message, error)) iter.Seq2[Message, error] {
	return func(yield func(Message, error) bool) {
		for {
			m, err := recv(ctx)
			if err == io.EOF {
				return
			}
			if !yield(m, err) || err != nil {
				return
			}
		}
	}
}
