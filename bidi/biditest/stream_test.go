package biditest

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/sagemaker-bidi/sagemaker-bidi/bidi"
	"github.com/sagemaker-bidi/sagemaker-bidi/eventstream"
	"github.com/sagemaker-bidi/sagemaker-bidi/internal/wire"
)

func TestEcho(t *testing.T) {
	s := newTestServer(t, Echo())
	rs := openRaw(t, s, "my-endpoint")

	if err := rs.sendText("hello"); err != nil {
		t.Fatal(err)
	}
	resp := rs.mustResponse()
	if resp.StatusCode != 200 || resp.ProtoMajor != 2 {
		t.Fatalf("status %d proto %s", resp.StatusCode, resp.Proto)
	}
	if ct := resp.Header.Get("Content-Type"); ct != "application/vnd.amazon.eventstream" {
		t.Errorf("Content-Type = %q", ct)
	}
	if resp.Header.Get("X-Amzn-Requestid") == "" {
		t.Error("no x-amzn-RequestId")
	}
	m := rs.mustNext()
	if wire.Classify(m) != wire.KindPayloadPart || string(m.Payload) != "hello" ||
		wire.String(m, "DataType") != "UTF8" || wire.String(m, "CompletionState") != "COMPLETE" {
		t.Fatalf("echo = %v %q", m.Headers, m.Payload)
	}
	if _, ok := m.Headers.Get(eventstream.ChunkSignatureHeader); ok {
		t.Error("response events must not be signed")
	}

	bin := []byte{0, 1, 2, 0xfe, 0xff}
	if err := rs.sendPart(wire.Part{Bytes: bin, DataType: wire.DataTypeBinary, CompletionState: wire.CompletionPartial, Padding: []byte("pad")}); err != nil {
		t.Fatal(err)
	}
	m = rs.mustNext()
	if !bytes.Equal(m.Payload, bin) || wire.String(m, "DataType") != "BINARY" || wire.String(m, "CompletionState") != "PARTIAL" {
		t.Fatalf("echo = %v %x", m.Headers, m.Payload)
	}
	if err := rs.end(); err != nil {
		t.Fatal(err)
	}
	if _, err := rs.next(); err != io.EOF {
		t.Fatalf("after end frame: %v, want io.EOF", err)
	}

	if v := s.Violations(); len(v) != 0 {
		t.Fatalf("violations: %v", v)
	}
	streams := s.Streams()
	if len(streams) != 1 {
		t.Fatalf("%d streams", len(streams))
	}
	st := streams[0]
	if st.EndpointName != "my-endpoint" || st.RequestID != resp.Header.Get("X-Amzn-Requestid") || st.Header.Get("X-Amz-Date") == "" {
		t.Errorf("stream = %+v", st)
	}
	got := st.Received()
	if len(got) != 2 {
		t.Fatalf("received %d parts", len(got))
	}
	if p := got[0]; string(p.Data) != "hello" || p.Type != bidi.DataTypeUTF8 || !p.Complete || !p.DataTypeSet || !p.CompletionStateSet || p.Padding != -1 {
		t.Errorf("part 0 = %+v", p)
	}
	if p := got[1]; !bytes.Equal(p.Data, bin) || p.Type != bidi.DataTypeBinary || p.Complete || p.Padding != 3 {
		t.Errorf("part 1 = %+v", p)
	}
	for i, p := range got {
		if p.EnvelopeLen < eventstream.Overhead+67+len(p.Data) || time.Since(p.Date) > time.Minute {
			t.Errorf("part %d: EnvelopeLen %d, Date %v", i, p.EnvelopeLen, p.Date)
		}
	}
}

