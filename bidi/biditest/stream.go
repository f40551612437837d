package biditest

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sagemaker-bidi/sagemaker-bidi/bidi"
	"github.com/sagemaker-bidi/sagemaker-bidi/eventstream"
	"github.com/sagemaker-bidi/sagemaker-bidi/internal/wire"
)

// A Stream is one bidirectional stream seen from the server: the request
// that opened it, the events it carries and the response the handler
// writes.
//
// Concurrency: a handler may send from one goroutine and receive from
// another at the same time (one sender and one receiver at a time; the
// Send and Write methods are serialised, so several senders are safe but
// their order is theirs to arrange). The Accept, Fail, Send, Write and
// Recv methods may be called only while the handler runs: once it returns
// they fail with [ErrStreamDone]. A handler must therefore wait for the
// goroutines it starts; if one is still inside a Send when the handler
// returns, the stream is reset. The fields and [Stream.Received] stay
// valid for assertions after the stream ended.
//
// Flow control: the request body is read only by the Recv methods. A
// handler that does not receive leaves the client's events in HTTP/2 flow
// control, so a client that keeps sending blocks once the window
// ([Server.MaxReceiveBufferPerStream]) is full. Likewise a Send blocks
// while the client does not read; [Stream.Context] is done when the client
// goes away or the server closes, which unblocks it.
type Stream struct {
	// EndpointName is the endpoint named in the request path.
	EndpointName string
	// TargetVariant, ModelInvocationPath and ModelQueryString hold the
	// optional SageMaker headers, or "" when absent.
	TargetVariant, ModelInvocationPath, ModelQueryString string
	// Header holds the request headers (a copy), Authorization included.
	Header http.Header
	// RemoteAddr is the client's address: streams that share a connection
	// have the same RemoteAddr.
	RemoteAddr string
	// RequestID is the x-amzn-RequestId of the response.
	RequestID string

	s        *Server
	r        *http.Request
	w        http.ResponseWriter
	rc       *http.ResponseController
	verifier *eventstream.Verifier // nil with SkipVerify
	ctx      context.Context       // r's context, cancelled when the handler returns or at MaxStreamAge
	cancel   context.CancelCauseFunc
	expired  atomic.Bool // the stream reached MaxStreamAge

	wmu      sync.Mutex // serialises writes to w
	accepted bool
	failed   bool
	done     bool       // the handler returned or reset: no more writes
	broken   *Violation // mid-stream violation: reset when the handler returns
	variant  string
	wbuf     []byte
	hdrs     eventstream.Headers
	part     wire.Part

	rmu   sync.Mutex // one receiver at a time
	dec   *eventstream.Decoder
	inner eventstream.Message
	rerr  error // sticky receive error

	// With Server.WholeMessages: the parts of the message being held
	// back (owned copies) and their total size, and the parts of the
	// last complete message not yet returned.
	held    []ReceivedPart
	heldLen int
	ready   []ReceivedPart

	sawEnvelope bool // a signed envelope was received (for SkipVerify)

	recMu         sync.Mutex
	received      []ReceivedPart
	recordedBytes int // what received costs, counted against Server.MaxRecordedBytes

	// Lock order: recMu before Server.mu (record reserves the bytes of a
	// part from the server's budget while it holds recMu).

	rec *streamRecorder // with Server.Record; set before the handler runs (record.go)
}

// Context returns the context of the request. It is done when the client
// resets the stream or its connection closes, when the handler returns,
// when the stream reaches [Server.MaxStreamAge] (cause [ErrMaxStreamAge])
// and when the server closes (cause [ErrServerClosed]).
func (st *Stream) Context() context.Context { return st.ctx }

// SetInvokedVariant sets the X-Amzn-Invoked-Production-Variant header of
// the 200 response, in place of the TargetVariant of the request or
// [Server.ProductionVariant]. It has no effect once the response is
// accepted.
func (st *Stream) SetInvokedVariant(name string) {
	st.wmu.Lock()
	st.variant = name
	st.wmu.Unlock()
}

// Accept writes the 200 response headers (Content-Type
// application/vnd.amazon.eventstream, x-amzn-RequestId and
// X-Amzn-Invoked-Production-Variant, which every 200 carries) and
// flushes them. The first Send or Write method accepts
// implicitly, and so does the handler's return when it has neither
// accepted nor failed. Accept is a no-op on an accepted stream.
func (st *Stream) Accept() error {
	st.wmu.Lock()
	defer st.wmu.Unlock()
	return st.acceptLocked()
}

