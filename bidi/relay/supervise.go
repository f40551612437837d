package relay

import (
	"context"
	"time"

	"github.com/coder/websocket"
)

// A call's supervision holds no goroutine while the call runs: its
// timers are time.AfterFuncs, the Handler's Shutdown and Close reach it
// through the Handler's list of calls (drain, closeNow), and the pumps
// report their ends. The event that ends the call (an abort, or the
// model's end delivered to the client) sets over and starts cleanup,
// which closes and releases everything and waits for the pumps. Events
// take supMu only to read or set its fields, and never while calling
// into the queues, abort or endInput (which may start a pump: see
// spawn).

// start relays the call over ws: it starts the two long-lived pumps and
// arms the timers. It returns at once; the call then runs on its own
// until cleanup calls release. If the Handler's Shutdown or Close came
// while the model was opening, the call then ends as they end calls.
func (c *call) start(ws *websocket.Conn) {
	o := &c.h.opts
	c.ws = ws
	ws.SetReadLimit(o.MaxMessageSize)
	c.touch()
	c.supMu.Lock()
	if o.PingInterval > 0 {
		c.pingT = time.AfterFunc(o.PingInterval, c.pingTick)
	}
	if o.IdleTimeout > 0 {
		c.idleT = time.AfterFunc(o.IdleTimeout, c.idleTick)
	}
	if o.MaxLifetime > 0 {
		c.lifeT = time.AfterFunc(o.MaxLifetime, func() {
			c.endInput(websocket.StatusGoingAway, "lifetime limit reached", KindLifetime)
			c.startFinish()
		})
	}
	c.wg.Add(2)
	c.supMu.Unlock()
	c.h.watch.add(&c.in, &c.out)
	go func() { defer c.wg.Done(); c.in.run() }()
	go func() { defer c.wg.Done(); c.out.run() }()

	h := c.h
	h.callsMu.Lock()
	c.started = true
	draining, closed := h.draining, h.closed
	h.callsMu.Unlock()
	switch {
	case closed:
		c.closeNow()
	case draining:
		c.drain()
	}
}

// drain is the Handler's Shutdown for this call: the model's input ends
// and its remaining replies are delivered, within FinishTimeout.
func (c *call) drain() {
	if !c.isStarted() {
		return // start drains it
	}
	c.endInput(websocket.StatusGoingAway, "going away", KindShutdown)
	c.startFinish()
}

// closeNow is the Handler's Close for this call: a started call ends at
// once, a call whose model is opening has its open cancelled.
func (c *call) closeNow() {
	if !c.isStarted() {
		c.cancel() // ServeHTTP refuses it; or start, which finds closed set, ends it
		return
	}
	c.abort(websocket.StatusGoingAway, "going away", KindShutdown)
}

func (c *call) isStarted() bool {
	c.h.callsMu.Lock()
	defer c.h.callsMu.Unlock()
	return c.started
}

// spawn runs f as one of the call's goroutines, unless the call is over
// (cleanup may be waiting for them: nothing is added after that).
func (c *call) spawn(f func()) {
	c.supMu.Lock()
	defer c.supMu.Unlock()
	if c.over {
		return
	}
	c.wg.Go(f)
}

// startFinish arms the graceful end's deadline, once.
func (c *call) startFinish() {
	c.supMu.Lock()
	defer c.supMu.Unlock()
	if c.over || c.finishT != nil {
		return
	}
	c.finishT = time.AfterFunc(c.h.opts.FinishTimeout, func() {
		c.abort(websocket.StatusGoingAway, "going away", KindFinishTimeout)
	})
}

// clientEnded is in's producer's end: the client's side ended (its close
// frame, or the connection), so its input is over and the model finishes.
func (c *call) clientEnded() {
	c.endInput(websocket.StatusAbnormalClosure, "", KindClientGone)
	c.startFinish()
}

// modelEnded is out's producer's end.
func (c *call) modelEnded() {
	close(c.modelDone)
	c.outHalfEnded(&c.modelOver, &c.writeOver)
}

// writeEnded is the end of out's deliveries: the client has every reply
// (or is gone).
func (c *call) writeEnded() {
	c.outHalfEnded(&c.writeOver, &c.modelOver)
}

