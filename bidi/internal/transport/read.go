package transport

import (
	"errors"
	"fmt"
	"io"
	"math"
	"strings"

	"golang.org/x/net/http2"
)

// readLoop reads and checks every frame of the peer until the connection
// fails. It is the connection's reader goroutine.
func (cc *conn) readLoop() {
	for {
		f, err := cc.fr.ReadFrame()
		cc.guard.n = 0
		if err != nil {
			if se, ok := err.(http2.StreamError); ok {
				// A malformed frame on one stream (a bad header field,
				// for example): the framer's state is intact, so only
				// that stream is reset.
				cc.streamError(se.StreamID, se.Code, fmt.Errorf("malformed frame: %v", se))
				continue
			}
			cc.readError(err)
			return
		}
		if err := cc.handle(f); err != nil {
			var ce *ConnError
			if errors.As(err, &ce) && ce.Code != http2.ErrCodeNo {
				cc.connError(ce.Code, ce.Reason)
			} else {
				cc.fail(err)
			}
			return
		}
	}
}

// readError ends the connection after ReadFrame failed.
func (cc *conn) readError(err error) {
	var ce http2.ConnectionError
	switch {
	case errors.As(err, &ce):
		reason := "protocol violation"
		if d := cc.fr.ErrorDetail(); d != nil {
			reason = d.Error()
		}
		cc.connError(http2.ErrCode(ce), reason)
	case errors.Is(err, errHeaderBlockTooLong):
		cc.connError(http2.ErrCodeProtocol, err.Error())
	case errors.Is(err, http2.ErrFrameTooLarge):
		cc.connError(http2.ErrCodeFrameSize, "frame larger than SETTINGS_MAX_FRAME_SIZE")
	default:
		if err == io.EOF {
			err = io.ErrUnexpectedEOF
		}
		cc.mu.Lock()
		ga := cc.goAwayErr
		cc.mu.Unlock()
		if ga != nil {
			// The server said why it closed: its GOAWAY.
			cc.fail(&ConnError{Code: ga.Code, Remote: true, Reason: ga.Reason, Cause: err})
		} else if err == io.ErrUnexpectedEOF {
			cc.fail(&ConnError{Reason: "server closed the connection", Cause: err})
		} else {
			cc.fail(&ConnError{Cause: err})
		}
	}
}

// handle processes one frame. A returned error ends the connection.
func (cc *conn) handle(f http2.Frame) error {
	switch f := f.(type) {
	case *http2.DataFrame:
		return cc.onData(f)
	case *http2.MetaHeadersFrame:
		return cc.onHeaders(f)
	case *http2.RSTStreamFrame:
		return cc.onReset(f)
	case *http2.SettingsFrame:
		if f.IsAck() {
			return nil
		}
		if err := cc.applySettings(f); err != nil {
			return err
		}
		cc.p.changed() // MAX_CONCURRENT_STREAMS may have grown
		return cc.queueResponse(ctrlItem{kind: ctrlSettingsAck})
	case *http2.PingFrame:
		if f.IsAck() {
			cc.mu.Lock()
			if cc.pingPending && f.Data == cc.pingData {
				// The next check is due PingInterval after this read,
				// not when the timeout would have been (later, when
				// PingTimeout is the longer): the health check's bound
				// on a dead peer stays PingInterval + PingTimeout after
				// the last frame read.
				cc.pingPending = false
				cc.pingTimer.Reset(cc.t.cfg.PingInterval)
			}
			cc.mu.Unlock()
			return nil
		}
		return cc.queueResponse(ctrlItem{kind: ctrlPingAck, data: f.Data})
	case *http2.GoAwayFrame:
		cc.onGoAway(f)
	case *http2.WindowUpdateFrame:
		return cc.onWindowUpdate(f)
	case *http2.PushPromiseFrame:
		return &ConnError{Code: http2.ErrCodeProtocol, Reason: "PUSH_PROMISE with push disabled"}
	default:
		// PRIORITY, unknown frame types and extensions are ignored.
	}
	return nil
}

