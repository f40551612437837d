package bidi

import (
	"net/http"
)

// roundTrip sends the request of attempt a and waits for the response
// head, on the client's engine or, with Options.HTTPClient, through
// net/http. The response body is the stream's response side.
func (s *Session) roundTrip(a *attempt) (*http.Response, error) {
	c := s.c
	if c.engine == nil {
		return c.http.Do(a.req)
	}
	ctx := a.req.Context()
	st, err := c.engine.NewStream(ctx, a.req.URL, a.req.Header, a.body)
	if err != nil {
		return nil, err
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
		return nil, err
	}
	return &http.Response{
		Status:     http.StatusText(r.StatusCode),
		StatusCode: r.StatusCode,
		Proto:      "HTTP/2.0",
		ProtoMajor: 2,
		Header:     r.Header,
		Body:       st,
		Request:    a.req,
	}, nil
}