func TestRecvReassembles(t *testing.T) {
	msgs := make(chan bidi.Message, 4)
	end := make(chan error, 1)
	s := newTestServer(t, HandlerFunc(func(st *Stream) {
		for {
			m, err := st.Recv()
			if err != nil {
				end <- err
				return
			}
			msgs <- m
			if err := st.Send(m); err != nil {
				end <- err
				return
			}
		}
	}))
	rs := openRaw(t, s, "e")
	parts := []wire.Part{
		{Bytes: []byte("hel"), DataType: wire.DataTypeUTF8, CompletionState: wire.CompletionPartial},
		{Bytes: []byte("lo "), DataType: wire.DataTypeUTF8, CompletionState: wire.CompletionPartial, Padding: []byte("xxxxxxxx")},
		{Bytes: []byte("world"), DataType: wire.DataTypeUTF8, CompletionState: wire.CompletionComplete},
		{Bytes: []byte{7, 8, 9}}, // no DataType, no CompletionState: one BINARY message
		{CompletionState: wire.CompletionComplete},
	}
	for _, p := range parts {
		if err := rs.sendPart(p); err != nil {
			t.Fatal(err)
		}
	}
	if err := rs.end(); err != nil {
		t.Fatal(err)
	}
	want := []bidi.Message{bidi.Text("hello world"), bidi.Binary([]byte{7, 8, 9}), {Data: []byte{}}}
	for i, w := range want {
		m := recvWithin(t, msgs, "message")
		if m.Type != w.Type || !bytes.Equal(m.Data, w.Data) || m.Data == nil {
			t.Errorf("message %d = %+v, want %+v", i, m, w)
		}
		e := rs.mustNext()
		if !bytes.Equal(e.Payload, w.Data) || wire.String(e, "DataType") != w.Type.String() || wire.String(e, "CompletionState") != "COMPLETE" {
			t.Errorf("echo %d = %v %q", i, e.Headers, e.Payload)
		}
	}
	if err := recvWithin(t, end, "end"); err != io.EOF {
		t.Fatalf("Recv at end = %v, want io.EOF", err)
	}
	if _, err := rs.next(); err != io.EOF {
		t.Fatalf("response end: %v", err)
	}
	rec := s.Streams()[0].Received()
	if len(rec) != 5 || rec[1].Padding != 8 || rec[3].DataTypeSet || rec[3].CompletionStateSet || !rec[3].Complete {
		t.Errorf("received = %+v", rec)
	}
}

func TestRecvLimits(t *testing.T) {
	t.Run("too large", func(t *testing.T) {
		errc := make(chan error, 1)
		s := newTestServer(t, HandlerFunc(func(st *Stream) {
			_, err := st.Recv()
			errc <- err
		}), func(s *Server) { s.MaxRecvMessageSize = 10 })
		rs := openRaw(t, s, "e")
		rs.sendPart(wire.Part{Bytes: []byte("123456"), CompletionState: wire.CompletionPartial})
		rs.sendPart(wire.Part{Bytes: []byte("789012"), CompletionState: wire.CompletionComplete})
		if err := recvWithin(t, errc, "Recv"); !errors.As(err, new(*bidi.MessageTooLargeError)) {
			t.Fatalf("Recv = %v, want a *bidi.MessageTooLargeError", err)
		}
	})
	t.Run("ends inside a message", func(t *testing.T) {
		errc := make(chan error, 1)
		s := newTestServer(t, HandlerFunc(func(st *Stream) {
			_, err := st.Recv()
			errc <- err
		}))
		rs := openRaw(t, s, "e")
		rs.sendPart(wire.Part{Bytes: []byte("12"), CompletionState: wire.CompletionPartial})
		rs.end()
		if err := recvWithin(t, errc, "Recv"); !errors.Is(err, io.ErrUnexpectedEOF) {
			t.Fatalf("Recv = %v, want io.ErrUnexpectedEOF", err)
		}
	})
}

