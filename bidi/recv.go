package bidi

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/aws/smithy-go/logging"

	"github.com/sagemaker-bidi/sagemaker-bidi/bidi/internal/transport"
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
	return s.recvLock.Lock(ctx, nil, nil)
}

func (s *Session) unlockRecv() { s.recvLock.Unlock() }

// nextItem returns the next received part, or the terminal error. The
// receive lock is held.
func (s *Session) nextItem(ctx context.Context) (recvItem, error) {
	if s.state.userClosed.Load() {
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
	if s.state.userClosed.Load() {
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
	// Payloads over MaxMessageSize are skipped as they stream, never
	// buffered: what the session holds is bounded by its limit, not by
	// the format's 24 MiB.
	dec := eventstream.NewDecoder(body, func(o *eventstream.DecoderOptions) { o.DiscardPayloadsOver = s.maxMessage })
	r := &respReader{s: s, dec: dec, dead: deadOf(reqBody)}
	for {
		it := r.next()
		if it.err != nil {
			s.endRecv(it.err, r)
			return
		}
		if !s.push(it, r) {
			return
		}
	}
}

// respReader decodes the response stream for readLoop, on the session's
// goroutine.
type respReader struct {
	s    *Session
	dec  *eventstream.Decoder
	part wire.Part

	// dead is closed when the transport stops taking the request body;
	// nil once that was handled.
	dead <-chan struct{}

	// ahead holds the items decoded past the queue's bounds after the
	// transport stopped taking the request body (see transportStopped),
	// to be queued before anything else is decoded.
	ahead []recvItem
}

// next returns the next item to queue: a part, or the terminal item (err
// set: io.EOF for a clean end, else the stream's error).
func (r *respReader) next() recvItem {
	if len(r.ahead) > 0 {
		it := r.ahead[0]
		r.ahead[0] = recvItem{}
		r.ahead = r.ahead[1:]
		return it
	}
	return r.decode()
}

// decode reads the next part or terminal item from the stream, skipping
// the events this client does not know.
func (r *respReader) decode() recvItem {
	s := r.s
	for {
		m, err := r.dec.Decode()
		if err != nil {
			return recvItem{err: s.decodeError(err)}
		}
		switch wire.Classify(m) {
		case wire.KindPayloadPart:
			it := s.partItem(m, &r.part)
			if r.dec.Discarded() > 0 {
				it.oversize, it.size, it.data = true, 0, nil
			}
			return it
		case wire.KindException:
			return recvItem{err: exceptionError(wire.String(m, wire.ExceptionTypeHeader), m.Payload)}
		case wire.KindError:
			return recvItem{err: errorMessageError(wire.String(m, wire.ErrorCodeHeader), wire.String(m, wire.ErrorMessageHeader))}
		case wire.KindUnknownEvent, wire.KindUnknown:
			// Forward compatibility: new event types do not break the
			// stream. The type names are not sensitive.
			s.logf(logging.Debug, "bidi: skipping %s message %q of type %q", wire.String(m, wire.MessageTypeHeader), wire.String(m, wire.EventTypeHeader), wire.String(m, wire.ExceptionTypeHeader))
		default:
			return recvItem{err: fmt.Errorf("%w: message without :message-type", ErrMalformedResponse)}
		}
	}
}

// partItem returns the queue item for PayloadPart m, parsed into p. As a
// client must (docs/wire.md §2.3), it does not enforce the model's constraints
// on what it receives: a DataType other than UTF8 is binary, a
// CompletionState other than PARTIAL complete.
func (s *Session) partItem(m *eventstream.Message, p *wire.Part) recvItem {
	wire.ParsePart(m, p)
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
		it.data = make([]byte, len(p.Bytes))
		copy(it.data, p.Bytes)
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

// push queues a part (or the terminal item) for Recv, waiting while the
// queue is full. It returns false when the session is cancelled.
func (s *Session) push(it recvItem, r *respReader) bool {
	if q := s.queued.Load(); q > 0 && q+int64(it.size) > recvQueueBytes {
		if !s.waitSpace(int64(it.size), r) {
			return false
		}
	}
	s.queued.Add(int64(it.size))
	s.lastRecv.Store(monotonic())
	if it.err == nil {
		s.obs.received(it.size)
	}
	select {
	case s.recvQ <- it:
		return true
	default:
	}
	for {
		select {
		case s.recvQ <- it:
			return true
		case <-s.ctx.Done():
			return false
		case <-r.dead:
			r.transportStopped()
		}
	}
}

// waitSpace waits until Recv has drained the queue enough for size more
// bytes (or entirely, for a large part).
func (s *Session) waitSpace(size int64, r *respReader) bool {
	for q := s.queued.Load(); q > 0 && q+size > recvQueueBytes; q = s.queued.Load() {
		select {
		case <-s.recvSpace:
		case <-s.ctx.Done():
			return false
		case <-r.dead:
			r.transportStopped()
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
// request body while the reader is held up by undelivered messages. The
// stream is then over (the transport stops the body when the response
// has ended or the stream is reset), but its end, or the reason for it,
// is queued behind those messages. So that Send reports the reason
// without waiting for Recv, the reader looks ahead, decoding at most
// recvQueueItems parts, and no more once they reach recvQueueBytes: since
// a part's size is known only once it is decoded, the last one may cross
// that bound, so the look-ahead holds less than recvQueueBytes plus one
// part (at most MaxMessageSize; a larger one is not kept). If the end is
// further, Send gets a provisional ErrStreamEnded, which the reason
// replaces once it is decoded.
func (r *respReader) transportStopped() {
	r.dead = nil
	s := r.s
	if s.sendClosedHint() {
		return
	}
	var size int
	for len(r.ahead) < recvQueueItems && size < recvQueueBytes {
		it := r.decode()
		r.ahead = append(r.ahead, it)
		if it.err != nil {
			s.end(terminalSendError(it.err), phaseEnded, endDefinite)
			return
		}
		size += it.size
	}
	s.end(fmt.Errorf("%w (its reason, if any, follows the messages not yet received)", ErrStreamEnded), phaseEnded, endProvisional)
}

// sendClosedHint reports whether CloseSend was called. It is only a hint
// (read without the send lock) and errs on the side of false.
func (s *Session) sendClosedHint() bool {
	s.pipe.mu.Lock()
	defer s.pipe.mu.Unlock()
	return s.pipe.ended
}

// terminalSendError returns what Send reports after the response stream
// ended with err: ErrStreamEnded for a clean end (io.EOF), else err.
func terminalSendError(err error) error {
	if err == io.EOF {
		return ErrStreamEnded
	}
	return err
}

// endRecv ends the response stream with err (io.EOF for a clean end):
// Send fails at once, Recv after the queued messages.
func (s *Session) endRecv(err error, r *respReader) {
	if s.ctx.Err() != nil {
		return // closed or failed: the cause is already set
	}
	// Nothing follows the terminal item: while it waits for room in the
	// queue, the transport stopping must not make the reader look ahead
	// past it (transportStopped).
	r.dead = nil
	cause := terminalSendError(err)
	s.end(cause, phaseEnded, endDefinite)
	if s.c.logOn {
		s.logf(logging.Debug, "bidi: response stream of endpoint %q ended: %s", s.input.EndpointName, errorCode(err))
	}
	if s.push(recvItem{err: err}, r) {
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
	switch {
	case errors.Is(err, transport.ErrDeadPeer):
		return fmt.Errorf("%w: %s", ErrDeadPeer, strings.TrimPrefix(err.Error(), transport.ErrDeadPeer.Error()+": "))
	case errors.Is(err, transport.ErrNotHTTP2):
		return fmt.Errorf("%w: %s", ErrNotHTTP2, strings.TrimPrefix(err.Error(), transport.ErrNotHTTP2.Error()+": "))
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
