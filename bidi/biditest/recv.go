package biditest

import (
	"errors"
	"fmt"
	"io"
	"time"
	"unsafe"

	"github.com/sagemaker-bidi/sagemaker-bidi/bidi"
	"github.com/sagemaker-bidi/sagemaker-bidi/eventstream"
	"github.com/sagemaker-bidi/sagemaker-bidi/internal/wire"
)

// ReceivedPart is one request PayloadPart as the server received it.
type ReceivedPart struct {
	// Part holds the payload (an owned copy), its DataType (BINARY when
	// the header is absent) and whether it is COMPLETE (true when the
	// header is absent).
	bidi.Part
	// DataTypeSet and CompletionStateSet report whether the headers were
	// present.
	DataTypeSet, CompletionStateSet bool
	// Padding is the length of the P header value, or -1 when absent.
	Padding int
	// EnvelopeLen is the size of the signed envelope on the wire, in bytes.
	EnvelopeLen int
	// Date is the envelope's :date (zero for an unsigned event accepted
	// with SkipVerify).
	Date time.Time
}

// RecvPart returns the next request PayloadPart, after checking its
// envelope's signature. It returns io.EOF after the client's verified end
// frame once the request body has ended there (END_STREAM; anything after
// the end frame is a violation, so RecvPart waits for the body to end),
// a [*Violation] when the request breaks the protocol (the
// violation is recorded, sent to the client as an error message, and the
// stream is reset when the handler returns), and another error when the
// client goes away. Errors are sticky.
func (st *Stream) RecvPart() (ReceivedPart, error) {
	st.rmu.Lock()
	defer st.rmu.Unlock()
	p, err := st.nextPart()
	if err != nil {
		return ReceivedPart{}, err
	}
	p.Data = append([]byte(nil), p.Data...)
	return p, nil
}

// Recv returns the next message: the payloads of PARTIAL parts up to and
// including the next COMPLETE one, with the DataType of the first part. It
// returns io.EOF after the end frame, an error wrapping
// io.ErrUnexpectedEOF when the request ends inside a message, an error
// wrapping a *bidi.MessageTooLargeError past [Server.MaxRecvMessageSize], and the
// errors of RecvPart.
func (st *Stream) Recv() (bidi.Message, error) {
	st.rmu.Lock()
	defer st.rmu.Unlock()
	limit := st.s.maxRecvMessageSize()
	var msg bidi.Message
	started := false
	for {
		p, err := st.nextPart()
		if err != nil {
			if err == io.EOF && started {
				err = fmt.Errorf("biditest: request ended inside a message (%d bytes received): %w", len(msg.Data), io.ErrUnexpectedEOF)
			}
			return bidi.Message{}, err
		}
		if !started {
			msg.Type, started = p.Type, true
		}
		if len(msg.Data)+len(p.Data) > limit {
			st.rerr = fmt.Errorf("biditest: %w", &bidi.MessageTooLargeError{Limit: int64(limit)})
			return bidi.Message{}, st.rerr
		}
		msg.Data = append(msg.Data, p.Data...)
		if p.Complete {
			if msg.Data == nil {
				msg.Data = []byte{}
			}
			return msg, nil
		}
	}
}

// maxRecvMessageSize returns MaxRecvMessageSize or its default.
func (s *Server) maxRecvMessageSize() int {
	if s.MaxRecvMessageSize <= 0 {
		return defaultMaxRecvMessageSize
	}
	return s.MaxRecvMessageSize
}

// Received returns copies of the parts received so far, in order (at most
// [Server.MaxRecorded] of them).
func (st *Stream) Received() []ReceivedPart {
	st.recMu.Lock()
	defer st.recMu.Unlock()
	out := make([]ReceivedPart, len(st.received))
	for i, p := range st.received {
		p.Data = append([]byte(nil), p.Data...)
		out[i] = p
	}
	return out
}

// nextPart returns the next part, whose Data aliases the decoder's buffer
// until the next call. st.rmu is held.
func (st *Stream) nextPart() (ReceivedPart, error) {
	if st.rerr != nil {
		return ReceivedPart{}, st.rerr
	}
	if st.s.WholeMessages {
		return st.nextWholePart()
	}
	p, err := st.readPart()
	if err != nil {
		st.rerr = err
		return ReceivedPart{}, err
	}
	st.record(p)
	return p, nil
}