// queueResponse queues a PING or SETTINGS acknowledgement. When too many
// are queued (a peer that floods and does not read), it waits until the
// writer catches up, which stops reading from the peer.
func (cc *conn) queueResponse(it ctrlItem) error {
	for {
		cc.mu.Lock()
		if cc.err != nil {
			err := cc.err
			cc.mu.Unlock()
			return err
		}
		if cc.responses < maxQueuedControlResponses {
			cc.responses++
			cc.queueLocked(it)
			cc.mu.Unlock()
			return nil
		}
		cc.mu.Unlock()
		select {
		case <-cc.ctrlOut:
		case <-cc.done:
			return ErrClosed
		}
	}
}

// stream returns the open stream id, or nil. It reports an error for an
// ID this side never opened (or a server-initiated one).
func (cc *conn) stream(id uint32) (*Stream, error) {
	cc.mu.Lock()
	defer cc.mu.Unlock()
	if s := cc.streams[id]; s != nil {
		return s, nil
	}
	if id%2 == 0 || id >= cc.nextID {
		return nil, &ConnError{Code: http2.ErrCodeProtocol, Reason: fmt.Sprintf("frame on stream %d, which was never opened", id)}
	}
	return nil, nil // a closed stream
}

func (cc *conn) onData(f *http2.DataFrame) error {
	n := int32(f.Header().Length)
	if n > cc.recvWindow {
		return &ConnError{Code: http2.ErrCodeFlowControl, Reason: "peer exceeded the connection's flow-control window"}
	}
	cc.recvWindow -= n
	cc.giveBackConn(n)
	s, err := cc.stream(f.StreamID)
	if err != nil || s == nil {
		return err
	}
	if !s.gotResponse() {
		cc.streamError(s.id, http2.ErrCodeProtocol, errors.New("DATA before the response headers"))
		return nil
	}
	inc, err := s.onData(f.Data(), n)
	if err != nil {
		cc.streamError(s.id, http2.ErrCodeFlowControl, err)
		return nil
	}
	if inc > 0 {
		cc.queueWindowUpdate(s, uint32(inc))
	}
	if f.StreamEnded() {
		// As for trailers (onHeaders): the stream leaves the connection
		// before its reader can see the end.
		cc.endedRemotely(s)
		s.onEnd()
		return nil
	}
	s.wake()
	return nil
}

// giveBackConn returns n bytes of connection window to the peer once a
// quarter of the window is owed. The connection window is given back as
// frames arrive; the streams' windows bound what is buffered.
func (cc *conn) giveBackConn(n int32) {
	cc.recvUnacked += n
	if cc.recvUnacked < cc.t.cfg.connWindow()/4 {
		return
	}
	inc := cc.recvUnacked
	cc.recvUnacked = 0
	cc.recvWindow += inc
	cc.mu.Lock()
	cc.queueLocked(ctrlItem{kind: ctrlWindowUpdate, id: 0, n: uint32(inc)})
	cc.mu.Unlock()
}

func (cc *conn) onHeaders(f *http2.MetaHeadersFrame) error {
	s, err := cc.stream(f.StreamID)
	if err != nil || s == nil {
		return err
	}
	if f.Truncated {
		cc.streamError(s.id, http2.ErrCodeProtocol, errors.New("response header list larger than the limit"))
		return nil
	}
	if s.gotResponse() {
		// Trailers: they must end the stream.
		if !f.StreamEnded() {
			cc.streamError(s.id, http2.ErrCodeProtocol, errors.New("HEADERS after the response headers without END_STREAM"))
			return nil
		}
		// The stream leaves the connection before its reader sees the
		// end: a caller that then closes idle connections finds it idle.
		cc.endedRemotely(s)
		s.onEnd()
		return nil
	}
	code, header, err := responseOf(f)
	if err != nil {
		cc.streamError(s.id, http2.ErrCodeProtocol, err)
		return nil
	}
	if code < 200 {
		if code == 101 || f.StreamEnded() {
			cc.streamError(s.id, http2.ErrCodeProtocol, fmt.Errorf("unexpected informational response %d", code))
		}
		return nil // 1xx: wait for the final response
	}
	cc.mu.Lock()
	first := !cc.processed
	cc.processed = true
	cc.mu.Unlock()
	if first {
		cc.p.succeeded()
	}
	s.onResponse(code, header)
	if f.StreamEnded() {
		cc.endedRemotely(s)
		s.onEnd()
	}
	return nil
}

