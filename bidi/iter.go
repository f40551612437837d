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
	return messagesOf(ctx, s.Recv)
}

// Parts is like Messages for the raw parts of RecvPart. A yielded Part's
// Data is valid until the loop body returns.
func (s *Session) Parts(ctx context.Context) iter.Seq2[Part, error] {
	return func(yield func(Part, error) bool) {
		for {
			p, err := s.RecvPart(ctx)
			if err == io.EOF {
				return
			}
			if !yield(p, err) || err != nil {
				return
			}
		}
	}
}
