package relay

import (
	"context"
	"errors"
	"net/http"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/coder/websocket"

	"github.com/sagemaker-bidi/sagemaker-bidi/bidi"
)

// A call is one relayed client: a WebSocket connection and its model
// session, pumped by goroutines of its own besides the handler's:
//
//	readClient  ws.Reader  -> toModel  (owns the client's read side)
//	sendModel   toModel    -> model.Send, then Finish/CloseSend
//	recvModel   model.Recv -> toClient (owns the model's read side)
//	writeClient toClient   -> ws.Write, then ws.Close with the status
//
// readClient and recvModel run for the whole call; sendModel and
// writeClient run only while their queue has work (see queue), so an
// idle call holds two goroutines besides the handler's and its
// session's.
//
// and supervised without a goroutine of its own (see supervise.go):
// timers (pings, idle, lifetime, the graceful deadline) and the pumps'
// ends are events, and the one that ends the call starts a goroutine
// that closes and releases everything (cleanup).
//
// How a call ends. The first end decided wins (decide): its close code,
// reason and kind are what the client gets and what is recorded.
//   - graceful: the input ends (toModel closed: the client's EndOfInput
//     message or close, idle, lifetime, Shutdown), sendModel finishes the
//     model, recvModel reads to the model's end and closes toClient,
//     writeClient delivers everything and closes the WebSocket;
//   - abort: a violation or overflow; cleanup closes the WebSocket with
//     the status and cancels everything.
//
// Lock order: relMu before endMu and supMu, which are leaves (a queue
// calls spawn, which takes supMu, after releasing its own lock).
type call struct {
	h     *Handler
	r     *http.Request
	model Model
	obs   *callObs
	ws    *websocket.Conn // set by start before the goroutines start

	ctx    context.Context // ends when the call is over (abort, or the end of run)
	cancel context.CancelFunc

	toModel, toClient *queue

	// wg counts the call's goroutines. readClient and recvModel run for
	// the whole call; sendModel and writeClient are the queues'
	// consumers, started by a push when there is work and gone when it
	// is done (see queue), so an idle call holds neither.
	wg sync.WaitGroup

	lastData  atomic.Int64 // unix nanoseconds of the last data message either way
	lastReply atomic.Int64 // unix nanoseconds of the last message from the model

	pingWindow atomic.Int64 // second (unix) of the current ping-count window; owned by onPing
	pings      atomic.Int64 // pings received in that second; owned by onPing

	endMu  sync.Mutex
	ended  bool                 // guarded by endMu: the status below is decided
	code   websocket.StatusCode // guarded by endMu
	reason string               // guarded by endMu
	kind   string               // guarded by endMu

	aborted   chan struct{} // closed once by abort
	abortOnce sync.Once
	abortNow  atomic.Bool   // abort without a close handshake (the client is unresponsive)
	modelDone chan struct{} // closed when recvModel returns

	// Supervision (supervise.go). Fields below supMu are guarded by it.
	release func()        // gives the Handler its slot back; called once by cleanup
	stops   []func() bool // context.AfterFuncs to stop at the end; set by start

	relMu    sync.Mutex // held by abort; cleanup takes it last
	released bool       // guarded by relMu: cleanup is done

	supMu     sync.Mutex
	over      bool        // the end is decided: no goroutine is started after it
	modelOver bool        // recvModel returned
	writeOver bool        // the last writeClient returned
	finishT   *time.Timer // the graceful end's deadline, once one started
	idleT     *time.Timer
	lifeT     *time.Timer
	pingT     *time.Timer
	pinging   bool // a ping is in flight
}

func newCall(h *Handler, r *http.Request, model Model, ctx context.Context, cancel context.CancelFunc, obs *callObs) *call {
	c := &call{
		h: h, r: r, model: model, obs: obs, ctx: ctx, cancel: cancel,
		toModel:   newQueue(h.opts.ToModelQueueBytes),
		toClient:  newQueue(h.opts.ToClientQueueBytes),
		aborted:   make(chan struct{}),
		modelDone: make(chan struct{}),
	}
	c.toModel.release = putBuf // its messages' buffers come from read
	c.toModel.spawn = func() { c.spawn(c.sendModel) }
	c.toClient.spawn = func() { c.spawn(c.writeClient) }
	return c
}

// decide records the call's end status unless one was decided; it
// reports whether this one was.
func (c *call) decide(code websocket.StatusCode, reason, kind string) bool {
	c.endMu.Lock()
	defer c.endMu.Unlock()
	if c.ended {
		return false
	}
	c.ended, c.code, c.reason, c.kind = true, code, reason, kind
	return true
}

func (c *call) status() (websocket.StatusCode, string, string) {
	c.endMu.Lock()
	defer c.endMu.Unlock()
	return c.code, c.reason, c.kind
}

