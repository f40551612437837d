package transport

import (
	"encoding/binary"
	"io"
	"runtime"
	"strings"
	"time"

	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"

	"github.com/sagemaker-bidi/sagemaker-bidi/eventstream"
)

// writeLoop is the connection's only writer. Each round it writes the
// queued control frames, then DATA from the streams whose bodies have
// bytes ready, one frame per stream in turn (round-robin), within the
// stream and connection windows. Frames go to a buffered writer that is
// flushed only when there is nothing left to write, so that the frames of
// many streams share one TLS record and one system call.
func (cc *conn) writeLoop() {
	defer cc.writerExit()
	var rotation streamRing // streams whose body may have more ready
	yielded := false        // the writer yielded once since its last flush
	batching := false       // the TCP connection under TLS is corked
	scratch := make([]byte, 9+maxDataFramePayloadWritten)
	act := activity{win: 1}
	for {
		if !batching && cc.cork != nil {
			cc.cork.cork()
			batching = true
		}
		cc.mu.Lock()
		ctrl := cc.ctrl
		cc.ctrl = cc.ctrlSpare[:0]
		ready := cc.ready
		cc.ready = cc.readySpare[:0]
		if cc.responses > 0 {
			cc.responses = 0
			select {
			case cc.ctrlOut <- struct{}{}:
			default:
			}
		}
		if cc.tableChanged {
			cc.tableChanged = false
			cc.henc.SetMaxDynamicTableSizeLimit(cc.peerTableSize)
		}
		maxFrame := min(cc.peerMaxFrame, maxDataFramePayloadWritten)
		cc.mu.Unlock()

		closeAfter := false
		for i := range ctrl {
			if cc.writeCtrl(&ctrl[i], &rotation) {
				closeAfter = true
			}
			ctrl[i] = ctrlItem{}
		}
		for _, s := range ready {
			rotation.push(s)
		}
		clear(ready)
		cc.mu.Lock()
		cc.ctrlSpare = ctrl[:0]
		cc.readySpare = ready[:0]
		cc.mu.Unlock()
		if closeAfter {
			cc.flush()
			cc.fail(ErrClosed)
			return
		}

		cc.writeData(&rotation, scratch, maxFrame, &act)

		cc.mu.Lock()
		cc.rotationLen = rotation.len()
		idle := len(cc.ctrl) == 0 && len(cc.ready) == 0 && (rotation.len() == 0 || cc.connBlocked)
		cc.mu.Unlock()
		if !idle {
			continue
		}
		if !yielded && cc.bw.Buffered() > 0 {
			// Before a flush (a system call), let the goroutines that
			// are about to queue frames run once: under load their frames
			// join this write instead of costing one each.
			yielded = true
			runtime.Gosched()
			continue
		}
		yielded, batching = false, false
		if err := cc.flush(); err != nil {
			cc.fail(&ConnError{Cause: err})
			return
		}
		lastFlush := time.Now()
		act.roll(lastFlush)
		select {
		case <-cc.wakeW:
		case <-cc.done:
			return
		}
		cc.coalesce(lastFlush, act.streams())
	}
}

// flush writes what the writer has buffered and ends a corked batch.
func (cc *conn) flush() error {
	err := cc.bw.Flush()
	if cc.cork != nil {
		if uerr := cc.cork.uncork(); err == nil {
			err = uerr
		}
	}
	return err
}

// coalesceStreams and coalesceWindow shape the writer under many streams:
// when at least coalesceStreams streams of a connection sent data
// recently (see activity), at least as many are open, and the writer is
// woken again within coalesceWindow of its last flush, it waits for the
// rest of the window first, so that the frames of many streams share one
// write and one wake-up (at most one flush per window, each frame delayed
// by less than the window). Few streams sending (a ping-pong, one large
// transfer, a few calls among many idle ones) are never delayed, nor are
// many streams that sent one after another (sessions opened and closed
// in turn): those that ended cannot share a write.
const (
	coalesceStreams = 32
	coalesceWindow  = 500 * time.Microsecond
)

// coalesce waits out the rest of the coalescing window after lastFlush,
// if active streams sent data recently (activity.streams), that is many,
// and as many are still open.
func (cc *conn) coalesce(lastFlush time.Time, active int) {
	if active < coalesceStreams {
		return
	}
	cc.mu.Lock()
	open := cc.slots
	cc.mu.Unlock()
	if open < coalesceStreams {
		return
	}
	if d := coalesceWindow - time.Since(lastFlush); d > 0 {
		t := time.NewTimer(d)
		select {
		case <-t.C:
		case <-cc.done:
			t.Stop()
		}
	}
}

