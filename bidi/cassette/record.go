package cassette

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/sagemaker-bidi/sagemaker-bidi/bidi"
)

// RecordOptions configure [Record]. The zero value is ready to use.
type RecordOptions struct {
	// MaxMessageSize bounds a message [Recording.Recv] reassembles. 0
	// means 16 MiB, the default of bidi.Options.MaxMessageSize; set it to
	// the client's Options.MaxMessageSize when that differs.
	MaxMessageSize int
	// MaxPartSize is the client's Options.MaxPartSize: [Recording.Send]
	// records a larger message as the PARTIAL…COMPLETE parts the session
	// sends it in, so that a replay matches the parts that travel. 0
	// means 64 KiB, the default of bidi.Options.MaxPartSize.
	MaxPartSize int
	// Padding is the client's Options.Padding: [Recording.Send] and
	// [Recording.SendPart] record the length of each part's padding (the
	// "pad" of the cassette, never its bytes) as this policy gives it.
	// Nil means bidi.BucketPadding, the client's default; set it when the
	// client's differs.
	Padding func(payloadLen int) int
	// Now is the clock of the event times. Nil means time.Now.
	Now func() time.Time
}

// maxPadding is the most padding a part's P header holds; the session
// clamps a policy's answer to it.
const maxPadding = 1<<15 - 1

// A Recording is a *bidi.Session whose traffic is recorded: the parts
// sent and received, the response head, the end of input and the
// session's end go to a [Sink] (a [Writer] on a file, say) as they
// happen. Use it where the application uses the session; the methods
// behave as the Session's do.
//
// Concurrency is the Session's: Send, SendPart and CloseSend from any
// goroutine, Recv and RecvPart from one receiving goroutine, Response and
// Close from any. Each event is recorded when the call is made (a send)
// or returns (a receive), so the cassette's order is the order the
// application saw. A Send that fails is recorded all the same: the model
// may have received part of it.
//
// Close ends the session, records its end if none was recorded yet and
// closes the sink. Errors of the sink do not fail the session's calls;
// [Recording.Err] returns the first.
type Recording struct {
	sess  *bidi.Session
	sink  Sink
	now   func() time.Time
	start time.Time
	max   int
	part  int
	pad   func(payloadLen int) int

	mu        sync.Mutex // guards the fields below and orders the sink's events
	responded bool       // a response event was recorded
	sentEnd   bool       // a send_end event was recorded
	closing   int        // CloseSend calls under way: the session's end waits to be recorded after them
	closeDone sync.Cond  // broadcast, on mu, when a CloseSend call is over
	ended     bool       // an end event was recorded; nothing follows
	closed    bool       // the sink is closed
	sinkErr   error      // the sink's first error
	ev        Event      // the part event being written: reused, so that recording a part allocates nothing

	msg     []byte // Recv's message being reassembled; owned by the receiver
	inMsg   bool
	msgType bidi.DataType
}

// Record starts recording sess, opened with in (nil records no open
// event's fields), to sink. Call it right after Client.Open, before the
// first Send, so that the event times count from the start.
func Record(sess *bidi.Session, in *bidi.OpenInput, sink Sink, opts *RecordOptions) *Recording {
	var o RecordOptions
	if opts != nil {
		o = *opts
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.MaxMessageSize <= 0 {
		o.MaxMessageSize = 16 << 20
	}
	if o.MaxPartSize <= 0 {
		o.MaxPartSize = 64 << 10
	}
	if o.Padding == nil {
		o.Padding = bidi.BucketPadding
	}
	r := &Recording{sess: sess, sink: sink, now: o.Now, start: o.Now(), max: o.MaxMessageSize, part: o.MaxPartSize, pad: o.Padding}
	r.closeDone.L = &r.mu
	open := Event{Kind: KindOpen}
	if in != nil {
		open.Endpoint, open.TargetVariant = in.EndpointName, in.TargetVariant
		open.InvocationPath, open.QueryString = in.ModelInvocationPath, in.ModelQueryString
	}
	r.mu.Lock()
	r.emitLocked(&open)
	r.mu.Unlock()
	return r
}

// Context returns the session's context (see [bidi.Session.Context]).
func (r *Recording) Context() context.Context { return r.sess.Context() }

// Session returns the recorded session.
func (r *Recording) Session() *bidi.Session { return r.sess }

// Err returns the first error of the sink, if any.
func (r *Recording) Err() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.sinkErr
}

