package bridge

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sagemaker-bidi/sagemaker-bidi/bidi"
	"github.com/sagemaker-bidi/sagemaker-bidi/bidi/biditest"
	"github.com/sagemaker-bidi/sagemaker-bidi/examples/gateway/internal/wsframe"
)

// A session joins one client stream to one container WebSocket. Four
// goroutines serve it:
//
//   - the handler goroutine reads the container's frames (readLoop),
//     delivers each data frame to the client as one part, then ends the
//     session (finish);
//   - upstream reads the client's parts and hands each to the writer as
//     one frame;
//   - the writer is the only goroutine that writes to the container:
//     control frames (pongs, pings) go before waiting data frames, and
//     the close frame is the last frame it writes;
//   - the pinger pings the container and counts the intervals without a
//     pong.
//
// Every way a session ends goes through end, which keeps the first
// outcome and queues the close frame. A timer drops the connection if the
// close handshake has not finished after CloseTimeout, so nothing waits
// forever on a container that stopped answering. finish waits for the
// writer and the pinger. upstream may still be blocked reading the client
// when the handler returns; that read fails as soon as net/http closes
// the request body, and [Handler.Wait] waits for it.
type session struct {
	h    *Handler
	st   *biditest.Stream
	conn *wsframe.Conn
	log  *slog.Logger

	data      chan dataFrame // upstream → writer, unbuffered
	ctl       chan ctlFrame  // pings and pongs → writer
	closeReq  chan []byte    // the close frame's payload → writer; written once
	closeDone chan struct{}  // closed by the writer once the close frame is out (or failed)
	stop      chan struct{}  // closed by finish: the writer, pinger and upstream give up

	pongs      atomic.Int64 // pongs received since the pinger last looked
	delivering atomic.Bool  // the reader is waiting for the client to take a part
	forwarded  atomic.Bool  // a part went to (or waited for) the client since the pinger last looked
	clientGone atomic.Bool  // nothing more can be sent to the client

	mu         sync.Mutex
	ending     *outcome    // the first outcome; nil while the session runs
	closeTimer *time.Timer // drops the connection if the close handshake stalls

	writers sync.WaitGroup // writer and pinger

	// The container's close frame, once read; owned by the handler
	// goroutine (readLoop, then ServeBidi).
	peerClosed bool
	peerCode   int
	peerReason string

	// Counters for the end-of-session log line.
	partsUp, bytesUp, partsDown, bytesDown atomic.Int64
}

// dataFrame is one client part on its way to the container.
type dataFrame struct {
	fin     bool
	op      wsframe.Opcode
	payload []byte
	done    chan error // receives the write's result
}

// ctlFrame is a ping or a pong on its way to the container.
type ctlFrame struct {
	op      wsframe.Opcode
	payload []byte
}

// errClosing is returned to upstream once the close frame is written.
var errClosing = errors.New("bridge: closing the WebSocket")

func newSession(h *Handler, st *biditest.Stream, conn *wsframe.Conn, log *slog.Logger) *session {
	return &session{
		h:         h,
		st:        st,
		conn:      conn,
		log:       log,
		data:      make(chan dataFrame),
		ctl:       make(chan ctlFrame, 8),
		closeReq:  make(chan []byte, 1),
		closeDone: make(chan struct{}),
		stop:      make(chan struct{}),
	}
}

// run serves the session until the WebSocket is closed and returns how
// it ended. The caller tells the client.
func (s *session) run() outcome {
	s.writers.Add(1)
	go s.writeLoop()
	if s.h.opts.PingInterval > 0 {
		s.writers.Add(1)
		go s.pingLoop()
	}
	s.h.wg.Add(1)
	go s.upstream()
	stopWatch := context.AfterFunc(s.st.Context(), func() {
		s.clientLeft(context.Cause(s.st.Context()))
	})
	o := s.readLoop()
	stopWatch()
	s.finish()
	return o
}

// end records o as the outcome unless the session already has one, and
// returns the outcome in force. With a non-nil closePayload (empty is a
// close frame without a code), the first call queues a close frame and
// starts the close timer.
func (s *session) end(o outcome, closePayload []byte) outcome {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ending != nil {
		return *s.ending
	}
	s.ending = &o
	if closePayload != nil {
		s.closeReq <- closePayload // the only send: never blocks
		s.closeTimer = time.AfterFunc(s.h.opts.CloseTimeout, func() { s.conn.Close() })
	}
	return o
}

// ended returns the outcome in force, if any.
func (s *session) ended() (outcome, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ending == nil {
		return outcome{}, false
	}
	return *s.ending, true
}