// writerExit ends the writer: after a connection error it sends the
// GOAWAY that reports it (bounded by the deadline fail set), and it always
// closes the socket (closeSocket: never waiting on the peer).
func (cc *conn) writerExit() {
	cc.mu.Lock()
	goAway, code := cc.sendGoAway, cc.goAwayCode
	cc.sendGoAway = false
	cc.mu.Unlock()
	if goAway {
		cc.fr.WriteGoAway(0, code, nil)
		cc.flush()
	}
	cc.closeSocket()
}

// writeCtrl writes one control frame. It reports whether the connection
// is to be closed after it (a GOAWAY of this side).
func (cc *conn) writeCtrl(it *ctrlItem, rotation *streamRing) bool {
	switch it.kind {
	case ctrlHeaders:
		cc.writeHeaders(it.s)
		cc.mu.Lock()
		it.s.headersSent = true
		it.s.head = nil
		queue := !it.s.localDone && !it.s.queued
		it.s.queued = queue
		cc.mu.Unlock()
		if queue {
			rotation.push(it.s)
		}
	case ctrlWindowUpdate:
		cc.fr.WriteWindowUpdate(it.id, it.n)
	case ctrlReset:
		cc.fr.WriteRSTStream(it.id, http2.ErrCode(it.n))
	case ctrlPing:
		cc.fr.WritePing(false, it.data)
	case ctrlPingAck:
		cc.fr.WritePing(true, it.data)
	case ctrlSettingsAck:
		cc.fr.WriteSettingsAck()
	case ctrlGoAway:
		// The last stream ID of a client's GOAWAY names the last
		// server-initiated stream it processed: none, push is disabled.
		cc.fr.WriteGoAway(0, http2.ErrCode(it.n), nil)
		return true
	}
	return false
}

// writeHeaders encodes and writes the request head of s, in HEADERS and
// CONTINUATION frames no larger than the peer's maximum frame size.
func (cc *conn) writeHeaders(s *Stream) {
	h := s.head
	cc.hbuf.Reset()
	enc := cc.henc
	enc.WriteField(hpack.HeaderField{Name: ":method", Value: h.method})
	enc.WriteField(hpack.HeaderField{Name: ":scheme", Value: h.scheme})
	enc.WriteField(hpack.HeaderField{Name: ":authority", Value: h.authority})
	enc.WriteField(hpack.HeaderField{Name: ":path", Value: h.path})
	for k, vs := range h.header {
		name := strings.ToLower(k)
		switch name {
		case "host", "connection", "transfer-encoding", "keep-alive", "proxy-connection", "upgrade", "content-length":
			continue
		}
		sensitive := name == "authorization" || name == "x-amz-security-token"
		for _, v := range vs {
			enc.WriteField(hpack.HeaderField{Name: name, Value: v, Sensitive: sensitive})
		}
	}
	block := cc.hbuf.Bytes()
	cc.mu.Lock()
	max := max(int(cc.peerMaxFrame), defaultMaxFrameSize)
	cc.mu.Unlock()
	first := true
	for first || len(block) > 0 {
		frag := block
		if len(frag) > max {
			frag = frag[:max]
		}
		block = block[len(frag):]
		var err error
		if first {
			err = cc.fr.WriteHeaders(http2.HeadersFrameParam{StreamID: s.id, BlockFragment: frag, EndHeaders: len(block) == 0})
			first = false
		} else {
			err = cc.fr.WriteContinuation(s.id, len(block) == 0, frag)
		}
		if err != nil {
			return // the writer's next flush reports it
		}
	}
}

