package biditest

import (
	"errors"

	"github.com/sagemaker-bidi/sagemaker-bidi/bidi"
)

// A Handler scripts the model behind a [Server]: ServeBidi runs once per
// stream, in the server's request goroutine, after the request passed the
// server's checks. The stream's response ends when ServeBidi returns.
type Handler interface {
	ServeBidi(st *Stream)
}

// HandlerFunc adapts a function to a [Handler].
type HandlerFunc func(st *Stream)

// ServeBidi calls f(st).
func (f HandlerFunc) ServeBidi(st *Stream) { f(st) }

// Echo returns a Handler that accepts the stream at once and sends every
// received part back as it arrives, with the same DataType and
// CompletionState, until the client's end frame or an error. A message
// over [Server.MaxRecvMessageSize] ends the stream with the
// ModelStreamError "1009" a WebSocket container's read limit causes
// (Message `Model container closed the WebSocket connection (code 1009,
// reason "message too big: over N bytes")`, in the local gateway's
// words); with [Server.WholeMessages] the parts of
// a message come back only once it is complete.
func Echo() Handler {
	return HandlerFunc(func(st *Stream) {
		if st.Accept() != nil {
			return
		}
		limit := st.s.maxRecvMessageSize()
		size := 0 // of the message being echoed
		for {
			st.rmu.Lock()
			p, err := st.nextPart() // p.Data aliases the decoder until the next call
			if err == nil {
				if size += len(p.Data); size > limit {
					err = &bidi.MessageTooLargeError{Limit: int64(limit)}
				} else {
					err = st.SendPart(p.Part)
				}
				if p.Complete {
					size = 0
				}
			}
			st.rmu.Unlock()
			if errors.As(err, new(*bidi.MessageTooLargeError)) {
				st.sendMessageTooLarge(limit)
			}
			if err != nil {
				return
			}
		}
	})
}
