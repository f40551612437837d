package bridge_test

import (
	"sync"
	"testing"

	"github.com/sagemaker-bidi/sagemaker-bidi/bidi"
	"github.com/sagemaker-bidi/sagemaker-bidi/bidi/biditest"
	"github.com/sagemaker-bidi/sagemaker-bidi/bidi/cassette"
	"github.com/sagemaker-bidi/sagemaker-bidi/examples/gateway/bridge"
)

// memSink keeps one session's events; done is closed with the sink.
type memSink struct {
	mu     sync.Mutex
	events []cassette.Event
	done   chan struct{}
}

func (s *memSink) Write(e *cassette.Event) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.events = append(s.events, *e)
	return nil
}

func (s *memSink) Close() error {
	close(s.done)
	return nil
}

// end waits for the sink's close and returns the recorded end.
func (s *memSink) end(t *testing.T) cassette.Event {
	t.Helper()
	select {
	case <-s.done:
	case <-testContext(t).Done():
		t.Fatal("the recording was not closed")
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if n := len(s.events); n == 0 || s.events[n-1].Kind != cassette.KindEnd {
		t.Fatalf("recorded events %+v end without an end event", s.events)
	}
	return s.events[len(s.events)-1]
}

// A recorded session's end carries the WebSocket close the gateway saw:
// the container's answer to the gateway's close after the client's end
// (a clean end, of which the client is told nothing more), the close the
// container sent first, or the 1006 of a connection dropped without one.
// Nothing of a session is kept once its recording is closed.
func TestRecordedClose(t *testing.T) {
	rc := newRawContainer(t)
	sinks := make(chan *memSink, 8)
	g := startGateway(t, rc.url, func(c *bridge.Config) {
		c.Record = func(*biditest.Stream) cassette.Sink {
			s := &memSink{done: make(chan struct{})}
			sinks <- s
			return s
		}
	})
	c := g.client(t)
	ctx := testContext(t)

	// The client ends; the container answers the gateway's 1000.
	sess := open(t, c, bidi.OpenInput{})
	peer := rc.accept(t)
	sess.CloseSend()
	if f := peer.readData(); f.op != opClose || f.closeCode() != 1000 {
		t.Fatalf("frame = %v, want close 1000", f)
	}
	peer.writeClose(1000, "bye")
	expectEOF(t, sess)
	if e := (<-sinks).end(t); e.Reason != cassette.EndCompleted || e.CloseCode != 1000 || e.CloseReason != "bye" {
		t.Errorf("clean end recorded as %+v, want completed, 1000 \"bye\"", e)
	}

	// The container closes first, with a code and a reason.
	sess = open(t, c, bidi.OpenInput{})
	peer = rc.accept(t)
	peer.writeClose(4001, "héllo")
	if mse := expectStreamError(t, sess); mse.ErrorCode_ != "4001" {
		t.Fatalf("ModelStreamError %+v", mse)
	}
	if e := (<-sinks).end(t); e.Reason != cassette.EndException || e.CloseCode != 4001 || e.CloseReason != "héllo" {
		t.Errorf("container's close recorded as %+v, want exception, 4001 \"héllo\"", e)
	}

	// The container's connection drops without a close frame.
	sess = open(t, c, bidi.OpenInput{})
	peer = rc.accept(t)
	sess.Send(ctx, bidi.Text("hello"))
	peer.readData()
	peer.c.Close()
	expectStreamError(t, sess)
	if e := (<-sinks).end(t); e.Reason != cassette.EndException || e.CloseCode != 1006 || e.CloseReason != "" {
		t.Errorf("dropped connection recorded as %+v, want exception, 1006", e)
	}

	if n := bridge.RecordedSessions(g.Handler()); n != 0 {
		t.Errorf("%d ended sessions still tracked", n)
	}
}