// clientLeft ends the session because the client can no longer be
// reached: the WebSocket is closed with 1001. The reason tells the
// container, and the log, why: the client went away, the stream reached
// the connection cap, or the gateway closed.
func (s *session) clientLeft(err error) {
	if err == nil {
		err = context.Canceled
	}
	s.clientGone.Store(true)
	switch {
	case errors.Is(err, biditest.ErrMaxStreamAge):
		s.end(streamCapReached(s.h.maxStreamAge), wsframe.ClosePayload(wsframe.CloseGoingAway, "connection cap reached"))
	case errors.Is(err, biditest.ErrServerClosed):
		s.end(gatewayClosed(), wsframe.ClosePayload(wsframe.CloseGoingAway, "gateway shutting down"))
	default:
		s.end(clientLeft(err), wsframe.ClosePayload(wsframe.CloseGoingAway, "client went away"))
	}
}

// finish waits, for at most CloseTimeout, for a queued close frame to be
// written, then stops the writer and the pinger, drops the connection and
// waits for them.
func (s *session) finish() {
	s.mu.Lock()
	closing, timer := s.closeTimer != nil, s.closeTimer
	s.mu.Unlock()
	if closing {
		t := time.NewTimer(s.h.opts.CloseTimeout)
		select {
		case <-s.closeDone:
		case <-t.C:
		}
		t.Stop()
		timer.Stop()
	}
	close(s.stop)
	s.conn.Close()
	s.writers.Wait()
}

// readLoop reads the container's frames until the connection ends and
// returns the outcome. It runs in the handler goroutine.
func (s *session) readLoop() outcome {
	var msgType bidi.DataType // type of the fragmented message being read
	for {
		f, err := s.conn.ReadFrame()
		if err != nil {
			return s.readFailed(err)
		}
		switch f.Opcode {
		case wsframe.OpPing:
			s.sendControl(wsframe.OpPong, f.Payload)
			continue
		case wsframe.OpPong:
			s.pongs.Add(1)
			continue
		case wsframe.OpClose:
			return s.closeReceived(f.Payload)
		case wsframe.OpText:
			msgType = bidi.DataTypeUTF8
		case wsframe.OpBinary:
			msgType = bidi.DataTypeBinary
		}
		s.deliver(bidi.Part{Data: f.Payload, Type: msgType, Complete: f.Fin})
	}
}

// deliver sends one container frame to the client as one part. Once the
// client is gone, frames are read and dropped until the close handshake
// ends.
func (s *session) deliver(p bidi.Part) {
	if s.clientGone.Load() {
		return
	}
	s.forwarded.Store(true)
	s.delivering.Store(true)
	err := s.st.SendPart(p)
	s.delivering.Store(false)
	if err != nil {
		s.clientLeft(err)
		return
	}
	s.partsDown.Add(1)
	s.bytesDown.Add(int64(len(p.Data)))
}

// closeReceived handles the container's close frame: the answer to the
// gateway's own close frame, or the container closing first, which the
// gateway answers by echoing the code.
func (s *session) closeReceived(payload []byte) outcome {
	code, reason, err := wsframe.ParseClose(payload)
	if err != nil {
		var pe *wsframe.ProtocolError
		errors.As(err, &pe)
		return s.end(protocolViolation(pe), wsframe.ClosePayload(wsframe.CloseProtocolError, ""))
	}
	s.peerClosed, s.peerCode, s.peerReason = true, code, reason
	echo := []byte{} // not nil: a close frame without a code is answered likewise
	if code != wsframe.CloseNoStatus {
		echo = []byte{payload[0], payload[1]}
	}
	return s.end(containerClosed(code, reason), echo)
}

// closeSeen returns the WebSocket close the session ended with, for its
// recording: the container's close frame (its answer to the gateway's, or
// its own), else the code of o, which the gateway closed or failed with.
// Call it after run.
func (s *session) closeSeen(o outcome) (code int, reason string) {
	if s.peerClosed {
		return s.peerCode, s.peerReason
	}
	return o.code, ""
}

// readFailed turns a read error into the outcome: the one already in
// force if the gateway was closing (the connection was dropped on
// purpose, or the container dropped it instead of answering), else a
// protocol error, an oversize frame or a dropped connection.
func (s *session) readFailed(err error) outcome {
	if o, ok := s.ended(); ok {
		return o
	}
	var (
		pe *wsframe.ProtocolError
		fe *wsframe.FrameTooLargeError
	)
	switch {
	case errors.As(err, &pe):
		return s.end(protocolViolation(pe), wsframe.ClosePayload(wsframe.CloseProtocolError, pe.Reason))
	case errors.As(err, &fe):
		return s.end(frameTooLarge(fe), wsframe.ClosePayload(wsframe.CloseMessageTooBig, "frame too large"))
	}
	return s.end(containerDropped(err), nil)
}

// sendControl queues a ping or pong for the writer, dropping it if the
// writer is that far behind (a later ping or pong will do).
func (s *session) sendControl(op wsframe.Opcode, payload []byte) {
	select {
	case s.ctl <- ctlFrame{op: op, payload: append([]byte(nil), payload...)}:
	default:
	}
}