func TestFailModelError(t *testing.T) {
	fields := map[string]any{
		"Message":            "Received server error (500) from primary with message \"boom\".",
		"OriginalStatusCode": 500,
		"OriginalMessage":    "boom",
		"LogStreamArn":       "arn:aws:logs:us-west-2:123456789012:log-group:/aws/sagemaker/Endpoints/e",
		"ErrorCode":          "ModelError",
	}
	failed := make(chan error, 1)
	s := newTestServer(t, HandlerFunc(func(st *Stream) {
		if _, err := st.RecvPart(); err != nil {
			failed <- err
			return
		}
		err := st.Fail(424, "ModelError", fields)
		if err == nil {
			if err2 := st.Send(bidi.Text("x")); !errors.Is(err2, ErrStreamDone) {
				err = errors.New("Send after Fail did not fail with ErrStreamDone")
			}
		}
		failed <- err
	}))
	rs := openRaw(t, s, "e")
	if err := rs.sendText("in"); err != nil {
		t.Fatal(err)
	}
	// The request body stays open: the error must arrive anyway.
	resp := rs.mustResponse()
	if err := recvWithin(t, failed, "Fail"); err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != 424 || resp.Header.Get("X-Amzn-ErrorType") != "ModelError" ||
		resp.Header.Get("Content-Type") != "application/json" || resp.Header.Get("X-Amzn-RequestId") == "" {
		t.Fatalf("response %d %v", resp.StatusCode, resp.Header)
	}
	var body map[string]any
	if err := json.NewDecoder(resp.Body).Decode(&body); err != nil {
		t.Fatal(err)
	}
	if body["OriginalStatusCode"] != float64(500) || body["Message"] != fields["Message"] || body["LogStreamArn"] != fields["LogStreamArn"] || len(body) != 5 {
		t.Errorf("body = %v", body)
	}
}

func TestFailAfterAccept(t *testing.T) {
	errc := make(chan error, 1)
	s := newTestServer(t, HandlerFunc(func(st *Stream) {
		st.Accept()
		errc <- st.Fail(500, "InternalServerError", nil)
	}))
	rs := openRaw(t, s, "e")
	if resp := rs.mustResponse(); resp.StatusCode != 200 {
		t.Fatalf("status %d", resp.StatusCode)
	}
	if err := recvWithin(t, errc, "Fail"); !errors.Is(err, errAccepted) {
		t.Fatalf("Fail after Accept = %v", err)
	}
}

// partD holds the response messages of docs/wire.md's vectors.txt Part D.
var partD = map[string]string{
	"ModelStreamError":      "000000a90000005e94c65e7d0f3a657863657074696f6e2d747970650700104d6f64656c53747265616d4572726f720d3a6d6573736167652d74797065070009657863657074696f6e0d3a636f6e74656e742d747970650700106170706c69636174696f6e2f6a736f6e7b224d657373616765223a226d6f64656c2073747265616d2062726f6b65222c224572726f72436f6465223a2253747265616d42726f6b656e227d76bc25c1",
	"InternalStreamFailure": "00000091000000635dffe12b0f3a657863657074696f6e2d74797065070015496e7465726e616c53747265616d4661696c7572650d3a6d6573736167652d74797065070009657863657074696f6e0d3a636f6e74656e742d747970650700106170706c69636174696f6e2f6a736f6e7b224d657373616765223a22696e7465726e616c206661696c757265227d9bae55f1",
	"error":                 "0000007600000066b7610e6b0d3a6d6573736167652d747970650700056572726f720b3a6572726f722d636f646507000d496e7465726e616c4572726f720e3a6572726f722d6d657373616765070022416e20696e7465726e616c20736572766572206572726f72206f636375727265642e8ba171ef",
	"unmodeled":             "000000810000005a621afea10f3a657863657074696f6e2d7479706507000c536f6d657468696e674e65770d3a6d6573736167652d74797065070009657863657074696f6e0d3a636f6e74656e742d747970650700106170706c69636174696f6e2f6a736f6e7b226d657373616765223a226e6577207468696e67227d70bbfe43",
}

