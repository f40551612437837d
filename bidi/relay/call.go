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
	"github.com/sagemaker-bidi/sagemaker-bidi/internal/backoff"
)

// A call is one relayed client: a WebSocket connection and its model
// session, pumped both ways by goroutines of its own (see direction):
//
//	in:  readClient (ws.Reader)  -> sendOne (model.Send) or toModel; finishModel
//	out: recvModel (model.Recv)  -> writeOne (ws.Write) or toClient; closeClient
//
// The producers (readClient, recvModel) run for the whole call, one
// goroutine each at a time; each delivers its message itself when its
// queue is empty and has no consumer, and otherwise queues it for a
// consumer that runs only while the queue has work. A delivery of the
// producer's own that blocks hands the producer role to a fresh
// goroutine. So an idle call holds two goroutines besides its session's.
//
// It is supervised without a goroutine of its own (see supervise.go):
// timers (pings, idle, lifetime, the graceful deadline) and the pumps'
// ends are events, and the one that ends the call starts a goroutine
// that closes and releases everything (cleanup).
//
// How a call ends. The first end decided wins (decide): its close code,
// reason and kind are what the client gets and what is recorded.
//   - graceful: the input ends (toModel closed: the client's EndOfInput
//     message or close, idle, lifetime, Shutdown), finishModel finishes
//     the model, recvModel reads to the model's end and closes toClient,
//     the replies are delivered and closeClient closes the WebSocket;
//   - abort: a violation or overflow; cleanup closes the WebSocket with
//     the status and cancels everything.
//
// Lock order: relMu before endMu and supMu, which are leaves (a queue
// calls spawn, which takes supMu, after releasing its own lock; so does
// the Handler's watchdog, whose mu is a leaf too). The Handler's callsMu
// is a leaf: no call's lock is taken under it, nor it under one.
type call struct {
	h     *Handler
	logR  *http.Request // what ErrorLog gets (see logRequest); nil without one
	model Model         // set by ServeHTTP once open, before start
	obs   *callObs
	ws    *websocket.Conn // set by start before the goroutines start

	// conn is the client's connection under ws, set by the upgrade
	// (smallBufWriter.Hijack) before start: closeWS and failConn limit
	// its reads.
	conn *clientConn

	ctx    context.Context // ends when the call is over (abort, or the end of run)
	cancel context.CancelFunc

	toModel, toClient *queue
	in, out           direction // client to model, model to client

	// wg counts the call's goroutines: the producers and the queues'
	// consumers (see direction).
	wg sync.WaitGroup

	inputOver bool // the client sent its EndOfInput message; owned by in's producer

	born      time.Time    // when newCall made the call, with its monotonic clock reading
	lastData  atomic.Int64 // of the last data message either way: nanoseconds since born, on the monotonic clock (a step of the wall clock moves no idle timeout)
	lastReply atomic.Int64 // of the last message from the model: nanoseconds since born, as lastData; 0 before the first

	pingWindow atomic.Int64 // second (since born) of the current ping-count window; owned by onPing
	pings      atomic.Int64 // pings received in that second; owned by onPing

	endMu  sync.Mutex
	ended  bool                 // guarded by endMu: the status below is decided
	code   websocket.StatusCode // guarded by endMu
	reason string               // guarded by endMu
	kind   string               // guarded by endMu

	aborted   chan struct{} // closed once by abort
	abortOnce sync.Once
	abortNow  atomic.Bool   // abort without a close handshake (the client is unresponsive)
	modelDone chan struct{} // closed when out's producer ends (modelEnded)

	// In the Handler's list of calls (Handler.calls), from ServeHTTP to
	// cleanup; guarded by h.callsMu, as is started.
	prev, next *call
	started    bool // start ran: Shutdown and Close end the call (before, Close cancels its open)

	// Supervision (supervise.go). Fields below supMu are guarded by it.
	release func() // gives the Handler its slot back; called once by cleanup

	relMu    sync.Mutex // held by abort; cleanup takes it last
	released bool       // guarded by relMu: cleanup is done

	supMu     sync.Mutex
	over      bool        // the end is decided: no goroutine is started after it
	modelOver bool        // out's producer ended
	writeOver bool        // out's deliveries ended (writeEnded)
	finishT   *time.Timer // the graceful end's deadline, once one started
	idleT     *time.Timer
	lifeT     *time.Timer
	pingT     *time.Timer
	pinging   bool // a ping is in flight
}