// abort decides the status (unless the call already ended for another
// reason than a graceful end in progress) and ends the call at once. A
// timer or context.AfterFunc may still call it after cleanup; it then
// does nothing (released), so that nothing of a call runs after its
// Handler's Close or Shutdown returned.
func (c *call) abort(code websocket.StatusCode, reason, kind string) {
	c.relMu.Lock()
	defer c.relMu.Unlock()
	if c.released {
		return
	}
	c.endMu.Lock()
	switch c.kind {
	case "", KindEndOfInput, KindIdle, KindLifetime, KindShutdown:
		// Nothing decided, or a graceful end in progress: the failure
		// is what the client must learn.
		c.ended, c.code, c.reason, c.kind = true, code, reason, kind
	}
	c.endMu.Unlock()
	c.abortOnce.Do(func() {
		if testHookAbort != nil {
			testHookAbort(kind)
		}
		close(c.aborted)
		c.end(true)
	})
}

// Test hooks, set only by tests before any call starts.
var (
	testHookAbort func(kind string)                        // abort decided, before the call is ended
	testHookPush  func(toModel bool, dropped int, ok bool) // after each push to a queue
)

// endInput starts a graceful end with the given status: the model's
// input ends after what is queued, and its replies are still delivered.
func (c *call) endInput(code websocket.StatusCode, reason, kind string) {
	c.decide(code, reason, kind)
	c.toModel.close()
}

func (c *call) touch() { c.lastData.Store(time.Now().UnixNano()) }

// onPing counts the client's pings (on readClient's goroutine, inside
// ws.Read) and aborts a flood.
func (c *call) onPing(context.Context, []byte) bool {
	limit := c.h.opts.MaxPingsPerSecond
	if limit < 0 {
		return true
	}
	now := time.Now().Unix()
	if c.pingWindow.Load() != now {
		c.pingWindow.Store(now)
		c.pings.Store(0)
	}
	if c.pings.Add(1) > int64(limit) {
		c.abort(websocket.StatusPolicyViolation, "too many pings", KindPingFlood)
		return false
	}
	return true
}

func (c *call) overflowStatus(toModel bool) (websocket.StatusCode, string) {
	reason := "client too slow"
	if toModel {
		reason = "model too slow"
	}
	if c.h.opts.Overflow == OverflowTryAgainLater {
		return websocket.StatusTryAgainLater, reason
	}
	return websocket.StatusPolicyViolation, reason
}

// hook runs a Hook and turns its error into an abort; it reports whether
// m is to be forwarded.
func (c *call) hook(h Hook, m bidi.Message) (bidi.Message, bool) {
	if h == nil {
		return m, true
	}
	m2, err := h(c.ctx, m)
	if err == nil {
		return m2, true
	}
	if !errors.Is(err, ErrSkip) {
		var ce websocket.CloseError
		if errors.As(err, &ce) {
			c.abort(ce.Code, cleanReason(ce.Reason), KindHook)
		} else {
			c.abort(websocket.StatusInternalError, "internal error", KindHook)
		}
	}
	return bidi.Message{}, false
}

// readClient reads the client's messages into toModel.
func (c *call) readClient() {
	defer c.clientEnded()
	o := &c.h.opts
	inputOver := false
	for {
		typ, data, err := c.read()
		if err != nil {
			switch code := websocket.CloseStatus(err); {
			case code != -1:
				c.decide(code, "", KindClientClose)
			case errors.Is(err, websocket.ErrMessageTooBig):
				// coder/websocket has sent the close frame (1009).
				c.decide(websocket.StatusMessageTooBig, "message too big", KindTooBig)
			}
			return
		}
		c.touch()
		m := bidi.Message{Data: data, Type: bidi.DataTypeBinary}
		if typ == websocket.MessageText {
			if !utf8.Valid(data) {
				putBuf(data)
				c.abort(websocket.StatusInvalidFramePayloadData, "text message is not valid UTF-8", KindInvalidUTF8)
				return
			}
			m.Type = bidi.DataTypeUTF8
		}
		if inputOver {
			putBuf(data)
			c.abort(websocket.StatusPolicyViolation, "message after end of input", KindProtocol)
			return
		}
		if o.EndOfInput != nil && o.EndOfInput(m) {
			inputOver = true
			putBuf(data)
			c.endInput(websocket.StatusNormalClosure, "", KindEndOfInput)
			// The status decided here is a placeholder: the model's
			// end gives the close code (see recvModel).
			continue
		}
		m, ok := c.hook(o.ToModel, m)
		if !ok {
			putBuf(data)
			if c.ctx.Err() != nil || isClosed(c.aborted) {
				return
			}
			continue
		}
		dropped, ok := c.toModel.push(m, o.Overflow == OverflowDropOldest)
		c.obs.dropped(true, dropped)
		if testHookPush != nil {
			testHookPush(true, dropped, ok)
		}
		if !ok {
			putBuf(m.Data)
			code, reason := c.overflowStatus(true)
			c.abort(code, reason, KindOverflow)
			return
		}
	}
}