func TestStreamErrorsMatchWire(t *testing.T) {
	s := newTestServer(t, HandlerFunc(func(st *Stream) {
		st.SendException("ModelStreamError", []byte(`{"Message":"model stream broke","ErrorCode":"StreamBroken"}`))
		st.SendException("InternalStreamFailure", []byte(`{"Message":"internal failure"}`))
		st.SendError("InternalError", "An internal server error occurred.")
		st.SendException("SomethingNew", []byte(`{"message":"new thing"}`))
	}))
	rs := openRaw(t, s, "e")
	resp := rs.mustResponse()
	got, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	want := partD["ModelStreamError"] + partD["InternalStreamFailure"] + partD["error"] + partD["unmodeled"]
	if hex.EncodeToString(got) != want {
		t.Fatalf("response body\n got %x\nwant %s", got, want)
	}
}

func TestSendMessageAndWriteRaw(t *testing.T) {
	s := newTestServer(t, HandlerFunc(func(st *Stream) {
		st.WriteRaw(encodeMessage(&eventstream.Message{Headers: eventstream.Headers{
			{Name: ":message-type", Value: eventstream.StringValue("event")},
			{Name: ":event-type", Value: eventstream.StringValue("FutureEvent")},
		}, Payload: []byte("{}")}))
		st.WriteRaw([]byte{0, 0, 0, 99, 1}) // a truncated frame
	}))
	rs := openRaw(t, s, "e")
	m := rs.mustNext()
	if wire.Classify(m) != wire.KindUnknownEvent {
		t.Fatalf("first message %v", m.Headers)
	}
	if _, err := rs.next(); !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Fatalf("truncated frame: %v", err)
	}
}

func TestInvokedVariantAndImplicitAccept(t *testing.T) {
	s := newTestServer(t, HandlerFunc(func(st *Stream) {
		st.SetInvokedVariant("variant-1")
	}))
	rs := openRaw(t, s, "e")
	resp := rs.mustResponse()
	if resp.StatusCode != 200 || resp.Header.Get("X-Amzn-Invoked-Production-Variant") != "variant-1" {
		t.Fatalf("%d %v", resp.StatusCode, resp.Header)
	}
	if _, err := rs.next(); err != io.EOF {
		t.Fatalf("empty stream: %v", err)
	}
}

func TestReset(t *testing.T) {
	s := newTestServer(t, HandlerFunc(func(st *Stream) {
		st.Send(bidi.Text("before reset"))
		st.Reset()
	}))
	rs := openRaw(t, s, "e")
	if m := rs.mustNext(); string(m.Payload) != "before reset" {
		t.Fatalf("first event %q", m.Payload)
	}
	_, err := rs.next()
	if err == nil || err == io.EOF || !strings.Contains(err.Error(), "INTERNAL_ERROR") {
		t.Fatalf("after Reset: %v, want a stream reset (INTERNAL_ERROR)", err)
	}
}

func TestResetBeforeAccept(t *testing.T) {
	s := newTestServer(t, HandlerFunc(func(st *Stream) { st.Reset() }))
	rs := openRaw(t, s, "e")
	if _, err := rs.response(); err == nil || !strings.Contains(err.Error(), "INTERNAL_ERROR") {
		t.Fatalf("response after Reset: %v", err)
	}
}

func TestHandlerReturnsWhileHelperSends(t *testing.T) {
	// A Send blocked by flow control in a helper goroutine must not outlive
	// the handler: the stream is reset and the Send fails.
	sendErr := make(chan error, 1)
	gotResponse := make(chan struct{})
	s := newTestServer(t, HandlerFunc(func(st *Stream) {
		go func() {
			big := make([]byte, 256<<10)
			for {
				if err := st.Send(bidi.Binary(big)); err != nil {
					sendErr <- err
					return
				}
			}
		}()
		select {
		case <-gotResponse: // the helper's first Send accepted the stream
		case <-st.Context().Done():
			return
		}
		// Return while the helper is inside a Send (the client does not
		// read, so it is blocked there for good once the window is full).
		if err := waitParked("github.com/sagemaker-bidi/sagemaker-bidi/bidi/biditest.(*Stream).Send"); err != nil {
			t.Error(err)
		}
	}))
	rs := openRaw(t, s, "e")
	rs.mustResponse() // and never read the body
	close(gotResponse)
	if err := recvWithin(t, sendErr, "helper Send"); err == nil {
		t.Fatal("helper Send succeeded after the handler returned")
	}
}

