package bridge

import (
	"sync"

	"github.com/sagemaker-bidi/sagemaker-bidi/bidi/biditest"
	"github.com/sagemaker-bidi/sagemaker-bidi/bidi/cassette"
)

// A closeSink passes one session's cassette events on to the sink of
// Config.Record, adding to the recorded end the WebSocket close the
// session ended with: the code and reason of the container's close frame,
// or the code the gateway closed with when the container sent none. The
// client is not told (a clean end is just the end of its stream), so the
// biditest recorder cannot know it.
type closeSink struct {
	cassette.Sink
	h  *Handler
	st *biditest.Stream

	mu     sync.Mutex // guards code and reason
	code   int
	reason string
}

// recordWith returns the biditest Server.Record hook of the gateway:
// record's sinks, each wrapped in a closeSink the handler can reach by
// the session's stream.
func (h *Handler) recordWith(record func(*biditest.Stream) cassette.Sink) func(*biditest.Stream) cassette.Sink {
	return func(st *biditest.Stream) cassette.Sink {
		sink := record(st)
		if sink == nil {
			return nil
		}
		k := &closeSink{Sink: sink, h: h, st: st}
		h.mu.Lock()
		if h.closes == nil {
			h.closes = make(map[*biditest.Stream]*closeSink)
		}
		h.closes[st] = k
		h.mu.Unlock()
		return k
	}
}

// noteClose tells the recording of st, if any, how its WebSocket closed.
func (h *Handler) noteClose(st *biditest.Stream, code int, reason string) {
	h.mu.Lock()
	k := h.closes[st]
	h.mu.Unlock()
	if k == nil {
		return
	}
	k.mu.Lock()
	k.code, k.reason = code, reason
	k.mu.Unlock()
}

// Write passes e on; an end event gets the session's close code and
// reason unless it records another code (that of a ModelStreamError the
// client was sent, which is the same one).
func (k *closeSink) Write(e *cassette.Event) error {
	if e.Kind == cassette.KindEnd {
		k.mu.Lock()
		code, reason := k.code, k.reason
		k.mu.Unlock()
		if code != 0 && (e.CloseCode == 0 || e.CloseCode == code) {
			c := *e
			c.CloseCode = code
			if c.CloseReason == "" {
				c.CloseReason = reason
			}
			return k.Sink.Write(&c)
		}
	}
	return k.Sink.Write(e)
}

// Close forgets the session and closes the sink.
func (k *closeSink) Close() error {
	k.h.mu.Lock()
	delete(k.h.closes, k.st)
	k.h.mu.Unlock()
	return k.Sink.Close()
}
