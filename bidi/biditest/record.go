package biditest

import (
	"encoding/json"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/sagemaker-bidi/sagemaker-bidi/bidi"
	"github.com/sagemaker-bidi/sagemaker-bidi/bidi/cassette"
	"github.com/sagemaker-bidi/sagemaker-bidi/eventstream"
	"github.com/sagemaker-bidi/sagemaker-bidi/internal/wire"
)

// streamRecorder records one stream to the sink [Server.Record] returned
// for it. Its methods are called from the handler's goroutines (under
// st.wmu or st.rmu); mu orders the events.
type streamRecorder struct {
	mu        sync.Mutex // guards the fields below and the sink's events
	sink      cassette.Sink
	start     time.Time
	failed    bool // an HTTP error answered the request
	exception bool // an exception or error message was sent
	closeCode int  // the close code of the last ModelStreamError sent
	ended     bool
}

// startRecording asks Server.Record for a sink and records the request.
func (st *Stream) startRecording() {
	if st.s.Record == nil {
		return
	}
	start := time.Now() // before the hook: creating a file takes time
	sink := st.s.Record(st)
	if sink == nil {
		return
	}
	st.rec = &streamRecorder{sink: sink, start: start}
	st.rec.emit(&cassette.Event{Kind: cassette.KindOpen, Endpoint: st.EndpointName, TargetVariant: st.TargetVariant,
		InvocationPath: st.ModelInvocationPath, QueryString: st.ModelQueryString})
}

// emit stamps e and writes it, unless the stream's end was recorded.
func (r *streamRecorder) emit(e *cassette.Event) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.emitLocked(e)
}

func (r *streamRecorder) emitLocked(e *cassette.Event) {
	if r.ended {
		return
	}
	e.T = time.Since(r.start)
	r.sink.Write(e)
}

// recordResponse records the response head. st.wmu is held.
func (st *Stream) recordResponse(status int, errorType string, body []byte) {
	if st.rec == nil {
		return
	}
	e := &cassette.Event{Kind: cassette.KindResponse, Status: status, RequestID: st.RequestID}
	if status == http.StatusOK {
		e.Variant = st.invokedVariant()
	} else {
		e.ErrorType, e.Body = errorType, string(body)
		st.rec.mu.Lock()
		st.rec.failed = true
		st.rec.mu.Unlock()
	}
	st.rec.emit(e)
}

// recordSent records a message written to the client: a PayloadPart, an
// exception or an error message (other messages are not recorded).
// st.wmu is held.
func (st *Stream) recordSent(m *eventstream.Message) {
	if st.rec == nil {
		return
	}
	var p wire.Part
	switch wire.ClassifyPart(m, &p) {
	case wire.KindPayloadPart:
		e := &cassette.Event{Kind: cassette.KindRecv, Complete: p.Complete(), Size: len(p.Bytes), Padding: -1, Data: p.Bytes}
		if p.UTF8() {
			e.Type = bidi.DataTypeUTF8
		}
		if p.Padding != nil {
			e.Padding = len(p.Padding)
		}
		st.rec.emit(e)
	case wire.KindException:
		typ := wire.String(m, wire.ExceptionTypeHeader)
		e := &cassette.Event{Kind: cassette.KindException, ExceptionType: typ, Body: string(m.Payload)}
		st.rec.mu.Lock()
		st.rec.exception = true
		if typ == "ModelStreamError" {
			st.rec.closeCode = closeCodeOf(m.Payload)
		}
		st.rec.emitLocked(e)
		st.rec.mu.Unlock()
	case wire.KindError:
		e := &cassette.Event{Kind: cassette.KindError, Code: wire.String(m, wire.ErrorCodeHeader), Message: wire.String(m, wire.ErrorMessageHeader)}
		st.rec.mu.Lock()
		st.rec.exception = true
		st.rec.emitLocked(e)
		st.rec.mu.Unlock()
	}
}

// closeCodeOf returns the WebSocket close code a ModelStreamError's
// ErrorCode carries, or 0.
func closeCodeOf(body []byte) int {
	var b streamErrorBody
	if json.Unmarshal(body, &b) != nil {
		return 0
	}
	if n, err := strconv.Atoi(b.ErrorCode); err == nil && n >= 1000 && n <= 4999 {
		return n
	}
	return 0
}

// recordReceived records a request part as the handler receives it.
func (st *Stream) recordReceived(p *ReceivedPart) {
	if st.rec == nil {
		return
	}
	// A part without P carries no padding: 0, not unknown.
	st.rec.emit(&cassette.Event{Kind: cassette.KindSend, Type: p.Type, Complete: p.Complete, Size: len(p.Data), Padding: max(p.Padding, 0), Data: p.Data})
}

// recordSendEnd records the client's end frame.
func (st *Stream) recordSendEnd() {
	if st.rec == nil {
		return
	}
	st.rec.emit(&cassette.Event{Kind: cassette.KindSendEnd})
}

// recordEnd records the stream's end once the handler is over (aborted:
// it panicked or called Reset) and closes the sink.
func (st *Stream) recordEnd(aborted bool) {
	r := st.rec
	if r == nil {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	e := &cassette.Event{Kind: cassette.KindEnd, Reason: cassette.EndCompleted}
	switch {
	case r.failed:
		e.Reason = cassette.EndHTTPError
	case st.expired.Load():
		body, _ := json.Marshal(streamErrorBody{Message: maxStreamAgeMessage})
		r.emitLocked(&cassette.Event{Kind: cassette.KindException, ExceptionType: "InternalStreamFailure", Body: string(body)})
		e.Reason = cassette.EndException
	case aborted || st.broken != nil:
		e.Reason, e.Err = cassette.EndReset, "stream reset by the server"
	case r.exception:
		e.Reason, e.CloseCode = cassette.EndException, r.closeCode
	case st.r.Context().Err() != nil:
		e.Reason, e.Err = cassette.EndReset, "client went away"
	}
	r.emitLocked(e)
	r.ended = true
	r.sink.Close()
}
