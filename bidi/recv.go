package bidi

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/aws/smithy-go/logging"

	"github.com/sagemaker-bidi/sagemaker-bidi/eventstream"
	"github.com/sagemaker-bidi/sagemaker-bidi/internal/wire"
)

// ErrMalformedResponse is matched (with errors.Is) by the error Recv
// returns when the response stream is not valid event-stream data (a CRC
// mismatch, a bad length, a malformed header, a message without
// :message-type). The stream ends with it. Unexpected values of a
// PayloadPart's DataType or CompletionState are not errors: anything but
// UTF8 is binary, anything but PARTIAL completes the message.
var ErrMalformedResponse = errors.New("bidi: malformed response stream")

// recvItem is one received PayloadPart, or the in-band end of the stream.
type recvItem struct {
	data     []byte // the payload: aliases the decoder's buffer
	size     int
	typ      DataType
	complete bool
	oversize bool  // larger than MaxMessageSize; data not kept
	err      error // terminal: io.EOF or the stream's error
}

// Recv returns the next whole message from the model, reassembled from
// its PARTIAL…COMPLETE parts. The returned Data is owned by the caller.
//
// It returns io.EOF only when the service ended the stream cleanly between
// messages. A stream cut off inside a message or a frame yields an error
// wrapping io.ErrUnexpectedEOF; a mid-stream exception its typed error
// ([*ModelStreamError], [*InternalStreamFailure], or [*ExceptionError] for
// unmodeled ones); an HTTP error response its [*ResponseError]; a reset
// stream or a GOAWAY an error holding an [*HTTP2Error] with its code; a
// dead connection an error matching [ErrDeadPeer]. These are terminal: later
// calls return the same error. A message larger than
// Options.MaxMessageSize is discarded and reported as a
// [*MessageTooLargeError]; that is not terminal, and the next call returns
// the following message. Event types this client does not know are
// skipped.
//
// ctx bounds only this call: when it ends, Recv returns ctx's error and the
// session is unaffected (a partly received message is kept for the next
// call). Recv may run concurrently with Send; see [Session] for the rules.
func (s *Session) Recv(ctx context.Context) (Message, error) {
	if err := s.lockRecv(ctx); err != nil {
		return Message{}, err
	}
	defer s.unlockRecv()
	defer s.shrinkDecoder()
	for {
		it, err := s.nextItem(ctx)
		if err != nil {
			return Message{}, err
		}
		if it.oversize {
			s.asm.reset()
			s.asm.skipping = !it.complete
			return Message{}, &MessageTooLargeError{Limit: int64(s.maxMessage)}
		}
		if it.complete && !s.asm.partial() {
			return Message{Data: s.ownData(it), Type: it.typ}, nil
		}
		m, done, err := s.asm.add(Part{Data: it.data, Type: it.typ, Complete: it.complete})
		if err != nil || done {
			return m, err
		}
	}
}

// RecvPart returns the next part exactly as it arrived, without
// reassembly, for callers that process fragments as they come (live
// audio). Part.Data is valid until the next call to RecvPart or Recv: a
// small part (up to 4 KiB) is returned in a buffer of the session's that
// the next call reuses, so that a stream of small parts allocates
// nothing. A part larger than Options.MaxMessageSize is discarded and
// reported as a [*MessageTooLargeError]. Errors and ctx are as for Recv.
// Do not mix Recv and RecvPart in the middle of a message.
func (s *Session) RecvPart(ctx context.Context) (Part, error) {
	if err := s.lockRecv(ctx); err != nil {
		return Part{}, err
	}
	defer s.unlockRecv()
	defer s.shrinkDecoder()
	it, err := s.nextItem(ctx)
	if err != nil {
		return Part{}, err
	}
	if it.oversize {
		return Part{}, &MessageTooLargeError{Limit: int64(s.maxMessage)}
	}
	return Part{Data: s.partData(it), Type: it.typ, Complete: it.complete}, nil
}

// partBufMax is the largest part RecvPart returns in the session's reused
// buffer (which an idle session keeps); a larger one is a copy of its own.
const partBufMax = 4 << 10

// partData returns the item's data for RecvPart: a small part in
// s.partBuf, a larger one owned. The receive turn is held.
func (s *Session) partData(it recvItem) []byte {
	if len(it.data) == 0 || len(it.data) > partBufMax {
		return s.ownData(it)
	}
	n := len(it.data)
	if cap(s.partBuf) < n {
		s.partBuf = make([]byte, 0, min(max(n, 2*cap(s.partBuf)), partBufMax))
	}
	s.partBuf = append(s.partBuf[:0], it.data...)
	return s.partBuf[:n:n]
}

