package biditest

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/sagemaker-bidi/sagemaker-bidi/bidi"
	"github.com/sagemaker-bidi/sagemaker-bidi/internal/wire"
)

// Every 200 names the invoked variant: the request's TargetVariant, else
// the server's ProductionVariant, else AllTraffic; SetInvokedVariant wins.
func TestInvokedVariantOnEvery200(t *testing.T) {
	silent := HandlerFunc(func(st *Stream) {}) // accepts implicitly
	tests := []struct {
		name, serverVariant, target, set, want string
	}{
		{"default", "", "", "", "AllTraffic"},
		{"server field", "Blue", "", "", "Blue"},
		{"target variant", "Blue", "Green", "", "Green"},
		{"set by the handler", "Blue", "Green", "Canary", "Canary"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := silent
			if tt.set != "" {
				h = HandlerFunc(func(st *Stream) { st.SetInvokedVariant(tt.set) })
			}
			s := newTestServer(t, h, func(s *Server) { s.ProductionVariant = tt.serverVariant })
			rs := openRaw(t, s, "e", func(o *rawOptions) {
				if tt.target != "" {
					o.header.Set("X-Amzn-SageMaker-Target-Variant", tt.target)
				}
			})
			resp := rs.mustResponse()
			if resp.StatusCode != 200 || resp.Header.Get("X-Amzn-Invoked-Production-Variant") != tt.want {
				t.Fatalf("%d, variant %q; want 200, %q", resp.StatusCode, resp.Header.Get("X-Amzn-Invoked-Production-Variant"), tt.want)
			}
		})
	}
}

// The request checks answer the service model's InputValidationError,
// with the model's member name "Message".
func TestInputValidationErrorBody(t *testing.T) {
	s := newTestServer(t, nil)
	rs := openRaw(t, s, "bad_name")
	resp := rs.mustResponse()
	var body map[string]string
	if err := json.NewDecoder(resp.Body).Decode(&body); err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != 400 || resp.Header.Get("X-Amzn-ErrorType") != "InputValidationError" || !strings.Contains(body["Message"], "EndpointName") {
		t.Fatalf("%d %s %v", resp.StatusCode, resp.Header.Get("X-Amzn-ErrorType"), body)
	}
}

// expectException reads response messages up to an exception, checks its
// type and JSON members, then expects the clean end of the stream.
func expectException(t *testing.T, rs *rawStream, exceptionType, errorCode, messagePart string) []string {
	t.Helper()
	var echoed []string
	for {
		m := rs.mustNext()
		if wire.Classify(m) == wire.KindPayloadPart {
			echoed = append(echoed, string(m.Payload))
			continue
		}
		var body struct{ Message, ErrorCode string }
		if got := wire.String(m, ":exception-type"); got != exceptionType {
			t.Fatalf("message %v, want exception %s", m.Headers, exceptionType)
		}
		if err := json.Unmarshal(m.Payload, &body); err != nil || body.ErrorCode != errorCode || !strings.Contains(body.Message, messagePart) {
			t.Fatalf("%s body %s, want ErrorCode %q and a Message with %q", exceptionType, m.Payload, errorCode, messagePart)
		}
		break
	}
	if _, err := rs.next(); err != io.EOF {
		t.Fatalf("after the exception: %v, want the clean end of the stream", err)
	}
	return echoed
}

// A message over MaxRecvMessageSize ends Echo and DemoModel with the
// ModelStreamError 1009 a WebSocket container's read limit causes, not
// with a clean end.
func TestMessageTooLargeIsModelStreamError1009(t *testing.T) {
	for name, h := range map[string]Handler{"Echo": Echo(), "DemoModel": DemoModel(nil)} {
		t.Run(name, func(t *testing.T) {
			s := newTestServer(t, h, func(s *Server) { s.MaxRecvMessageSize = 1000 })
			rs := openRaw(t, s, "e")
			rs.sendText("small")
			for range 2 {
				rs.sendPart(wire.Part{Bytes: make([]byte, 600), DataType: wire.DataTypeBinary, CompletionState: wire.CompletionPartial})
			}
			echoed := expectException(t, rs, "ModelStreamError", "1009", "(code 1009, reason \"message too big: over 1000 bytes\")")
			if len(echoed) == 0 || echoed[0] != "small" {
				t.Fatalf("answers before the error: %q", echoed)
			}
		})
	}
}

// With WholeMessages, RecvPart returns the first part of a message only
// once its COMPLETE part has arrived: by then the server has received
// every part of it.
func TestWholeMessages(t *testing.T) {
	type seen struct {
		data     string
		received int // parts the server had received at that moment
	}
	got := make(chan seen, 8)
	errc := make(chan error, 1)
	s := newTestServer(t, HandlerFunc(func(st *Stream) {
		for {
			p, err := st.RecvPart()
			if err != nil {
				errc <- err
				return
			}
			got <- seen{string(p.Data), len(st.Received())}
		}
	}), func(s *Server) { s.WholeMessages = true })
	rs := openRaw(t, s, "e")
	rs.sendPart(wire.Part{Bytes: []byte("one"), DataType: wire.DataTypeUTF8, CompletionState: wire.CompletionComplete})
	for _, p := range []string{"a", "b"} {
		rs.sendPart(wire.Part{Bytes: []byte(p), DataType: wire.DataTypeBinary, CompletionState: wire.CompletionPartial})
	}
	rs.sendPart(wire.Part{Bytes: []byte("c"), DataType: wire.DataTypeBinary, CompletionState: wire.CompletionComplete})
	rs.sendPart(wire.Part{Bytes: []byte("dropped"), DataType: wire.DataTypeBinary, CompletionState: wire.CompletionPartial})
	rs.end()
	want := []seen{{"one", 1}, {"a", 4}, {"b", 4}, {"c", 4}}
	for i, w := range want {
		if g := recvWithin(t, got, "a part"); g != w {
			t.Fatalf("part %d: %+v, want %+v", i, g, w)
		}
	}
	if err := recvWithin(t, errc, "the end"); err != io.EOF {
		t.Fatalf("end: %v, want io.EOF (the unfinished message never reaches the model)", err)
	}
}

