package bidi

import (
	"context"
	"io"
)

// Reader returns an io.Reader over the concatenated bytes of the messages
// the model sends, ignoring message boundaries and data types, so that
// stream decoders compose with a session, for example
// framing.NewReader(sess.Reader(ctx)). It receives parts as they arrive
// (through RecvPart), so a long message is readable before it is complete
// and Options.MaxMessageSize bounds only each part.
//
// Read returns io.EOF when the service ends the stream cleanly and the
// session's error otherwise; a stream that ends inside a message is an
// error wrapping io.ErrUnexpectedEOF. ctx bounds every Read. The reader
// consumes the session's messages: do not call Recv while using it.
func (s *Session) Reader(ctx context.Context) io.Reader {
	return &sessionReader{s: s, ctx: ctx}
}

type sessionReader struct {
	s    *Session
	ctx  context.Context
	rest []byte
	err  error
}

func (r *sessionReader) Read(p []byte) (int, error) {
	for len(r.rest) == 0 {
		if r.err != nil {
			return 0, r.err
		}
		part, err := r.s.RecvPart(r.ctx)
		if err != nil {
			if err != r.ctx.Err() {
				r.err = err // terminal
			}
			return 0, err
		}
		r.rest = part.Data
	}
	n := copy(p, r.rest)
	r.rest = r.rest[n:]
	return n, nil
}