func TestSendBlocksUntilClientReads(t *testing.T) {
	progress := make(chan int, 1000)
	s := newTestServer(t, HandlerFunc(func(st *Stream) {
		chunk := make([]byte, 16<<10)
		for i := 0; i < 64; i++ { // 1 MiB: more than the client's stream window
			if err := st.Send(bidi.Binary(chunk)); err != nil {
				return
			}
			progress <- i
		}
	}))
	// A client with a 64 KiB stream window (Go's default is 4 MiB).
	tr := s.client.Transport.(*http.Transport).Clone()
	tr.HTTP2 = &http.HTTP2Config{MaxReceiveBufferPerStream: 64 << 10}
	defer tr.CloseIdleConnections()
	rs := openRaw(t, s, "e", func(o *rawOptions) { o.client = &http.Client{Transport: tr} })
	rs.mustResponse()
	last := -1
	for idle := false; !idle; {
		select {
		case last = <-progress:
		case <-time.After(200 * time.Millisecond):
			idle = true
		}
	}
	if last >= 63 {
		t.Fatalf("all Sends returned although the client read nothing")
	}
	n := 0
	for {
		_, err := rs.next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		n++
	}
	if n != 64 {
		t.Fatalf("client read %d events, want 64", n)
	}
}

func TestRecvVsClientGone(t *testing.T) {
	errc := make(chan error, 1)
	s := newTestServer(t, HandlerFunc(func(st *Stream) {
		st.Accept()
		_, err := st.RecvPart()
		<-st.Context().Done()
		errc <- err
	}))
	rs := openRaw(t, s, "e")
	rs.mustResponse()
	rs.cancel() // the client resets the stream
	err := recvWithin(t, errc, "RecvPart")
	if err == nil || errors.As(err, new(*Violation)) {
		t.Fatalf("RecvPart after client reset = %v, want a transport error", err)
	}
	if v := s.Violations(); len(v) != 0 {
		t.Fatalf("violations: %v", v)
	}
}

// TestDemoAnswerFlushedTogether checks that the demo model writes a
// streamed answer's parts back to back and flushes them together: a
// flush per part would put each in a TLS record of its own, and the
// answer below (well over a hundred parts) would take as many writes on
// the connection.
func TestDemoAnswerFlushedTogether(t *testing.T) {
	s := newTestServer(t, DemoModel(&DemoOptions{MaxCut: 4}))
	rs := openRaw(t, s, "demo")
	if err := rs.sendText("warm-up"); err != nil {
		t.Fatal(err)
	}
	if m := rs.mustNext(); string(m.Payload) != "warm-up" {
		t.Fatalf("echo %q", m.Payload)
	}
	s.mu.Lock()
	var conn *trackedConn
	for c := range s.conns {
		conn = c
	}
	s.mu.Unlock()
	if conn == nil {
		t.Fatal("no connection")
	}
	before := conn.writes.Load()
	if err := rs.sendText(`{"model":"demo","stream":true,"messages":[{"role":"user","content":"a longer question than most"}]}`); err != nil {
		t.Fatal(err)
	}
	var answer []byte
	parts := 0
	for !bytes.HasSuffix(answer, []byte("data: [DONE]\n\n")) {
		answer = append(answer, rs.mustNext().Payload...)
		parts++
	}
	writes := conn.writes.Load() - before
	if parts < 100 {
		t.Fatalf("the answer came in %d parts: not cut finely enough to tell", parts)
	}
	// The answer's DATA frames go out as net/http's buffer fills (about
	// 30 parts a write); a flush per part takes one or more writes each.
	if writes > uint64(parts/10) {
		t.Errorf("%d parts took %d writes on the connection", parts, writes)
	}
}