// endedRemotely records END_STREAM from the peer. A request body not sent
// in full by then is abandoned: the stream is reset with CANCEL, as the
// response is complete.
func (cc *conn) endedRemotely(s *Stream) {
	cc.mu.Lock()
	s.remoteDone = true
	if !s.localDone {
		s.localDone = true
		cc.queueLocked(ctrlItem{kind: ctrlReset, s: s, id: s.id, n: uint32(http2.ErrCodeCancel)})
	}
	cc.removeLocked(s)
	cc.unlock()
	cc.p.changed()
}

// streamError resets stream id after a violation of the peer.
func (cc *conn) streamError(id uint32, code http2.ErrCode, cause error) {
	cc.mu.Lock()
	s := cc.streams[id]
	if s == nil {
		cc.mu.Unlock()
		return
	}
	cc.queueLocked(ctrlItem{kind: ctrlReset, s: s, id: id, n: uint32(code)})
	cc.endLocked(s)
	cc.unlock()
	s.fail(&StreamError{StreamID: id, Code: code, Cause: cause})
	cc.p.changed()
}

func (cc *conn) onReset(f *http2.RSTStreamFrame) error {
	cc.mu.Lock()
	s := cc.streams[f.StreamID]
	if s == nil {
		idle := f.StreamID%2 == 0 || f.StreamID >= cc.nextID
		cc.mu.Unlock()
		if idle {
			return &ConnError{Code: http2.ErrCodeProtocol, Reason: fmt.Sprintf("RST_STREAM on stream %d, which was never opened", f.StreamID)}
		}
		return nil
	}
	cc.endLocked(s)
	cc.unlock()
	s.fail(&StreamError{StreamID: f.StreamID, Code: f.ErrCode, Remote: true})
	cc.p.changed()
	return nil
}

// onGoAway stops new streams on the conn and refuses the streams the
// server says it did not process; the others may finish.
func (cc *conn) onGoAway(f *http2.GoAwayFrame) {
	cc.mu.Lock()
	cc.goingAway = true
	cc.goAwayLastID = f.LastStreamID
	reason := f.DebugData()
	if len(reason) > maxGoAwayReason {
		reason = reason[:maxGoAwayReason]
	}
	cc.goAwayErr = &ConnError{Code: f.ErrCode, Remote: true, Reason: strings.ToValidUTF8(string(reason), "\uFFFD")}
	unprocessed := !cc.processed && f.LastStreamID == 0
	var refused []*Stream
	for id, s := range cc.streams {
		if id > f.LastStreamID {
			refused = append(refused, s)
		}
	}
	for _, s := range refused {
		cc.endLocked(s)
	}
	cc.slotFreedLocked()
	cc.unlock()
	for _, s := range refused {
		s.fail(&refusedError{reason: fmt.Sprintf("GOAWAY (%v) before the server processed the stream", f.ErrCode)})
	}
	if unprocessed {
		cc.p.refused()
	}
	cc.p.changed()
}

func (cc *conn) onWindowUpdate(f *http2.WindowUpdateFrame) error {
	cc.mu.Lock()
	if f.StreamID == 0 {
		w := int64(cc.sendWindow) + int64(f.Increment)
		if w > math.MaxInt32 {
			cc.mu.Unlock()
			return &ConnError{Code: http2.ErrCodeFlowControl, Reason: "WINDOW_UPDATE overflows the connection window"}
		}
		cc.sendWindow = int32(w)
		if cc.connBlocked && cc.sendWindow > 0 {
			cc.connBlocked = false
			cc.wakeWriter()
		}
		cc.mu.Unlock()
		return nil
	}
	s := cc.streams[f.StreamID]
	if s == nil {
		idle := f.StreamID%2 == 0 || f.StreamID >= cc.nextID // nextID is cc.mu's
		cc.mu.Unlock()
		if idle {
			return &ConnError{Code: http2.ErrCodeProtocol, Reason: "WINDOW_UPDATE on a stream never opened"}
		}
		return nil
	}
	w := int64(s.sendWindow) + int64(f.Increment)
	if w > math.MaxInt32 {
		cc.mu.Unlock()
		cc.streamError(f.StreamID, http2.ErrCodeFlowControl, errors.New("WINDOW_UPDATE overflows the stream window"))
		return nil
	}
	s.sendWindow = int32(w)
	if s.flowBlocked && s.sendWindow > 0 {
		s.flowBlocked = false
		cc.markReadyLocked(s)
	}
	cc.mu.Unlock()
	return nil
}
