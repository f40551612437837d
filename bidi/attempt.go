package bidi

import (
	"net/http"
	"sync/atomic"

	"github.com/sagemaker-bidi/sagemaker-bidi/bidi/internal/transport"
	"github.com/sagemaker-bidi/sagemaker-bidi/eventstream"
	"github.com/sagemaker-bidi/sagemaker-bidi/internal/wire"
)

// attempt is one HTTP request of a session and its stream, the session's
// counterpart of x/net's clientStream: a retried open makes another. It
// owns its context, its engine stream and its body (its view of the
// session's send queue, with the signature chain seeded by its request's
// signature) and, once answered, the decoder of its response stream, as
// clientStream owns its body reader; it ends one way, abort. Of a
// session's attempts, at most one is answered: its stream is the one Recv
// decodes, and its signer the one Send continues (sendPipe.signer).
//
// An attempt has no context of its own: its stream and its wait for the
// response head run under the session's (which every end of the session
// cancels), and only the session's goroutine ends an attempt while the
// session goes on (a refused or failed attempt, once its wait returned),
// by resetting its stream; a context per attempt would cost each session
// a cancelCtx, its children's map and its Done channel, and wake nothing
// that the session's context and the reset do not.
//
// Owners: n, head and body are set by newAttempt and read-only after, but
// for head, which roundTrip drops once the engine has it; st is
// set once by roundTrip, on the run goroutine, before the attempt is
// published in Session.cur, so that whoever loads it from cur (Close,
// Send's flow-control diagnosis) sees st. dec is set by
// startReceiving on the run goroutine before the session's phase shows
// the answer (and respReady is closed), and used only after that by the
// holder of the receive turn, which also owns part.
type attempt struct {
	n    int
	head http.Header
	body *reqBody
	st   *transport.Stream

	dec  *eventstream.Decoder
	part wire.Part   // the PayloadPart decoded last; aliases dec's buffer
	over atomic.Bool // its stream was seen over (checkOver), once answered
}

// newAttempt retrieves credentials, signs a new request whose body is
// attached to the session's pipe and returns it, ready to send.
func (s *Session) newAttempt(n int) (*attempt, error) {
	creds, err := retrieveCredentials(s.ctx, s.opts.Credentials, s.c.now())
	if err != nil {
		return nil, err
	}
	head, seed := s.c.newRequest(&s.input, s.url, creds, s.c.now())
	body := newReqBody(&s.pipe, eventstream.NewSigner(creds, s.opts.Region, signingName, seed, func(o *eventstream.SignerOptions) {
		o.Now = s.c.now
	}))
	// The body starts with the first queued part: a retried attempt
	// sends everything sent so far again, on its own chain.
	if err := s.pipe.attach(body); err != nil {
		return nil, err
	}
	return &attempt{n: n, head: head, body: body}, nil
}

// roundTrip opens the attempt's stream on the client's engine, publishes
// the attempt as the session's current one and waits for the response
// head, which it returns as the session's Response (any status). On an
// error the attempt is aborted.
func (a *attempt) roundTrip(s *Session) (*Response, error) {
	ctx := s.ctx
	st, err := s.c.engine.NewStream(ctx, s.url, a.head, a.body)
	a.head = nil // the engine took it: a session need not keep it
	if err != nil {
		return nil, err
	}
	a.st = st
	s.cur.Store(a)
	if s.ctx.Err() != nil {
		// Close came before the attempt was published: it could not
		// abort it, so the stream is reset here, at once.
		a.abort()
	}
	status, header, err := st.Response(ctx)
	if err != nil {
		a.abort()
		return nil, err
	}
	return headResponse(status, header), nil
}

// startReceiving readies the answered attempt's response stream for
// Recv: its decoder reads the stream in place, and the stream's notify
// function wakes a waiting Recv (wake). It is called by the run goroutine
// before the phase shows the answer and respReady is closed.
func (a *attempt) startReceiving(maxMessage int, wake chan struct{}) {
	// Payloads over MaxMessageSize are skipped as they stream, never
	// buffered: what the session holds is bounded by its limit, not by
	// the format's 24 MiB.
	a.dec = eventstream.NewDecoder(a.st, func(o *eventstream.DecoderOptions) { o.DiscardPayloadsOver = maxMessage })
	a.st.SetNotify(func() { signal(wake) })
}

// abort ends the attempt, the one function that does: it takes its body
// off the send queue (the engine then reads nothing more of it) and
// resets its engine stream unless both sides ended it
// (transport.Stream.Close), so that its connection is free of it at once.
// Buffered response bytes are dropped. abort may be called more than
// once, from any goroutine.
func (a *attempt) abort() {
	a.body.Close()
	if a.st != nil {
		a.st.Close()
	}
}