// ownData returns a copy of the item's data that the caller owns: the
// decoder's buffer is reused.
func (s *Session) ownData(it recvItem) []byte { return ownedCopy(s.asm.alloc, it.data) }

// ownedCopy returns a copy of b in a buffer from newBuffer(alloc, len(b)),
// nil when b is empty.
func ownedCopy(alloc func(int) []byte, b []byte) []byte {
	if len(b) == 0 {
		return nil
	}
	c := newBuffer(alloc, len(b))
	for i := 0; i < len(b); i += copyChunk {
		copy(c[i:], b[i:min(i+copyChunk, len(b))])
	}
	return c
}

// newBuffer returns a buffer of length n for a received message's data:
// from alloc (Options.MessageBuffer) if set and it gives n bytes or more,
// else a new one.
func newBuffer(alloc func(int) []byte, n int) []byte {
	if alloc != nil {
		if b := alloc(n); cap(b) >= n {
			return b[:n]
		}
	}
	return make([]byte, n)
}

// copyChunk is the most bytes ownedCopy moves in one copy. A copy is one
// call the scheduler cannot preempt; between calls it can, so that a
// garbage collection waiting to scan the receiver's stack does not spin
// for the whole of a 16 MiB message (whose fresh pages make its copy
// slow: each is touched for the first time).
const copyChunk = 256 << 10

// lockRecv takes the receive turn, waiting while ctx allows; unlockRecv
// releases it.
func (s *Session) lockRecv(ctx context.Context) error {
	return s.pipe.takeTurn(ctx, &s.recvTurn, nil, nil)
}

func (s *Session) unlockRecv() { s.pipe.releaseTurn(&s.recvTurn) }

// How Recv reads the response stream: on its own goroutine, in place
// from what the connection buffered for the answered attempt's stream
// (the engine's Stream is the decoder's Peeker, and the decoder is the
// attempt's: attempt.dec), and nobody else decodes: bytes that no Recv
// takes stay in the stream's buffer, within its HTTP/2 receive window.
// The end of the stream reaches Send without Recv as the engine reports
// it (watchEnd): Send then reports that the stream ended and Recv, once it
// gets there, why. A Recv waiting for bytes waits on Session.recvWake,
// which the stream's notify function and the session's end signal.

// shrinkDecoder lets the decoder give a large buffer back once what it
// decoded was copied out, so that an idle session holds none. The receive
// turn is held; the decoder is looked at only once the model answered, as
// the phase or, once the session ended, respReady shows (a Recv that gave
// up before the answer must not).
func (s *Session) shrinkDecoder() {
	switch s.state.phase() {
	case phaseStreaming, phaseSendOver:
		// Answered (the phase is stored after the decoder is set): the
		// common case, decided without touching respReady, whose
		// channel is cold in a process with thousands of sessions.
	default:
		select {
		case <-s.respReady:
		default:
			return
		}
	}
	if a := s.cur.Load(); a != nil && a.dec != nil {
		a.part = wire.Part{} // it aliases the decoder's buffer
		a.dec.Shrink()
	}
}

// nextItem returns the next received part, or the terminal error. The
// receive turn is held.
func (s *Session) nextItem(ctx context.Context) (recvItem, error) {
	if s.state.userClosed.Load() {
		return recvItem{}, ErrSessionClosed
	}
	if s.recvErr != nil {
		return recvItem{}, s.recvErr
	}
	a, err := s.awaitStream(ctx)
	if err != nil {
		return recvItem{}, err
	}
	done := ctx.Done()
	for {
		it, err := s.decode(a)
		if err != eventstream.ErrWouldBlock {
			return s.deliver(it)
		}
		if s.ctx.Err() != nil {
			// The session ended; its end also signals recvWake, so
			// this check cannot miss it.
			s.recvErr = s.sessionErr()
			return recvItem{}, s.recvErr
		}
		if done == nil {
			// A context that is never done (context.Background, as a
			// loop that reads until the end passes): a plain receive
			// parks and wakes for less than a select over two channels,
			// once per message that finds nothing buffered.
			<-s.recvWake
			continue
		}
		select {
		case <-s.recvWake:
		case <-done:
			return recvItem{}, ctx.Err()
		}
	}
}