func (st *Stream) acceptLocked() error {
	switch {
	case st.done || st.failed:
		return st.doneErr()
	case st.broken != nil:
		return st.broken
	case st.accepted:
		return nil
	}
	h := st.w.Header()
	h.Set("Content-Type", eventStreamContentType)
	h.Set(requestIDHeader, st.RequestID)
	h.Set(invokedVariantHeader, st.invokedVariant())
	st.s.setDate(h)
	st.w.WriteHeader(http.StatusOK)
	st.accepted = true
	st.recordResponse(http.StatusOK, "", nil)
	if err := st.rc.Flush(); err != nil {
		return fmt.Errorf("biditest: flushing response headers: %w", err)
	}
	return nil
}

// Fail answers the request with an HTTP error instead of a stream: status,
// an X-Amzn-ErrorType header holding errorType, Content-Type
// application/json, x-amzn-RequestId, and a JSON body of fields, for
// example
//
//	st.Fail(424, "ModelError", map[string]any{
//		"Message": "Received server error (500) from primary",
//		"OriginalStatusCode": 500, "OriginalMessage": "boom",
//		"LogStreamArn": "arn:aws:logs:…", "ErrorCode": "ModelError",
//	})
//
// The response is flushed at once, while the client may still be sending.
// Fail is possible only before the stream is accepted (an error
// otherwise); the handler should return afterwards.
func (st *Stream) Fail(status int, errorType string, fields map[string]any) error {
	if status < 100 || status > 999 {
		return fmt.Errorf("biditest: invalid HTTP status %d", status)
	}
	body, err := json.Marshal(fields)
	if err != nil {
		return fmt.Errorf("biditest: encoding error fields: %w", err)
	}
	if fields == nil {
		body = []byte("{}")
	}
	st.wmu.Lock()
	defer st.wmu.Unlock()
	switch {
	case st.accepted:
		return errAccepted
	case st.done || st.failed:
		return st.doneErr()
	}
	st.failed = true
	h := st.w.Header()
	h.Set("Content-Type", "application/json")
	h.Set(errorTypeHeader, errorType)
	h.Set(requestIDHeader, st.RequestID)
	st.s.setDate(h)
	st.w.WriteHeader(status)
	st.recordResponse(status, errorType, body)
	return st.writeLocked(body)
}

// SendPart sends one PayloadPart event with DataType and CompletionState
// headers ("UTF8"/"BINARY", "PARTIAL"/"COMPLETE") and p.Data as payload.
// It returns once the event is handed to HTTP/2 and flushed; it blocks
// while the client's flow-control window is full.
func (st *Stream) SendPart(p bidi.Part) error {
	st.wmu.Lock()
	defer st.wmu.Unlock()
	if err := st.bufferPartLocked(p); err != nil {
		return err
	}
	return st.flushLocked()
}

// bufferPartLocked writes p's PayloadPart event to the response without
// flushing it. st.wmu is held.
func (st *Stream) bufferPartLocked(p bidi.Part) error {
	st.part = wire.Part{Bytes: p.Data, DataType: wire.DataTypeBinary, CompletionState: wire.CompletionComplete}
	if p.Type == bidi.DataTypeUTF8 {
		st.part.DataType = wire.DataTypeUTF8
	}
	if !p.Complete {
		st.part.CompletionState = wire.CompletionPartial
	}
	st.hdrs = wire.AppendPartHeaders(st.hdrs[:0], &st.part)
	return st.bufferLocked(&eventstream.Message{Headers: st.hdrs, Payload: p.Data})
}

// Send sends m as one COMPLETE part.
func (st *Stream) Send(m bidi.Message) error {
	return st.SendPart(bidi.Part{Data: m.Data, Type: m.Type, Complete: true})
}

// streamErrorBody is the JSON of the modeled mid-stream errors, in the
// member order of the model.
type streamErrorBody struct {
	Message   string `json:"Message"`
	ErrorCode string `json:"ErrorCode,omitempty"`
}

