package bidi

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/aws/smithy-go/logging"

	"github.com/sagemaker-bidi/sagemaker-bidi/eventstream"
	"github.com/sagemaker-bidi/sagemaker-bidi/internal/wire"
)

// ErrMalformedResponse is matched (with errors.Is) by the error Recv
// returns when the response stream is not valid event-stream data (a CRC
// mismatch, a bad length, a message without :message-type, a PayloadPart
// with an unknown DataType or CompletionState). The stream ends with it.
var ErrMalformedResponse = errors.New("bidi: malformed response stream")

// recvItem is one received PayloadPart, or the in-band end of the stream.
type recvItem struct {
	data     []byte // owned copy; nil when empty or oversize
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
// ([*ModelStreamError], [*InternalStreamFailure], or [*StreamError] for
// unmodeled ones); an HTTP error response its [*ResponseError]; a dead
// connection an error matching [ErrDeadPeer]. These are terminal: later
// calls return the same error. A message larger than
// Options.MaxMessageSize is discarded and reported as a
// [*MessageTooLargeError]; that is not terminal, and the next call returns
// the following message. Event types this client does not know are
// skipped.
//
// ctx bounds only this call: when it ends, Recv returns ctx's error and the
// session is unaffected (a partly reassembled message is kept for the next
// call). The session reads the response in its own goroutine, a bounded
// number of messages ahead of Recv, so a cancelled Recv leaves nothing
// behind. Recv may run concurrently with Send; see [Session] for the rules.
func (s *Session) Recv(ctx context.Context) (Message, error) {
	if err := s.lockRecv(ctx); err != nil {
		return Message{}, err
	}
	defer s.unlockRecv()
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
			return Message{Data: it.data, Type: it.typ}, nil
		}
		m, done, err := s.asm.add(Part{Data: it.data, Type: it.typ, Complete: it.complete})
		if err != nil || done {
			return m, err
		}
	}
}

// RecvPart returns the next part exactly as it arrived, without
// reassembly, for callers that process fragments as they come (live
// audio). Part.Data is valid until the next call to RecvPart or Recv. A
// part larger than Options.MaxMessageSize is discarded and reported as a
// [*MessageTooLargeError]. Errors and ctx are as for Recv. Do not mix Recv
// and RecvPart in the middle of a message.
func (s *Session) RecvPart(ctx context.Context) (Part, error) {
	if err := s.lockRecv(ctx); err != nil {
		return Part{}, err
	}
	defer s.unlockRecv()
	it, err := s.nextItem(ctx)
	if err != nil {
		return Part{}, err
	}
	if it.oversize {
		return Part{}, &MessageTooLargeError{Limit: int64(s.maxMessage)}
	}
	return Part{Data: it.data, Type: it.typ, Complete: it.complete}, nil
}