// WholeMessages bounds what it holds back by MaxRecvMessageSize.
func TestWholeMessagesLimit(t *testing.T) {
	s := newTestServer(t, Echo(), func(s *Server) { s.WholeMessages, s.MaxRecvMessageSize = true, 100 })
	rs := openRaw(t, s, "e")
	for range 3 {
		rs.sendPart(wire.Part{Bytes: make([]byte, 40), DataType: wire.DataTypeBinary, CompletionState: wire.CompletionPartial})
	}
	if echoed := expectException(t, rs, "ModelStreamError", "1009", "over 100 bytes"); len(echoed) != 0 {
		t.Fatalf("parts of an unfinished message were answered: %d", len(echoed))
	}
}

// At MaxStreamAge the client gets an InternalStreamFailure and the clean
// end of the stream; the handler's receive, send and context say why.
func TestMaxStreamAge(t *testing.T) {
	type result struct {
		recvErr, sendErr, cause error
	}
	res := make(chan result, 1)
	s := newTestServer(t, HandlerFunc(func(st *Stream) {
		m, err := st.Recv()
		if err == nil {
			st.Send(m)
			_, err = st.Recv() // blocks until the cap
		}
		res <- result{err, st.Send(bidi.Text("late")), context.Cause(st.Context())}
	}), func(s *Server) { s.MaxStreamAge = 300 * time.Millisecond })
	rs := openRaw(t, s, "e")
	rs.sendText("hello")
	echoed := expectException(t, rs, "InternalStreamFailure", "", "maximum duration")
	if len(echoed) != 1 || echoed[0] != "hello" {
		t.Fatalf("before the failure: %q", echoed)
	}
	r := recvWithin(t, res, "the handler")
	if !errors.Is(r.recvErr, ErrMaxStreamAge) || !errors.Is(r.sendErr, ErrMaxStreamAge) || !errors.Is(r.sendErr, ErrStreamDone) || r.cause != ErrMaxStreamAge {
		t.Fatalf("handler saw recv %v, send %v, cause %v", r.recvErr, r.sendErr, r.cause)
	}
}

// Close cancels the streams' contexts with cause ErrServerClosed.
func TestCloseCause(t *testing.T) {
	cause := make(chan error, 1)
	running := make(chan struct{})
	s := NewServer(HandlerFunc(func(st *Stream) {
		close(running)
		<-st.Context().Done()
		cause <- context.Cause(st.Context())
	}))
	defer s.Close()
	openRaw(t, s, "e").sendText("x")
	recvWithin(t, running, "the handler")
	s.Close()
	if err := recvWithin(t, cause, "the cause"); err != ErrServerClosed {
		t.Fatalf("cause %v, want ErrServerClosed", err)
	}
}

// Shutdown lets a running stream finish, refuses new connections, and
// returns once the stream is over; with a context that ends first it
// returns the context's error and Close ends the stream.
func TestShutdown(t *testing.T) {
	s := newTestServer(t, Echo())
	rs := openRaw(t, s, "e")
	rs.sendText("before")
	if m := rs.mustNext(); string(m.Payload) != "before" {
		t.Fatalf("echo %q", m.Payload)
	}
	done := make(chan error, 1)
	go func() { done <- s.Shutdown(context.Background()) }()

	// The running stream keeps working during the shutdown.
	rs.sendText("during")
	if m := rs.mustNext(); string(m.Payload) != "during" {
		t.Fatalf("echo %q", m.Payload)
	}
	rs.end()
	if _, err := rs.next(); err != io.EOF {
		t.Fatalf("end: %v", err)
	}
	if err := recvWithin(t, done, "Shutdown"); err != nil {
		t.Fatalf("Shutdown = %v", err)
	}
	req, _ := http.NewRequestWithContext(t.Context(), "POST", s.URL+"/", nil)
	if resp, err := s.client.Do(req); err == nil {
		resp.Body.Close()
		t.Fatal("a new request was served after Shutdown")
	}

	held := make(chan struct{})
	s2 := newTestServer(t, HandlerFunc(func(st *Stream) {
		close(held)
		<-st.Context().Done()
	}))
	openRaw(t, s2, "e").sendText("x")
	recvWithin(t, held, "the handler")
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if err := s2.Shutdown(ctx); err != context.DeadlineExceeded {
		t.Fatalf("Shutdown with a stuck stream = %v, want DeadlineExceeded", err)
	}
	s2.Close()
}
