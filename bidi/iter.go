package bidi

import (
	"context"
	"io"
	"iter"
)

// Messages returns an iterator over the messages received with Recv(ctx).
// It ends after the last message when the service ends the stream cleanly;
// any other error is yielded once, with a zero Message, and ends the
// iteration.
//
// The sequence is single-use: it consumes the session's messages, so
// ranging over it again (or calling Recv in between) continues with the
// messages not yet received rather than starting over. Breaking out of the
// loop leaves the session open.
//
//	for msg, err := range sess.Messages(ctx) {
//		if err != nil {
//			return err
//		}
//		handle(msg)
//	}
func (s *Session) Messages(ctx context.Context) iter.Seq2[Message, error] {
	return seqOf(ctx, s.Recv)
}

// Parts is like Messages for the raw parts of RecvPart. A yielded Part's
// Data is valid until the loop body returns.
func (s *Session) Parts(ctx context.Context) iter.Seq2[Part, error] {
	return seqOf(ctx, s.RecvPart)
}

// seqOf is the one receive iterator, behind Session.Messages and Parts
// and RotatingSession.Messages: it yields what recv(ctx) returns
// until the clean end (io.EOF, not yielded); any other error is yielded
// once, with recv's value (a zero one), and ends it. Breaking out of the
// loop calls recv no more.
func seqOf[T any](ctx context.Context, recv func(context.Context) (T, error)) iter.Seq2[T, error] {
	return func(yield func(T, error) bool) {
		for {
			v, err := recv(ctx)
			if err == io.EOF {
				return
			}
			if !yield(v, err) || err != nil {
				return
			}
		}
	}
}