// nextWholePart is nextPart with Server.WholeMessages: it holds the parts
// of a message back until its COMPLETE part arrived, then returns them one
// by one. The parts of a message the request never completes are dropped.
func (st *Stream) nextWholePart() (ReceivedPart, error) {
	for len(st.ready) == 0 {
		p, err := st.readPart()
		if err != nil {
			st.held, st.heldLen = nil, 0
			st.rerr = err
			return ReceivedPart{}, err
		}
		st.record(p)
		limit := st.s.maxRecvMessageSize()
		if p.Complete && len(st.held) == 0 {
			if len(p.Data) > limit {
				st.rerr = fmt.Errorf("biditest: %w", &bidi.MessageTooLargeError{Limit: int64(limit)})
				return ReceivedPart{}, st.rerr
			}
			return p, nil // a message of one part: nothing to hold
		}
		cost := heldCost(p)
		if st.heldLen+cost > limit {
			st.held, st.heldLen = nil, 0
			st.rerr = fmt.Errorf("biditest: %w (held parts count %d bytes each as well)", &bidi.MessageTooLargeError{Limit: int64(limit)}, partOverhead)
			return ReceivedPart{}, st.rerr
		}
		p.Data = append([]byte(nil), p.Data...)
		st.held = append(st.held, p)
		st.heldLen += cost
		if p.Complete {
			st.ready, st.held, st.heldLen = st.held, nil, 0
		}
	}
	p := st.ready[0]
	st.ready = st.ready[1:]
	return p, nil
}

// partOverhead is what a part held or recorded costs beyond its payload:
// its ReceivedPart and a slice header in the list that holds it.
const partOverhead = int(unsafe.Sizeof(ReceivedPart{})) + int(unsafe.Sizeof([]byte(nil)))

// heldCost is what holding p costs, in bytes: the budgets of
// WholeMessages and MaxRecordedBytes count it, so that a flood of empty
// parts is bounded as surely as a large one.
func heldCost(p ReceivedPart) int { return len(p.Data) + partOverhead }

func (st *Stream) readPart() (ReceivedPart, error) {
	if st.dec == nil {
		limit := st.s.maxEventSize()
		st.dec = eventstream.NewDecoder(st.r.Body, func(o *eventstream.DecoderOptions) { o.MaxPayloadLen = limit })
	}
	start := st.dec.Offset()
	env, err := st.dec.Decode()
	if err != nil {
		return ReceivedPart{}, st.bodyError(err)
	}
	p := ReceivedPart{Padding: -1, EnvelopeLen: int(st.dec.Offset() - start)}
	inner, isEnvelope := env.Payload, true
	if st.verifier != nil {
		if inner, err = st.verifier.Verify(env); err != nil {
			return p, st.violate(violation(ruleChunkSignature, 0, invalidSignatureErrorType, "event signature verification failed", err))
		}
	} else {
		_, isEnvelope = env.Headers.Get(eventstream.ChunkSignatureHeader)
	}
	var m *eventstream.Message
	if isEnvelope {
		st.sawEnvelope = true
		if d, ok := env.Headers.Get(eventstream.DateHeader); ok && d.Type == eventstream.TypeTimestamp {
			p.Date = d.Time()
		}
		if len(inner) == 0 {
			return ReceivedPart{}, st.afterEndFrame()
		}
		if err := eventstream.Unmarshal(inner, &st.inner); err != nil {
			return p, st.violate(violation(ruleEvent, 0, validationErrorType, "the envelope payload is not an event-stream message", err))
		}
		m = &st.inner
	} else {
		m = env // SkipVerify: a bare event
	}
	if k := wire.Classify(m); k != wire.KindPayloadPart {
		return p, st.violate(violation(ruleEvent, 0, validationErrorType,
			fmt.Sprintf("request event has :message-type %q and :event-type %q, want event PayloadPart",
				wire.String(m, wire.MessageTypeHeader), wire.String(m, wire.EventTypeHeader)), nil))
	}
	if name, ok := wire.EmptyValue(m); ok {
		return p, st.violate(violation(ruleEvent, 0, validationErrorType,
			fmt.Sprintf("request event header %q has an empty value; omit the header instead", name), nil))
	}
	// A client is lenient with what it receives; the server is strict,
	// being the conformance check of clients.
	var wp wire.Part
	wire.ParsePart(m, &wp)
	if !wp.Valid() {
		return p, st.violate(violation(ruleEvent, 0, validationErrorType,
			"DataType must be UTF8 or BINARY and CompletionState PARTIAL or COMPLETE", nil))
	}
	p.Data = wp.Bytes
	if wp.UTF8() {
		p.Type = bidi.DataTypeUTF8
	}
	p.Complete = wp.Complete()
	p.DataTypeSet = wp.DataType != nil
	p.CompletionStateSet = wp.CompletionState != nil
	if wp.Padding != nil {
		p.Padding = len(wp.Padding)
	}
	return p, nil
}