// writeData gives each stream of the rotation one DATA frame, within its
// window and the connection's, in turn: the streams queued when it starts
// get at most one frame each, and a stream that may have more goes to the
// back. A stream whose body has nothing ready leaves the rotation; its
// body's ready callback brings it back through cc.ready. Stream.queued is
// cleared before the read, so a callback that comes during the read queues
// the stream again and none is lost; a stream is never queued twice. When
// the connection window is used up the rotation stays as it is, its front
// first once a WINDOW_UPDATE comes.
func (cc *conn) writeData(rotation *streamRing, scratch []byte, maxFrame uint32, act *activity) {
	for range rotation.len() {
		s := rotation.front()
		cc.mu.Lock()
		if s.localDone {
			s.queued = false
			cc.mu.Unlock()
			rotation.pop()
			continue
		}
		if cc.sendWindow <= 0 {
			if !cc.connBlocked {
				cc.sendStalls.Add(1)
			}
			cc.connBlocked = true
			cc.mu.Unlock()
			return
		}
		s.queued = false
		rotation.pop()
		if s.sendWindow <= 0 {
			s.sendStalls.Add(1)
			s.flowBlocked = true
			cc.mu.Unlock()
			continue
		}
		w := min(int32(maxFrame), s.sendWindow, cc.sendWindow)
		cc.mu.Unlock()

		n, err := s.body.ReadNow(scratch[9 : 9+int(w)])
		end := err == io.EOF
		switch {
		case err == eventstream.ErrWouldBlock, err == nil && n == 0:
			// Nothing ready (a body breaking the contract with 0, nil
			// is taken at its word): its ready callback brings it back.
			continue
		case err != nil && !end:
			cc.mu.Lock()
			closedByEngine := s.bodyClosed
			cc.mu.Unlock()
			if !closedByEngine {
				s.cancel(err)
			}
			// Else the engine closed the body after this loop took the
			// stream (a reset or END_STREAM it received, which ended the
			// stream): the body's error is that close, and the stream,
			// over already, keeps its response bytes for its reader.
			continue
		}
		cc.mu.Lock()
		if s.localDone {
			// Reset meanwhile: the bytes are dropped with the stream.
			cc.mu.Unlock()
			continue
		}
		s.sendWindow -= int32(n)
		cc.sendWindow -= int32(n)
		act.note(s)
		// A window used up is a stall as it happens, before the writer
		// comes back to the stream and finds it (a WINDOW_UPDATE may
		// come first); counted again then, which changes nothing.
		if s.sendWindow <= 0 {
			s.sendStalls.Add(1)
		}
		if cc.sendWindow <= 0 {
			cc.sendStalls.Add(1)
		}
		// The body may hold more than one read returns (a part that did
		// not fit, the end frame after the parts): the stream stays in
		// the rotation until a read finds nothing ready.
		requeue := !end && !s.queued
		if requeue {
			s.queued = true
		}
		cc.mu.Unlock()
		var flags byte
		if end {
			flags = byte(http2.FlagDataEndStream)
		}
		putFrameHeader(scratch, n, http2.FrameData, flags, s.id)
		if _, err := cc.bw.Write(scratch[:9+n]); err != nil {
			return
		}
		if end {
			cc.endedLocally(s)
			continue
		}
		if requeue {
			rotation.push(s)
		}
	}
}

// putFrameHeader writes the 9-byte frame header into b.
func putFrameHeader(b []byte, length int, typ http2.FrameType, flags byte, id uint32) {
	b[0], b[1], b[2] = byte(length>>16), byte(length>>8), byte(length)
	b[3] = byte(typ)
	b[4] = flags
	binary.BigEndian.PutUint32(b[5:9], id&(1<<31-1))
}

// activityWindow is how long a stream that sent data counts as sending,
// for coalescing: long enough to span the gaps of a paced sender (a
// 20 ms audio frame), short enough to forget a burst of calls that went
// quiet.
const activityWindow = 100 * time.Millisecond

// An activity counts the streams of a connection that sent data
// recently: the distinct streams the writer wrote DATA for in the
// current window of activityWindow and in the one before. It replaces
// the connection's open streams as the measure of "many streams" for
// coalescing, so that calls that are open but quiet (clients that went
// silent, a relay's crowd) do not delay the few that send: those would
// pay up to coalesceWindow a frame for batching that does not happen.
// The writer owns it, and each Stream's activeWin.
type activity struct {
	win   uint32    // the current window's number; a stream's activeWin says which counted it
	start time.Time // when the current window began
	cur   int       // streams counted in the current window
	prev  int       // in the window before it, if that ended less than a window ago
}

// note counts s, which just sent data, once per window.
func (a *activity) note(s *Stream) {
	if s.activeWin != a.win {
		s.activeWin = a.win
		a.cur++
	}
}

// roll starts a new window at now once the current one has lasted
// activityWindow.
func (a *activity) roll(now time.Time) {
	el := now.Sub(a.start)
	if el < activityWindow {
		return
	}
	a.prev = a.cur
	if el >= 2*activityWindow {
		a.prev = 0 // the current window ran long: nothing was sent in most of it
	}
	a.cur = 0
	a.win++
	a.start = now
}

// streams is how many streams sent data recently: the larger count of
// the current window and the whole one before it.
func (a *activity) streams() int { return max(a.cur, a.prev) }
