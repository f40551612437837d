package bidi

import (
	"context"
	"iter"
	"time"
)

// A Conversation is the surface a [*Session] and a [*RotatingSession]
// share, for code that carries a conversation without caring whether it
// outlives one stream (a relay, a transcriber): send messages or parts,
// receive messages, end the input at once or gracefully, close. Each
// method has the contract of Session's method of the same name; a
// RotatingSession's are documented on it. Both types implement Messages
// with one iterator over their Recv.
//
// What each type adds beyond it: a Session, one stream, receives parts
// too (RecvPart, Parts, Reader) and has a Context that ends with it. A
// RotatingSession, a call carried by one stream after another, hands
// over whole messages in order across its streams (a part belongs to
// the stream that carried it, so it offers no part-level receive) and
// tells which stream is current or delivered the last reply (Generation,
// RecvGeneration), how many messages were sent (Sent), and rotates on
// request (Rotate).
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