func (s *Session) lockRecv(ctx context.Context) error {
	select {
	case s.recvLock <- struct{}{}:
		return nil
	default:
	}
	select {
	case s.recvLock <- struct{}{}:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (s *Session) unlockRecv() { <-s.recvLock }

// nextItem returns the next received part, or the terminal error. The
// receive lock is held.
func (s *Session) nextItem(ctx context.Context) (recvItem, error) {
	if s.closed.Load() {
		return recvItem{}, ErrSessionClosed
	}
	if s.recvErr != nil {
		return recvItem{}, s.recvErr
	}
	var it recvItem
	select {
	case it = <-s.recvQ:
	default:
		select {
		case it = <-s.recvQ:
		case <-ctx.Done():
			return recvItem{}, ctx.Err()
		case <-s.ctx.Done():
			select {
			case it = <-s.recvQ:
			default:
				s.recvErr = s.sessionErr()
				return recvItem{}, s.recvErr
			}
		}
	}
	if s.closed.Load() {
		return recvItem{}, ErrSessionClosed
	}
	if it.err != nil {
		err := it.err
		if err == io.EOF && s.midMessage {
			err = fmt.Errorf("bidi: stream ended inside a message: %w", io.ErrUnexpectedEOF)
		}
		s.recvErr = err
		return recvItem{}, err
	}
	s.midMessage = !it.complete
	s.queued.Add(-int64(it.size))
	select {
	case s.recvSpace <- struct{}{}:
	default:
	}
	return it, nil
}

// readLoop decodes the response stream into recvQ until it ends, fails or
// the session is cancelled. It runs on the session's goroutine.
func (s *Session) readLoop(body io.ReadCloser, reqBody *reqBody) {
	defer body.Close()
	dec := eventstream.NewDecoder(body)
	var p wire.Part
	for {
		m, err := dec.Decode()
		if err != nil {
			s.endRecv(s.decodeError(err), reqBody)
			return
		}
		switch wire.Classify(m) {
		case wire.KindPayloadPart:
			if !wire.ParsePart(m, &p) {
				s.endRecv(fmt.Errorf("%w: PayloadPart with DataType or CompletionState outside the model's values", ErrMalformedResponse), reqBody)
				return
			}
			it := recvItem{size: len(p.Bytes), typ: DataTypeBinary, complete: p.Complete()}
			if p.UTF8() {
				it.typ = DataTypeUTF8
			}
			if len(p.Bytes) > s.maxMessage {
				it.oversize, it.size = true, 0
			} else if len(p.Bytes) > 0 {
				it.data = make([]byte, len(p.Bytes))
				copy(it.data, p.Bytes)
			}
			if !s.push(it, reqBody) {
				return
			}
		case wire.KindException:
			s.endRecv(exceptionError(wire.String(m, wire.ExceptionTypeHeader), m.Payload), reqBody)
			return
		case wire.KindError:
			s.endRecv(errorMessageError(wire.String(m, wire.ErrorCodeHeader), wire.String(m, wire.ErrorMessageHeader)), reqBody)
			return
		case wire.KindUnknownEvent, wire.KindUnknown:
			// Forward compatibility: new event types do not break the
			// stream. The type names are not sensitive.
			s.logf(logging.Debug, "bidi: skipping %s message %q of type %q", wire.String(m, wire.MessageTypeHeader), wire.String(m, wire.EventTypeHeader), wire.String(m, wire.ExceptionTypeHeader))
		default:
			s.endRecv(fmt.Errorf("%w: message without :message-type", ErrMalformedResponse), reqBody)
			return
		}
	}
}

// push queues a part for Recv, waiting while the queue is full. It
// returns false when the session is cancelled.
func (s *Session) push(it recvItem, reqBody *reqBody) bool {
	if q := s.queued.Load(); q > 0 && q+int64(it.size) > recvQueueBytes {
		if !s.waitSpace(int64(it.size), reqBody) {
			return false
		}
	}
	s.queued.Add(int64(it.size))
	select {
	case s.recvQ <- it:
		return true
	default:
	}
	dead := deadOf(reqBody)
	for {
		select {
		case s.recvQ <- it:
			return true
		case <-s.ctx.Done():
			return false
		case <-dead:
			s.transportStopped()
			dead = nil
		}
	}
}

// waitSpace waits until Recv has drained the queue enough for size more
// bytes (or entirely, for a large part).
func (s *Session) waitSpace(size int64, reqBody *reqBody) bool {
	dead := deadOf(reqBody)
	for q := s.queued.Load(); q > 0 && q+size > recvQueueBytes; q = s.queued.Load() {
		select {
		case <-s.recvSpace:
		case <-s.ctx.Done():
			return false
		case <-dead:
			s.transportStopped()
			dead = nil
		}
	}
	return true
}

// deadOf returns the channel closed when b ends (nil for no body).
func deadOf(b *reqBody) <-chan struct{} {
	if b == nil {
		return nil
	}
	return b.dead
}

// transportStopped is called when the transport stopped taking the
// request body while the reader is held up by undelivered messages: the
// stream's end (or its reason) is queued behind them, so Send learns that
// the stream is over without waiting for Recv.
func (s *Session) transportStopped() {
	if s.sendClosedLocked() {
		return
	}
	s.failSend(fmt.Errorf("%w (its reason, if any, follows the messages not yet received)", ErrStreamEnded))
}

// sendClosedLocked reports whether CloseSend was called. It is only a hint
// (read without the send lock) and errs on the side of false.
func (s *Session) sendClosedLocked() bool {
	s.pipe.mu.Lock()
	defer s.pipe.mu.Unlock()
	return s.pipe.ended
}

// endRecv ends the response stream with err (io.EOF for a clean end):
// Send fails at once, Recv after the queued messages.
func (s *Session) endRecv(err error, reqBody *reqBody) {
	if s.ctx.Err() != nil {
		return // closed or failed: the cause is already set
	}
	cause := err
	if err == io.EOF {
		cause = ErrStreamEnded
	}
	s.failSend(cause)
	if s.c.logOn {
		s.logf(logging.Debug, "bidi: response stream of endpoint %q ended: %s", s.input.EndpointName, errorCode(err))
	}
	if s.push(recvItem{err: err}, reqBody) {
		s.cancel(cause)
	}
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

// classifyTransportError wraps transport errors the caller may want to
// tell apart: a connection that failed its health check (ErrDeadPeer).
func classifyTransportError(err error) error {
	if err == nil {
		return nil
	}
	msg := err.Error()
	switch {
	case strings.Contains(msg, "client connection lost"):
		// net/http's HTTP/2 transport closes a connection whose PING
		// went unanswered with this error.
		return fmt.Errorf("%w: %w", ErrDeadPeer, err)
	case strings.Contains(msg, "no application protocol"), strings.Contains(msg, "unexpected ALPN protocol"):
		return fmt.Errorf("%w: %w", ErrNotHTTP2, err)
	}
	return fmt.Errorf("bidi: stream failed: %w", err)
}
