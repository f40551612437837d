package bidi

import (
	"context"
	"errors"
	"strconv"
	"time"

	"github.com/sagemaker-bidi/sagemaker-bidi/internal/backoff"
)

// Finish ends the request without losing the model's last answers. It
// keeps the input open until the model ends the stream or has sent
// nothing for quiet (counted from the last part received, or from the
// call), then sends the end frame (CloseSend) and waits for the stream's
// end; ctx bounds the whole call. Another goroutine must keep reading
// with Recv (or Messages) meanwhile: Finish does not consume messages,
// and it returns once that Recv has returned the end of the stream, whose
// reason it reports.
//
// It returns nil when the stream ended cleanly or with a normal closure
// (a [*ModelStreamError] with close code 1000, see
// [ModelStreamError.NormalClosure]), else the reason it ended, or ctx's
// error. CloseSend alone ends the request at once: a platform that closes
// the container's WebSocket when the client's input ends may drop replies
// still on their way, which is what Finish avoids.
func (s *Session) Finish(ctx context.Context, quiet time.Duration) error {
	if !backoff.Quiet(ctx, s.born, &s.lastRecv, quiet, s.state.over) {
		select {
		case <-s.state.over:
			return s.finishResult(ctx)
		default:
			return ctx.Err()
		}
	}
	if err := s.CloseSend(); err != nil {
		return finishError(err)
	}
	select {
	case <-s.state.over:
		return s.finishResult(ctx)
	case <-ctx.Done():
		return ctx.Err()
	}
}

// finishResult is Finish's verdict once the send side is over. It waits
// for the session's end: the receiving goroutine's Recv decodes why the
// stream ended and ends the session with it (the send side's end is a
// stand-in until then); a clean end or a normal closure is nil.
func (s *Session) finishResult(ctx context.Context) error {
	select {
	case <-s.ctx.Done():
	case <-ctx.Done():
		return ctx.Err()
	}
	return finishError(s.sendCause())
}

func finishError(err error) error {
	if err == nil || errors.Is(err, ErrStreamEnded) || IsNormalClosure(err) {
		return nil
	}
	return err
}

// WebSocket close codes SageMaker reports as a ModelStreamError's
// ErrorCode when the model's container closes its connection (listed on
// CloseCode).
const (
	closeNormal         = 1000 // the container ended the stream normally
	closeGoingAway      = 1001 // the container (or platform) is going away
	closeProtocolError  = 1002
	closeMessageTooBig  = 1009 // a message over the container's or platform's limit
	closeInternalError  = 1011 // the container failed
	closeServiceRestart = 1012
	closeTryAgainLater  = 1013 // overloaded: open a new stream later
)

// CloseCode returns the WebSocket close code of the container's
// connection, which SageMaker reports as the ErrorCode, or 0 when the
// ErrorCode is not one. The codes a model's container closes with
// (RFC 6455 §7.4.1):
//
//	1000  normal closure: the container ended the stream (see NormalClosure)
//	1001  going away: the container or the platform is going away
//	1002  protocol error
//	1009  message too big: a message over the container's or platform's limit
//	1011  internal error: the container failed
//	1012  service restart
//	1013  try again later: overloaded, open a new stream later
//
// Retryable reports the codes after which a new stream may succeed.
func (e *ModelStreamError) CloseCode() int {
	n, err := strconv.Atoi(e.ErrorCode_)
	if err != nil || n < 1000 || n > 4999 {
		return 0
	}
	return n
}

// NormalClosure reports whether the container closed its connection
// normally (close code 1000): after the last reply, that is the end of
// the model's answers, not a failure.
func (e *ModelStreamError) NormalClosure() bool { return e.CloseCode() == closeNormal }

// Retryable reports whether the close code says that a new stream may
// succeed later: 1001 (going away), 1012 (service restart) and 1013 (try
// again later). Other codes are terminal for the request that caused
// them (1009: too large; 1002, 1011: the container failed).
func (e *ModelStreamError) Retryable() bool {
	switch e.CloseCode() {
	case closeGoingAway, closeServiceRestart, closeTryAgainLater:
		return true
	}
	return false
}

// IsNormalClosure reports whether err is a [*ModelStreamError] with close
// code 1000.
func IsNormalClosure(err error) bool {
	var mse *ModelStreamError
	return errors.As(err, &mse) && mse.NormalClosure()
}
