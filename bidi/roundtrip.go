package bidi

import (
	"github.com/sagemaker-bidi/sagemaker-bidi/bidi/internal/transport"
)

// roundTrip opens attempt a's stream on the client's engine and waits for
// the response head. The stream is the response's body and Close's to
// reset.
func (s *Session) roundTrip(a *attempt) (*transport.Stream, *transport.Response, error) {
	ctx := a.req.Context()
	st, err := s.c.engine.NewStream(ctx, a.req.URL, a.req.Header, a.body)
	if err != nil {
		return nil, nil, err
	}
	// Close resets the stream itself, at once, so that its connection is
	// idle as soon as Close returns.
	s.stream.Store(st)
	if s.ctx.Err() != nil {
		st.Close()
	}
	r, err := st.Response(ctx)
	if err != nil {
		st.Close()
		return nil, nil, err
	}
	return st, r, nil
}