// awaitStream waits until the response stream can be read: the model
// answered. It returns the answered attempt, whose decoder Recv reads,
// deciding from the session's phase; or why not, if the session ended
// first, or ctx's error. The receive turn is held.
func (s *Session) awaitStream(ctx context.Context) (*attempt, error) {
	switch s.state.phase() {
	case phaseStreaming, phaseSendOver:
		// Answered: the attempt's decoder was set before the phase, and
		// no attempt follows the answered one in cur.
		return s.cur.Load(), nil
	case phaseOpening:
		select {
		case <-s.respReady:
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-s.ctx.Done():
		}
	}
	// Answered, or ended with or without an answer: the attempt may be
	// read only once respReady is closed.
	select {
	case <-s.respReady:
		if s.resp != nil {
			return s.cur.Load(), nil
		}
	default:
	}
	s.recvErr = s.sessionErr()
	return nil, s.recvErr
}

// deliver hands item it to Recv: a part, or the stream's end, which is
// sticky and ends the session (its context is cancelled with the cause).
func (s *Session) deliver(it recvItem) (recvItem, error) {
	if s.state.userClosed.Load() {
		return recvItem{}, ErrSessionClosed
	}
	if it.err == nil {
		s.midMessage = !it.complete
		return it, nil
	}
	err := it.err
	if s.midMessage && !errors.Is(err, io.ErrUnexpectedEOF) && !isAPIError(err) {
		// Cut between the parts of a message: whatever cut it (a clean
		// end, a reset, a dead connection), the message is incomplete;
		// the cause stays in the chain. (The model's own error says
		// why it stopped, and stays as it is.)
		if err == io.EOF {
			err = fmt.Errorf("bidi: stream ended inside a message: %w", io.ErrUnexpectedEOF)
		} else {
			err = fmt.Errorf("bidi: stream ended inside a message: %w: %w", io.ErrUnexpectedEOF, err)
		}
	}
	s.recvErr = err
	s.cancel(terminalSendError(it.err))
	return recvItem{}, err
}

// isAPIError reports whether err carries a service or model error code
// (the smithy APIError shape).
func isAPIError(err error) bool {
	var api interface{ ErrorCode() string }
	return errors.As(err, &api)
}

// decode decodes the next part or the terminal item from what the
// answered attempt a's stream has buffered, skipping the events this
// client does not know. It returns eventstream.ErrWouldBlock, and no
// item, while the next item has not fully arrived. The receive turn is
// held.
func (s *Session) decode(a *attempt) (recvItem, error) {
	for {
		m, err := a.dec.Decode()
		if err == eventstream.ErrWouldBlock {
			return recvItem{}, err
		}
		if err != nil {
			return s.streamEnded(s.decodeError(err)), nil
		}
		switch wire.ClassifyPart(m, &a.part) {
		case wire.KindPayloadPart:
			it := s.partItem(&a.part)
			if a.dec.Discarded() > 0 {
				it.oversize, it.size, it.data = true, 0, nil
			}
			s.lastRecv.Store(int64(time.Since(s.born)))
			s.obs.received(it.size)
			return it, nil
		case wire.KindException:
			return s.streamEnded(exceptionError(wire.String(m, wire.ExceptionTypeHeader), m.Payload)), nil
		case wire.KindError:
			return s.streamEnded(errorMessageError(wire.String(m, wire.ErrorCodeHeader), wire.String(m, wire.ErrorMessageHeader))), nil
		case wire.KindUnknownEvent, wire.KindUnknown:
			// Forward compatibility: new event types do not break the
			// stream. The type names are not sensitive.
			s.logf(logging.Debug, "bidi: skipping %s message %q of type %q", wire.String(m, wire.MessageTypeHeader), wire.String(m, wire.EventTypeHeader), wire.String(m, wire.ExceptionTypeHeader))
		default:
			return s.streamEnded(fmt.Errorf("%w: message without :message-type", ErrMalformedResponse)), nil
		}
	}
}

// partItem returns the item for the PayloadPart parsed into p; its data
// aliases the message's payload. As a client must (docs/wire.md §2.3), it
// does not enforce the model's constraints on what it receives: a
// DataType other than UTF8 is binary, a CompletionState other than
// PARTIAL complete.
func (s *Session) partItem(p *wire.Part) recvItem {
	if !p.Valid() {
		s.logf(logging.Debug, "bidi: PayloadPart with a DataType or CompletionState outside the model's values; taken as %s", partShape(p))
	}
	it := recvItem{size: len(p.Bytes), typ: DataTypeBinary, complete: p.Complete()}
	if p.UTF8() {
		it.typ = DataTypeUTF8
	}
	if len(p.Bytes) > s.maxMessage {
		it.oversize, it.size = true, 0
	} else if len(p.Bytes) > 0 {
		it.data = p.Bytes
	}
	return it
}