// afterEndFrame checks that the request body ends (END_STREAM) right after
// the end frame: it reads on, and returns io.EOF when the body ends there,
// a ruleEndFrame violation when anything follows, and another error when
// the client goes away.
func (st *Stream) afterEndFrame() error {
	_, err := st.dec.Decode()
	var (
		crc *eventstream.ChecksumError
		ln  *eventstream.LengthError
	)
	switch {
	case err == io.EOF:
		st.recordSendEnd()
		return io.EOF
	case err == nil:
		return st.violate(violation(ruleEndFrame, 0, validationErrorType,
			"an event-stream message followed the end frame", nil))
	case errors.Is(err, io.ErrUnexpectedEOF), errors.As(err, &crc), errors.As(err, &ln), errors.Is(err, eventstream.ErrInvalidHeader):
		return st.violate(violation(ruleEndFrame, 0, validationErrorType,
			"data followed the end frame", err))
	case st.expired.Load():
		return fmt.Errorf("biditest: reading request body: %w", ErrMaxStreamAge)
	}
	return fmt.Errorf("biditest: reading request body: %w", err)
}

// bodyError classifies an error from decoding the request body.
func (st *Stream) bodyError(err error) error {
	var (
		crc *eventstream.ChecksumError
		ln  *eventstream.LengthError
	)
	switch {
	case st.expired.Load():
		return fmt.Errorf("biditest: reading request body: %w", ErrMaxStreamAge)
	case err != io.EOF && st.r.Context().Err() != nil:
		// The client reset the stream (a Close in the middle of a
		// Send, say) or the server is closing: the request ended where
		// it was cut, which says nothing of the client's framing. (The
		// request's context is cancelled before its body fails.)
		return fmt.Errorf("biditest: reading request body: %w", err)
	case err == io.EOF && st.verifier == nil && !st.sawEnvelope:
		st.recordSendEnd()
		return io.EOF // SkipVerify with bare events: no end frame to expect
	case err == io.EOF:
		return st.violate(violation(ruleEndFrame, 0, validationErrorType,
			"the request body ended without the signed end frame", nil))
	case errors.Is(err, io.ErrUnexpectedEOF):
		return st.violate(violation(ruleFraming, 0, validationErrorType,
			"the request body ended inside an event-stream message", err))
	case errors.As(err, &ln) && errors.Is(err, eventstream.ErrPayloadTooLarge):
		return st.violate(violation(ruleFraming, 0, validationErrorType,
			fmt.Sprintf("a request event of %d bytes exceeds the server's limit of %d bytes (MaxEventSize)", ln.Length, ln.Limit), err))
	case errors.As(err, &crc), errors.As(err, &ln), errors.Is(err, eventstream.ErrInvalidHeader):
		return st.violate(violation(ruleFraming, 0, validationErrorType,
			"malformed event-stream message in the request body", err))
	}
	return fmt.Errorf("biditest: reading request body: %w", err)
}

// violate records v and reports it to the client.
func (st *Stream) violate(v *Violation) *Violation {
	st.s.record(v)
	st.sendViolation(v)
	return v
}

// record keeps a copy of p for Received, within MaxRecorded and the
// server's MaxRecordedBytes.
func (st *Stream) record(p ReceivedPart) {
	st.recordReceived(&p)
	limit := st.s.MaxRecorded
	if limit == 0 {
		limit = defaultMaxRecorded
	}
	st.recMu.Lock()
	defer st.recMu.Unlock()
	if len(st.received) >= limit || !st.s.reserveRecorded(heldCost(p)) {
		return
	}
	p.Data = append([]byte(nil), p.Data...)
	st.received = append(st.received, p)
	st.recordedBytes += heldCost(p)
}

// reserveRecorded takes n bytes from the MaxRecordedBytes budget, and
// reports whether there were that many left.
func (s *Server) reserveRecorded(n int) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if limit := s.maxRecordedBytes(); limit > 0 && s.recorded+n > limit {
		return false
	}
	s.recorded += n
	return true
}

// forgetRecorded drops what st recorded and gives its bytes back to the
// MaxRecordedBytes budget.
func (st *Stream) forgetRecorded() {
	st.recMu.Lock()
	n := st.recordedBytes
	st.received, st.recordedBytes = nil, 0
	st.recMu.Unlock()
	st.s.mu.Lock()
	st.s.recorded -= n
	st.s.mu.Unlock()
}

// release drops the stream's buffers once the handler has returned, so
// that the streams a server keeps for assertions stay small.
func (st *Stream) release() {
	if st.rmu.TryLock() {
		st.dec, st.inner = nil, eventstream.Message{}
		st.held, st.ready = nil, nil
		if st.rerr == nil {
			st.rerr = ErrStreamDone
		}
		st.rmu.Unlock()
	}
	if st.wmu.TryLock() {
		st.wbuf, st.hdrs, st.part = nil, nil, wire.Part{}
		st.wmu.Unlock()
	}
}
