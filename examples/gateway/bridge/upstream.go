package bridge

import (
	"errors"
	"io"

	"github.com/sagemaker-bidi/sagemaker-bidi/bidi"
	"github.com/sagemaker-bidi/sagemaker-bidi/bidi/biditest"
	"github.com/sagemaker-bidi/sagemaker-bidi/examples/gateway/internal/wsframe"
)

// upstream forwards the client's parts to the container, one part per
// frame, until the client's end frame (then the WebSocket is closed with
// 1000, after every part was written), the client goes away (closed with
// 1001) or the writer refuses (the session is ending).
func (s *session) upstream() {
	defer s.h.wg.Done()
	done := make(chan error, 1)
	inMessage := false
	for {
		p, err := s.st.RecvPart()
		switch {
		case err == io.EOF:
			if inMessage {
				s.log.Warn("client ended its stream inside a fragmented message; closing the WebSocket anyway")
			}
			s.end(clientEnded(), wsframe.ClosePayload(wsframe.CloseNormal, ""))
			return
		case err != nil:
			var v *biditest.Violation
			if errors.As(err, &v) {
				s.log.Warn("client broke the protocol", "rule", v.Rule, "violation", v.Message)
			}
			s.clientLeft(err)
			return
		}
		d := dataFrame{fin: p.Complete, op: frameOpcode(p.Part, inMessage), payload: p.Data, done: done}
		select {
		case s.data <- d:
		case <-s.stop:
			return
		}
		if err := <-done; err != nil {
			return
		}
		inMessage = !p.Complete
		s.partsUp.Add(1)
		s.bytesUp.Add(int64(len(p.Data)))
	}
}

// frameOpcode maps a client part to its frame's opcode: the first part of
// a message gives a text frame for UTF8 and a binary frame for BINARY (or
// an absent DataType); later parts of a fragmented message give
// continuation frames, whatever their DataType, since a WebSocket message
// has one type.
func frameOpcode(p bidi.Part, inMessage bool) wsframe.Opcode {
	switch {
	case inMessage:
		return wsframe.OpContinuation
	case p.Type == bidi.DataTypeUTF8:
		return wsframe.OpText
	}
	return wsframe.OpBinary
}