// partShape describes how a part is interpreted, for logs.
func partShape(p *wire.Part) string {
	typ, state := "BINARY", "COMPLETE"
	if p.UTF8() {
		typ = "UTF8"
	}
	if !p.Complete() {
		state = "PARTIAL"
	}
	return typ + " " + state
}

// streamEnded records that the response stream ended with err (io.EOF
// for a clean end) and returns the terminal item: Send fails at once,
// Recv after the messages before it. If the session was closed or failed
// meanwhile, that cause stands.
func (s *Session) streamEnded(err error) recvItem {
	if s.ctx.Err() == nil {
		s.end(terminalSendError(err), endSendSide, endDefinite)
		if s.c.logOn {
			s.logf(logging.Debug, "bidi: response stream of endpoint %q ended: %s", s.input.EndpointName, errorCode(err))
		}
	}
	return recvItem{err: err}
}

// watchEnd is the run goroutine's last job once the model answered
// (attempt a), and it takes no goroutine: the stream's notify function,
// which the engine calls once the stream is over (every byte of it
// buffered, its end or error known), ends the send side with a stand-in
// that Recv replaces with the reason once it decodes it (see streamOver);
// the session's end releases a (releaseAnswered, from the context's
// AfterFunc). The notify function runs on the connection's read loop
// with no engine lock held, and takes only pipe.mu (streamOver), in the
// documented lock order.
func (s *Session) watchEnd(a *attempt) {
	wake := s.recvWake
	a.st.SetNotify(func() {
		signal(wake)
		s.checkOver(a)
	})
	s.checkOver(a) // the stream may have been over before SetNotify
	s.answeredOpen.Store(a)
	if s.ctx.Err() != nil {
		s.releaseAnswered() // the session's end came first
	}
}

// checkOver calls streamOver once the answered attempt a's stream is
// over, unless the session ended first.
func (s *Session) checkOver(a *attempt) {
	select {
	case <-a.st.Done():
		if a.over.CompareAndSwap(false, true) && s.ctx.Err() == nil {
			s.streamOver(a.st.Err())
		}
	default:
	}
}

// releaseAnswered aborts the answered attempt handed over by watchEnd
// and ends the session's telemetry, once, by whichever of the session's
// end and watchEnd gets there second.
func (s *Session) releaseAnswered() {
	if a := s.answeredOpen.Swap(nil); a != nil {
		a.abort()
		if s.obs != nil {
			s.obs.end(s.endCause())
		}
	}
}

// streamOver ends the send side once the response stream is over, before
// Recv has decoded its end: nothing more reaches the model, so Send stops
// at once. What it reports is provisional ([end] with endProvisional): the
// engine's error for a failed stream (a reset, a dead connection), else
// ErrStreamEnded; the reason that Recv decodes (a model error, say)
// replaces it, and Send reports that from then on. Bytes not received
// stay in the stream for Recv. err is the stream's error (nil for an end
// of stream).
func (s *Session) streamOver(err error) {
	cause := fmt.Errorf("%w (its reason, if any, follows the messages not yet received)", ErrStreamEnded)
	if err != nil {
		cause = classifyTransportError(err)
	}
	s.end(cause, endSendSide, endProvisional)
}

// terminalSendError returns what Send reports after the response stream
// ended with err: ErrStreamEnded for a clean end (io.EOF), else err.
func terminalSendError(err error) error {
	if err == io.EOF {
		return ErrStreamEnded
	}
	return err
}

// decodeError maps a Decode error to the session's terms.
func (s *Session) decodeError(err error) error {
	switch {
	case err == io.EOF:
		return io.EOF
	case s.ctx.Err() != nil:
		return s.sessionErr()
	case errors.Is(err, io.ErrUnexpectedEOF):
		return fmt.Errorf("bidi: response stream cut off: %w", err)
	}
	var (
		le *eventstream.LengthError
		ce *eventstream.ChecksumError
		he *eventstream.HeaderError
	)
	if errors.As(err, &le) || errors.As(err, &ce) || errors.As(err, &he) {
		return fmt.Errorf("%w: %w", ErrMalformedResponse, err)
	}
	return classifyTransportError(err)
}

// classifyTransportError puts an engine error in the session's terms,
// keeping its whole chain: ErrNotHTTP2 and ErrDeadPeer are the engine's
// own sentinels; an HTTP/2 error code is an *HTTP2Error in front; others
// are "stream failed".
func classifyTransportError(err error) error {
	if err == nil {
		return nil
	}
	if errors.Is(err, ErrNotHTTP2) {
		return err // the engine's sentinel is bidi's, and it says it all
	}
	if h := http2ErrorOf(err); h != err {
		return h
	}
	return fmt.Errorf("bidi: stream failed: %w", err)
}