// newCall makes the call of request r; ServeHTTP sets its model once it
// is open.
func newCall(h *Handler, r *http.Request, ctx context.Context, cancel context.CancelFunc, obs *callObs) *call {
	c := &call{
		h: h, logR: h.logRequest(r), obs: obs, ctx: ctx, cancel: cancel,
		toModel:   newQueue(h.opts.ToModelQueueBytes),
		toClient:  newQueue(h.opts.ToClientQueueBytes),
		aborted:   make(chan struct{}),
		modelDone: make(chan struct{}),
		born:      time.Now(),
	}
	// The client's messages are read into pooled buffers (read); the
	// model's are the relay's once Recv returned them (see Model), and
	// their buffers go to the same pools (putBuf keeps only those of a
	// pool's size: MessageBuffer's, in practice).
	c.in = direction{c: c, q: c.toModel, produce: c.readClient, ended: c.clientEnded, deliver: c.sendOne, drained: c.finishModel, recycle: putBuf}
	c.out = direction{c: c, q: c.toClient, produce: c.recvModel, ended: c.modelEnded, deliver: c.writeOne, drained: c.closeClient, recycle: putBuf}
	c.toModel.spawn = func() { c.spawn(c.in.consume) }
	c.toClient.spawn = func() { c.spawn(c.out.consume) }
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
	testHookPush  func(toModel bool, dropped int, ok bool) // after each message a direction accepted (queued or delivered at once) or refused
)

// endInput starts a graceful end with the given status: the model's
// input ends after what is queued, and its replies are still delivered.
func (c *call) endInput(code websocket.StatusCode, reason, kind string) {
	c.decide(code, reason, kind)
	c.toModel.close()
}

func (c *call) touch() { c.lastData.Store(int64(time.Since(c.born))) }