// emitLocked stamps e and writes it to the sink. r.mu is held.
func (r *Recording) emitLocked(e *Event) {
	if r.ended || r.closed {
		return
	}
	e.T = r.now().Sub(r.start)
	if e.Kind == KindEnd {
		r.ended = true
	}
	if err := r.sink.Write(e); err != nil && r.sinkErr == nil {
		r.sinkErr = err
	}
}

// sent records a part about to be sent.
func (r *Recording) sent(p bidi.Part) {
	pad := min(max(r.pad(len(p.Data)), 0), maxPadding) // as the session clamps it
	r.mu.Lock()
	defer r.mu.Unlock()
	r.emitPartLocked(KindSend, p, pad)
}

// emitPartLocked records a part sent or received with pad bytes of
// padding (-1: not known). r.mu is held.
func (r *Recording) emitPartLocked(k Kind, p bidi.Part, pad int) {
	r.ev = Event{Kind: k, Type: p.Type, Complete: p.Complete, Size: len(p.Data), Padding: pad, Data: p.Data}
	r.emitLocked(&r.ev)
	r.ev.Data = nil // the caller's bytes
}

// Send records m and sends it as [bidi.Session.Send] does. A message
// over MaxPartSize is recorded as parts of at most MaxPartSize (the
// session may cut them a byte differently to suit the padding).
func (r *Recording) Send(ctx context.Context, m bidi.Message) error {
	d := m.Data
	for len(d) > r.part {
		r.sent(bidi.Part{Data: d[:r.part], Type: m.Type})
		d = d[r.part:]
	}
	r.sent(bidi.Part{Data: d, Type: m.Type, Complete: true})
	return r.sess.Send(ctx, m)
}

// SendPart records p and sends it as [bidi.Session.SendPart] does.
func (r *Recording) SendPart(ctx context.Context, p bidi.Part) error {
	r.sent(p)
	return r.sess.SendPart(ctx, p)
}