// read reads the client's next message into a pooled buffer (see
// getBuf), whose owner the caller becomes. It passes no context: run's
// CloseNow unblocks it when the call ends (a cancellable context costs
// coder/websocket an AfterFunc per message).
func (c *call) read() (websocket.MessageType, []byte, error) {
	typ, r, err := c.ws.Reader(context.Background())
	if err != nil {
		return 0, nil, err
	}
	data, err := readAll(r)
	return typ, data, err
}

// sendModel, toModel's consumer, sends its messages to the model until it
// is empty; once it is closed and drained, it ends the model's input.
func (c *call) sendModel() {
	for {
		m, res := c.toModel.take()
		if res == idle {
			return
		}
		if res == drained {
			break
		}
		err := c.model.Send(c.ctx, m)
		n := len(m.Data)
		putBuf(m.Data) // Send copied it
		if err != nil {
			return // the model's side is over; recvModel reports why
		}
		c.obs.message(true, n)
	}
	if c.ctx.Err() != nil {
		return
	}
	ctx, cancel := context.WithTimeout(c.ctx, c.h.opts.FinishTimeout)
	defer cancel()
	if f, ok := c.model.(Finisher); ok {
		_ = f.Finish(ctx, c.h.opts.FinishQuiet) // its outcome reaches recvModel too
		return
	}
	c.awaitQuiet(ctx)
	_ = c.model.CloseSend()
}

// awaitQuiet waits until the model has sent nothing for FinishQuiet
// (counted from its last reply, or from the call), until it ends, or
// until ctx ends: Finish's promise for a Model without Finish, so that
// replies still on their way when the input ends are not lost on a
// platform that closes the container's connection at the end of the
// input.
func (c *call) awaitQuiet(ctx context.Context) {
	quiet := c.h.opts.FinishQuiet
	start := time.Now().UnixNano()
	for {
		last := max(c.lastReply.Load(), start)
		wait := quiet - time.Duration(time.Now().UnixNano()-last)
		if wait <= 0 {
			return
		}
		t := time.NewTimer(wait)
		select {
		case <-t.C:
		case <-c.modelDone:
			t.Stop()
			return
		case <-ctx.Done():
			t.Stop()
			return
		}
	}
}

// recvModel reads the model's messages into toClient, then the end.
func (c *call) recvModel() {
	defer c.modelEnded()
	o := &c.h.opts
	for {
		m, err := c.model.Recv(c.ctx)
		if err != nil {
			if errors.As(err, new(*bidi.MessageTooLargeError)) {
				c.obs.dropped(false, 1)
				continue
			}
			code, reason := CloseFor(err)
			c.endMu.Lock()
			switch {
			case !c.ended:
				c.ended, c.code, c.reason, c.kind = true, code, reason, KindModelEnd
			case c.kind == KindEndOfInput:
				// The client asked for the end: it gets the model's
				// verdict on it.
				c.code, c.reason = code, reason
			}
			c.endMu.Unlock()
			c.toClient.close()
			return
		}
		c.touch()
		c.lastReply.Store(time.Now().UnixNano())
		m, ok := c.hook(o.ToClient, m)
		if !ok {
			if c.ctx.Err() != nil || isClosed(c.aborted) {
				return
			}
			continue
		}
		dropped, ok := c.toClient.push(m, o.Overflow == OverflowDropOldest)
		c.obs.dropped(false, dropped)
		if testHookPush != nil {
			testHookPush(false, dropped, ok)
		}
		if !ok {
			code, reason := c.overflowStatus(false)
			c.abort(code, reason, KindOverflow)
			return
		}
	}
}

// writeClient, toClient's consumer, writes its messages to the client
// until it is empty; once it is closed and drained, it closes the
// WebSocket with the call's status. writeDone is closed when a consumer
// returns for good (drained, or a failed write: the queue then spawns no
// other).
func (c *call) writeClient() {
	for {
		m, res := c.toClient.take()
		if res == idle {
			return
		}
		if res == drained {
			break
		}
		if c.ctx.Err() != nil {
			c.writeEnded()
			return
		}
		typ := websocket.MessageBinary
		if m.Type == bidi.DataTypeUTF8 {
			typ = websocket.MessageText
		}
		// No context: run's CloseNow unblocks a Write when the call
		// ends (a cancellable one costs coder/websocket an AfterFunc per
		// call).
		if err := c.ws.Write(context.Background(), typ, m.Data); err != nil {
			c.writeEnded()
			return
		}
		c.touch()
		c.obs.message(false, len(m.Data))
	}
	defer c.writeEnded()
	if c.ctx.Err() != nil {
		return
	}
	code, reason, _ := c.status()
	c.ws.Close(code, reason)
}

func isClosed(ch <-chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}