// sendMessageTooLarge sends the ModelStreamError a client gets when a
// model container behind SageMaker closes its WebSocket because a request
// message exceeded its read limit of limit bytes (see Echo).
func (st *Stream) sendMessageTooLarge(limit int) error {
	reason := fmt.Sprintf("message too big: over %d bytes", limit)
	body, _ := json.Marshal(streamErrorBody{ErrorCode: "1009",
		Message: fmt.Sprintf("Model container closed the WebSocket connection (code 1009, reason %q)", reason)})
	return st.SendException("ModelStreamError", body)
}

// SendException sends an exception message (:message-type exception) of
// the given :exception-type with jsonBody as payload and :content-type
// application/json, as the service does when the stream fails mid-way.
// The modeled ones are
//
//	st.SendException("ModelStreamError", []byte(`{"Message":"boom","ErrorCode":"1011"}`))
//	st.SendException("InternalStreamFailure", []byte(`{"Message":"the platform failed"}`))
//
// (the model container failed, its WebSocket close code in ErrorCode;
// the service failed), which a client returns as a *bidi.ModelStreamError
// or *bidi.InternalStreamFailure. It sends unmodeled exception types, and
// bodies that are not JSON, as readily. The service ends the stream after
// an exception: the handler should return.
func (st *Stream) SendException(exceptionType string, jsonBody []byte) error {
	st.wmu.Lock()
	defer st.wmu.Unlock()
	return st.sendLocked(&eventstream.Message{Headers: wire.ExceptionHeaders(exceptionType), Payload: jsonBody})
}

// SendError sends an unmodeled error message (:message-type error) with
// :error-code and :error-message headers (each omitted when empty).
func (st *Stream) SendError(code, message string) error {
	st.wmu.Lock()
	defer st.wmu.Unlock()
	return st.sendLocked(&eventstream.Message{Headers: wire.ErrorHeaders(code, message)})
}

// WriteRaw writes b on the response body as is and flushes it: garbage,
// truncated frames, a message split across writes, or any event-stream
// message encoded with eventstream.AppendMessage (unknown event types,
// parts without headers, malformed values). It accepts the stream first
// if needed. What it writes is not recorded ([Server.Record]).
func (st *Stream) WriteRaw(b []byte) error {
	st.wmu.Lock()
	defer st.wmu.Unlock()
	if err := st.acceptLocked(); err != nil {
		return err
	}
	return st.writeLocked(b)
}

// Reset aborts the stream with RST_STREAM (INTERNAL_ERROR) by panicking
// with http.ErrAbortHandler, which net/http recovers silently. It must be
// called from the handler goroutine and does not return; deferred calls
// run as usual. A Send blocked in another goroutine fails.
func (st *Stream) Reset() {
	st.stopWrites(true)
	panic(http.ErrAbortHandler)
}

// sendLocked writes m to the response and flushes it. st.wmu is held.
func (st *Stream) sendLocked(m *eventstream.Message) error {
	if err := st.bufferLocked(m); err != nil {
		return err
	}
	return st.flushLocked()
}

// bufferLocked accepts the stream if needed and writes m to the response
// without flushing it: net/http sends it when its buffer fills or at the
// next flush. st.wmu is held.
func (st *Stream) bufferLocked(m *eventstream.Message) error {
	if err := st.acceptLocked(); err != nil {
		return err
	}
	b, err := eventstream.AppendMessage(st.wbuf[:0], m)
	if err != nil {
		return fmt.Errorf("biditest: encoding message: %w", err)
	}
	st.wbuf = b
	st.recordSent(m) // before the client can see it and answer
	if _, err := st.w.Write(b); err != nil {
		return st.writeErr("writing response", err)
	}
	return nil
}

// writeLocked writes b to the response and flushes it. st.wmu is held.
func (st *Stream) writeLocked(b []byte) error {
	if _, err := st.w.Write(b); err != nil {
		return st.writeErr("writing response", err)
	}
	return st.flushLocked()
}

// flushLocked sends what the response holds as DATA frames. st.wmu is
// held.
func (st *Stream) flushLocked() error {
	if err := st.rc.Flush(); err != nil {
		return st.writeErr("flushing response", err)
	}
	return nil
}

// writeErr wraps a failed write's error; it matches ErrMaxStreamAge when
// the cap aborted the write.
func (st *Stream) writeErr(what string, err error) error {
	if st.expired.Load() {
		return fmt.Errorf("biditest: %s: %w: %w", what, ErrMaxStreamAge, err)
	}
	return fmt.Errorf("biditest: %s: %w", what, err)
}