// CloseSend ends the input as [bidi.Session.CloseSend] does and records
// it when it succeeds. The end frame may reach the model, and the model
// end the stream, before the session's CloseSend returns: the receiver
// that sees that end records it only once this call has recorded its
// send_end, so the cassette holds them in the order they happened.
func (r *Recording) CloseSend() error {
	r.mu.Lock()
	r.closing++
	r.mu.Unlock()
	err := r.sess.CloseSend()
	if testHookCloseSent != nil {
		testHookCloseSent()
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.closing--
	r.closeDone.Broadcast()
	if err == nil && !r.sentEnd {
		r.sentEnd = true
		r.emitLocked(&Event{Kind: KindSendEnd})
	}
	return err
}

// awaitCloseSendLocked waits until no CloseSend call is under way, before
// the session's end is recorded. It cannot wait long: the session's send
// side is over by then, so a Send that held CloseSend back returns. r.mu
// is held.
func (r *Recording) awaitCloseSendLocked() {
	for r.closing > 0 {
		if testHookAwaitCloseSend != nil {
			testHookAwaitCloseSend()
		}
		r.closeDone.Wait()
	}
}

// Test hooks: testHookCloseSent runs when the session's CloseSend has
// returned, before CloseSend records it; testHookAwaitCloseSend when the
// session's end waits for a CloseSend under way. Set only by tests,
// before the recording starts.
var testHookCloseSent, testHookAwaitCloseSend func()

// Response returns the response head as [bidi.Session.Response] does,
// and records it.
func (r *Recording) Response(ctx context.Context) (*bidi.Response, error) {
	resp, err := r.sess.Response(ctx)
	if resp != nil {
		r.mu.Lock()
		r.respondedLocked(resp)
		r.mu.Unlock()
	}
	return resp, err
}

// respondedLocked records the response head once. r.mu is held.
func (r *Recording) respondedLocked(resp *bidi.Response) {
	if r.responded {
		return
	}
	r.responded = true
	r.emitLocked(&Event{Kind: KindResponse, Status: resp.StatusCode, Variant: resp.InvokedProductionVariant, RequestID: resp.RequestID})
}

// RecvPart returns the next part as [bidi.Session.RecvPart] does (its
// Data valid until the next call) and records it, or records the end
// the error reports.
func (r *Recording) RecvPart(ctx context.Context) (bidi.Part, error) {
	p, err := r.sess.RecvPart(ctx)
	r.received(ctx, p, err)
	return p, err
}

// Recv returns the next whole message as [bidi.Session.Recv] does,
// reassembling it from the parts it records one by one (fragments are
// kept in the cassette).
func (r *Recording) Recv(ctx context.Context) (bidi.Message, error) {
	for {
		p, err := r.RecvPart(ctx)
		if err != nil {
			var tooLarge *bidi.MessageTooLargeError
			if errors.As(err, &tooLarge) {
				r.msg, r.inMsg = r.msg[:0], false
			}
			return bidi.Message{}, err
		}
		if !r.inMsg {
			if p.Complete && len(p.Data) <= r.max {
				// A message in one part: one copy, as Session.Recv makes.
				return bidi.Message{Data: append([]byte{}, p.Data...), Type: p.Type}, nil
			}
			r.msg, r.inMsg, r.msgType = r.msg[:0], true, p.Type
		}
		if len(r.msg)+len(p.Data) > r.max {
			r.msg, r.inMsg = r.msg[:0], false
			return bidi.Message{}, &bidi.MessageTooLargeError{Limit: int64(r.max)}
		}
		r.msg = append(r.msg, p.Data...)
		if p.Complete {
			r.inMsg = false
			return bidi.Message{Data: append([]byte{}, r.msg...), Type: r.msgType}, nil
		}
	}
}

// received records what a receive returned.
func (r *Recording) received(ctx context.Context, p bidi.Part, err error) {
	if err != nil && (ctx.Err() != nil && errors.Is(err, ctx.Err()) || errors.As(err, new(*bidi.MessageTooLargeError))) {
		return // not the session's end
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if !r.responded {
		// At once: something arrived, so the head has.
		if resp, _ := r.sess.Response(doneContext); resp != nil {
			r.respondedLocked(resp)
		}
	}
	if err == nil {
		r.emitPartLocked(KindRecv, p, -1)
		return
	}
	r.awaitCloseSendLocked()
	for _, e := range endEvents(err) {
		if e.Kind == KindResponse {
			if r.responded {
				continue
			}
			r.responded = true
		}
		r.emitLocked(&e)
	}
}

// doneContext is a context that is already done: Response with it
// returns the head only if it has arrived.
var doneContext = func() context.Context {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	return ctx
}()

// endEvents returns the events that record a session's terminal error.
func endEvents(err error) []Event {
	var (
		re  *bidi.ResponseError
		mse *bidi.ModelStreamError
		isf *bidi.InternalStreamFailure
		se  *bidi.ExceptionError
	)
	switch {
	case err == io.EOF:
		return []Event{{Kind: KindEnd, Reason: EndCompleted}}
	case errors.As(err, &re):
		return []Event{
			{Kind: KindResponse, Status: re.StatusCode, RequestID: re.RequestID, ErrorType: re.Code, Body: string(re.Body)},
			{Kind: KindEnd, Reason: EndHTTPError},
		}
	case errors.As(err, &mse):
		body, _ := json.Marshal(struct {
			Message   string `json:"Message"`
			ErrorCode string `json:"ErrorCode,omitempty"`
		}{mse.Message, mse.ErrorCode_})
		return []Event{
			{Kind: KindException, ExceptionType: "ModelStreamError", Body: string(body)},
			{Kind: KindEnd, Reason: EndException, CloseCode: mse.CloseCode()},
		}
	case errors.As(err, &isf):
		body, _ := json.Marshal(struct {
			Message string `json:"Message"`
		}{isf.Message})
		return []Event{
			{Kind: KindException, ExceptionType: "InternalStreamFailure", Body: string(body)},
			{Kind: KindEnd, Reason: EndException},
		}
	case errors.As(err, &se):
		return []Event{
			{Kind: KindError, Code: se.Code, Message: se.Message},
			{Kind: KindEnd, Reason: EndException},
		}
	case errors.Is(err, bidi.ErrSessionClosed):
		return []Event{{Kind: KindEnd, Reason: EndClosed}}
	}
	return []Event{{Kind: KindEnd, Reason: EndReset, Err: fmt.Sprint(err)}}
}

// Close closes the session as [bidi.Session.Close] does, records its end
// ("closed") unless one was recorded, and closes the sink. It returns the
// sink's first error.
func (r *Recording) Close() error {
	r.sess.Close()
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return r.sinkErr
	}
	r.awaitCloseSendLocked()
	r.emitLocked(&Event{Kind: KindEnd, Reason: EndClosed})
	r.closed = true
	if err := r.sink.Close(); err != nil && r.sinkErr == nil {
		r.sinkErr = err
	}
	return r.sinkErr
}