// outHalfEnded records the end of one half of out (its producer or its
// deliveries: mine, a field guarded by supMu) and starts the finish; the
// half that ends second, finding other set, ends the call.
func (c *call) outHalfEnded(mine, other *bool) {
	c.supMu.Lock()
	*mine = true
	both := *other
	c.supMu.Unlock()
	c.startFinish()
	if both {
		c.end(false)
	}
}

// idleTick ends the input after IdleTimeout without data either way.
func (c *call) idleTick() {
	idle := c.h.opts.IdleTimeout
	since := time.Since(c.born) - time.Duration(c.lastData.Load())
	if since < idle {
		c.supMu.Lock()
		if !c.over {
			c.idleT.Reset(idle - since)
		}
		c.supMu.Unlock()
		return
	}
	c.endInput(websocket.StatusGoingAway, "idle timeout", KindIdle)
	c.startFinish()
}

// pingTick pings the client unless a ping is in flight, and re-arms.
func (c *call) pingTick() {
	c.supMu.Lock()
	defer c.supMu.Unlock()
	if c.over {
		return
	}
	c.pingT.Reset(c.h.opts.PingInterval)
	if c.pinging {
		return
	}
	c.pinging = true
	c.wg.Go(c.ping)
}

// ping sends one ping and aborts the call when its pong does not come
// within PingTimeout: the client is unresponsive.
func (c *call) ping() {
	ctx, cancel := context.WithTimeout(c.ctx, c.h.opts.PingTimeout)
	err := c.ws.Ping(ctx)
	cancel()
	c.supMu.Lock()
	c.pinging = false
	c.supMu.Unlock()
	if err != nil && c.ctx.Err() == nil {
		c.abortNow.Store(true)
		c.abort(websocket.StatusGoingAway, "ping timeout", KindPingTimeout)
	}
}

// end decides that the call is over, once: aborted by abort, or
// gracefully when the model ended and the client has everything. It
// stops the timers and starts cleanup.
func (c *call) end(aborted bool) {
	c.supMu.Lock()
	if c.over {
		c.supMu.Unlock()
		return
	}
	c.over = true
	for _, t := range []*time.Timer{c.finishT, c.idleT, c.lifeT, c.pingT} {
		if t != nil {
			t.Stop()
		}
	}
	c.supMu.Unlock()
	go c.cleanup(aborted)
}

// cleanup ends what is left of the call and releases it: after an abort
// the client gets the close status (or, unresponsive, none), then the
// model is closed and every pump is waited for.
func (c *call) cleanup(aborted bool) {
	if aborted {
		code, reason, kind := c.status()
		switch {
		case c.abortNow.Load():
			c.ws.CloseNow()
		case clientBrokeProtocol(kind):
			c.failConn(code, reason)
		default:
			c.closeWS(code, reason)
		}
	}
	c.cancel()
	c.model.Close()
	c.ws.CloseNow()
	c.toModel.close()
	c.toClient.close()
	c.wg.Wait()
	c.h.watch.remove(&c.in, &c.out)
	c.h.untrack(c)
	c.relMu.Lock() // an abort in progress (a timer's) is over
	c.released = true
	c.relMu.Unlock()
	code, _, kind := c.status()
	c.h.logEnd(c.logR, code, kind)
	c.obs.end(code, kind)
	c.release()
}

// clientBrokeProtocol reports whether a call that ended for kind ended
// because its client broke the protocol (a message too big or not UTF-8,
// a ping flood, data after its end of input).
func clientBrokeProtocol(kind string) bool {
	switch kind {
	case KindTooBig, KindInvalidUTF8, KindPingFlood, KindProtocol:
		return true
	}
	return false
}

// closeWS closes the WebSocket with the close handshake, reading at most
// closeReadLimit bytes of the client's within closeWait.
func (c *call) closeWS(code websocket.StatusCode, reason string) {
	c.conn.limitReads(closeReadLimit)
	c.ws.Close(code, reason)
}

// failConn ends the connection of a client that broke the protocol as RFC
// 6455 (7.1.7) has an endpoint fail a WebSocket connection: it sends the
// close frame (if coder/websocket has not already), then closes the
// connection without reading on, the read the reading pump may be
// blocked in included.
func (c *call) failConn(code websocket.StatusCode, reason string) {
	c.conn.limitReads(0)
	c.ws.Close(code, reason)
}