// sendViolation reports v to the client mid-stream: it accepts the stream
// if needed, sends an error message with v's error type and message, and
// marks the stream broken so that it is reset when the handler returns.
func (st *Stream) sendViolation(v *Violation) {
	st.wmu.Lock()
	defer st.wmu.Unlock()
	if st.done || st.failed || st.broken != nil {
		return
	}
	if st.acceptLocked() == nil {
		b, err := eventstream.AppendMessage(st.wbuf[:0], &eventstream.Message{Headers: wire.ErrorHeaders(v.ErrorType, v.Message)})
		if err == nil {
			st.wbuf = b
			st.writeLocked(b)
		}
	}
	st.broken = v
}

// invokedVariant returns the variant the 200 response names. st.wmu is
// held.
func (st *Stream) invokedVariant() string {
	switch {
	case st.variant != "":
		return st.variant
	case st.TargetVariant != "":
		return st.TargetVariant
	case st.s.ProductionVariant != "":
		return st.s.ProductionVariant
	}
	return defaultProductionVariant
}

// doneErr is the error of a write after the response is over.
func (st *Stream) doneErr() error {
	if st.expired.Load() {
		return fmt.Errorf("%w: %w", ErrStreamDone, ErrMaxStreamAge)
	}
	return ErrStreamDone
}

// maxStreamAgeMessage is the Message of the InternalStreamFailure sent at
// MaxStreamAge.
const maxStreamAgeMessage = "The stream reached its maximum duration and was closed by the service. Open a new stream."

// expire ends the stream at MaxStreamAge, from the timer's goroutine: it
// cancels the handler's context, sends an InternalStreamFailure, stops
// later writes, and closes the request body so that a Recv returns. The
// handler's return then ends the response. Whatever the client does, the
// stream ends: a write blocked by flow control (a client that stopped
// reading) is aborted, which resets the stream, and the exception's own
// write gets expireWriteGrace before it is aborted likewise.
func (st *Stream) expire() {
	st.expired.Store(true)
	st.cancel(ErrMaxStreamAge)
	if !st.wmu.TryLock() {
		// A write is in progress, perhaps blocked by flow control.
		st.rc.SetWriteDeadline(time.Now().Add(-time.Second))
		st.wmu.Lock()
	}
	if !st.done && !st.failed && st.broken == nil {
		st.rc.SetWriteDeadline(time.Now().Add(expireWriteGrace))
		if st.acceptLocked() == nil {
			body, _ := json.Marshal(streamErrorBody{Message: maxStreamAgeMessage})
			b, err := eventstream.AppendMessage(st.wbuf[:0], &eventstream.Message{Headers: wire.ExceptionHeaders("InternalStreamFailure"), Payload: body})
			if err == nil {
				st.wbuf = b
				if st.writeLocked(b) == nil {
					st.rc.SetWriteDeadline(time.Time{})
				}
			}
		}
	}
	st.done = true
	st.wmu.Unlock()
	st.r.Body.Close()
}

// expireWriteGrace is how long the InternalStreamFailure sent at
// MaxStreamAge may wait for the client's flow-control window.
const expireWriteGrace = time.Second

// stopWrites makes later writes fail with ErrStreamDone, after waiting for
// a write in progress. With abort, it first resets the stream when a write
// is in progress, so that a write blocked by flow control returns.
func (st *Stream) stopWrites(abort bool) {
	if !st.wmu.TryLock() {
		if abort {
			st.rc.SetWriteDeadline(time.Now().Add(-time.Second))
		}
		st.wmu.Lock()
	}
	st.done = true
	st.wmu.Unlock()
}

// finish ends the response after the handler returned: it accepts a
// stream that was neither accepted nor failed and lets net/http end it
// cleanly, or resets a stream with a violation or with a Send still
// running in another goroutine.
func (st *Stream) finish() {
	if !st.wmu.TryLock() {
		st.stopWrites(true)
		panic(http.ErrAbortHandler)
	}
	broken := st.broken != nil
	if !broken && !st.accepted && !st.failed {
		st.acceptLocked()
	}
	st.done = true
	st.wmu.Unlock()
	if broken {
		panic(http.ErrAbortHandler)
	}
}