// onPing counts the client's pings (on in's producer, inside
// ws.Read) and aborts a flood.
func (c *call) onPing(context.Context, []byte) bool {
	limit := c.h.opts.MaxPingsPerSecond
	if limit < 0 {
		return true
	}
	now := int64(time.Since(c.born) / time.Second)
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

// pass is the step both producers take with a message m they have read:
// m goes through the direction's hook h, then into d (delivered or
// queued). It reports whether the producer goes on reading (more: false
// once the call is over or d overflowed, which aborts the call) and
// whether d's consumer took the producer's role on (handed). The buffer
// read goes back to d's recycle: once h dropped m, or once d is done with
// the message h returned (see accept).
func (c *call) pass(d *direction, h Hook, m bidi.Message) (more, handed bool) {
	toModel := d == &c.in
	read := m.Data
	m, ok := c.hook(h, m)
	if !ok {
		d.release(read)
		select {
		case <-c.aborted:
			return false, false
		default:
			return c.ctx.Err() == nil, false
		}
	}
	dropped, ok, handed := d.accept(m, c.h.opts.Overflow == OverflowDropOldest)
	c.obs.dropped(toModel, dropped)
	if !ok {
		code, reason := c.overflowStatus(toModel)
		c.abort(code, reason, KindOverflow)
		return false, false
	}
	return true, handed
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

// readClient is in's producer: it reads the client's messages and
// delivers or queues them for the model. It returns when the client's
// side is over (handed false) or once it handed its role on.
func (c *call) readClient() (handed bool) {
	o := &c.h.opts
	for {
		typ, data, err := c.read()
		if err != nil {
			switch code := websocket.CloseStatus(err); {
			case code != -1:
				c.decide(code, "", KindClientClose)
			case errors.Is(err, websocket.ErrMessageTooBig):
				// coder/websocket has sent the close frame (1009): no
				// reply can follow it, so the call ends at once.
				c.abort(websocket.StatusMessageTooBig, "message too big", KindTooBig)
			}
			return false
		}
		c.touch()
		m := bidi.Message{Data: data, Type: bidi.DataTypeBinary}
		if typ == websocket.MessageText {
			if !utf8.Valid(data) {
				putBuf(data)
				c.abort(websocket.StatusInvalidFramePayloadData, "text message is not valid UTF-8", KindInvalidUTF8)
				return false
			}
			m.Type = bidi.DataTypeUTF8
		}
		if c.inputOver {
			putBuf(data)
			c.abort(websocket.StatusPolicyViolation, "message after end of input", KindProtocol)
			return false
		}
		if o.EndOfInput != nil && o.EndOfInput(m) {
			c.inputOver = true
			putBuf(data)
			c.endInput(websocket.StatusNormalClosure, "", KindEndOfInput)
			// The status decided here is a placeholder: the model's
			// end gives the close code (see recvModel). FinishTimeout
			// bounds this graceful end as it does the others.
			c.startFinish()
			continue
		}
		// The read buffer is pooled: it goes back to the pool once the
		// message is sent, queued (copied) or dropped.
		if more, handed := c.pass(&c.in, o.ToModel, m); !more || handed {
			return handed
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

// sendOne is in's delivery: it sends m to the model (Send copies it: the
// caller gives its buffer back). It reports false once the model's side
// is over (recvModel reports why).
func (c *call) sendOne(m bidi.Message) bool {
	if err := c.model.Send(c.ctx, m); err != nil {
		return false
	}
	c.obs.message(true, len(m.Data))
	return true
}

// finishModel is in's end, once toModel is closed and drained: it ends
// the model's input gracefully. A model without Finish gets Finish's
// promise here: its input ends once it has sent nothing for FinishQuiet
// (counted from its last reply, or from now), unless it ended first, so
// that replies still on their way are not lost on a platform that closes
// the container's connection at the end of the input.
func (c *call) finishModel() {
	if c.ctx.Err() != nil {
		return
	}
	ctx, cancel := context.WithTimeout(c.ctx, c.h.opts.FinishTimeout)
	defer cancel()
	if f, ok := c.model.(Finisher); ok {
		_ = f.Finish(ctx, c.h.opts.FinishQuiet) // its outcome reaches recvModel too
		return
	}
	backoff.Quiet(ctx, c.born, &c.lastReply, c.h.opts.FinishQuiet, c.modelDone)
	_ = c.model.CloseSend()
}

// recvModel is out's producer: it reads the model's messages and
// delivers or queues them for the client, then its end. It returns when
// the model's side is over (handed false) or once it handed its role on.
func (c *call) recvModel() (handed bool) {
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
			return false
		}
		c.touch()
		c.lastReply.Store(int64(time.Since(c.born)))
		if more, handed := c.pass(&c.out, o.ToClient, m); !more || handed {
			return handed
		}
	}
}

// writeOne is out's delivery: it writes m to the client. It reports
// false once the client's side is over (the call ended, or a write
// failed), after writeEnded: no more replies are delivered.
func (c *call) writeOne(m bidi.Message) bool {
	if c.ctx.Err() != nil {
		c.writeEnded()
		return false
	}
	typ := websocket.MessageBinary
	if m.Type == bidi.DataTypeUTF8 {
		typ = websocket.MessageText
	}
	// No context: cleanup's CloseNow unblocks a Write when the call ends
	// (a cancellable one costs coder/websocket an AfterFunc per call).
	if err := c.ws.Write(context.Background(), typ, m.Data); err != nil {
		c.writeEnded()
		return false
	}
	c.touch()
	c.obs.message(false, len(m.Data))
	return true
}

// closeClient is out's end, once toClient is closed and drained: every
// reply was delivered, and the WebSocket closes with the call's status.
func (c *call) closeClient() {
	defer c.writeEnded()
	if c.ctx.Err() != nil {
		return
	}
	code, reason, _ := c.status()
	c.closeWS(code, reason)
}
