package bidi_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/smithy-go"
	"golang.org/x/net/http2"

	"github.com/sagemaker-bidi/sagemaker-bidi/bidi"
	"github.com/sagemaker-bidi/sagemaker-bidi/bidi/biditest"
	"github.com/sagemaker-bidi/sagemaker-bidi/eventstream"
	"github.com/sagemaker-bidi/sagemaker-bidi/internal/wire"
)

// TestHTTPErrorBeforeCloseSend: an HTTP error (here a 424 ModelError)
// reaches a pending Recv, a pending Send and Response as soon as it
// arrives, without CloseSend, typed and with its fields.
func TestHTTPErrorBeforeCloseSend(t *testing.T) {
	fields := map[string]any{
		"Message": "Received server error (500) from model", "OriginalStatusCode": 500,
		"OriginalMessage": "boom", "LogStreamArn": "arn:aws:logs:us-west-2:1:log-group", "ErrorCode": "ModelError",
	}
	checkModelError := func(t *testing.T, what string, err error) {
		t.Helper()
		var me *bidi.ModelError
		if !errors.As(err, &me) || me.OriginalStatusCode != 500 || me.OriginalMessage != "boom" || me.Message != "Received server error (500) from model" {
			t.Fatalf("%s: %v (%T), want *ModelError with its fields", what, err, err)
		}
		var re *bidi.ResponseError
		if !errors.As(err, &re) || re.StatusCode != 424 || re.RequestID == "" {
			t.Fatalf("%s: %v, want *ResponseError with status 424 and request ID", what, err)
		}
		var api smithy.APIError
		if !errors.As(err, &api) || api.ErrorCode() != "ModelError" {
			t.Fatalf("%s: %v, want smithy.APIError ModelError", what, err)
		}
	}

	t.Run("pending Recv", func(t *testing.T) {
		release := make(chan struct{})
		srv := newServer(t, biditest.HandlerFunc(func(st *biditest.Stream) {
			<-release
			st.Fail(424, "ModelError", fields)
		}))
		ctx := testCtx(t)
		sess := open(t, srv.Client(noRetry), ctx)
		errc := make(chan error, 1)
		goBlocked(t, "(*Session).Recv", func() { _, err := sess.Recv(ctx); errc <- err })
		close(release)
		select {
		case err := <-errc:
			checkModelError(t, "pending Recv", err)
		case <-time.After(5 * time.Second):
			t.Fatal("pending Recv did not return the 424")
		}
		err := sess.Send(ctx, bidi.Text("x"))
		checkModelError(t, "later Send", err)
		_, err = sess.Response(ctx)
		checkModelError(t, "Response", err)
		if _, err := sess.Recv(ctx); err == nil {
			t.Fatal("second Recv succeeded")
		}
	})

	t.Run("pending Send", func(t *testing.T) {
		// The handler does not read, so Send blocks in flow control; the
		// 424 must unblock it.
		release := make(chan struct{})
		srv := newServer(t, biditest.HandlerFunc(func(st *biditest.Stream) {
			<-release
			st.Fail(424, "ModelError", fields)
		}), func(s *biditest.Server) { s.MaxReceiveBufferPerStream = 64 << 10 })
		ctx := testCtx(t)
		sess := open(t, srv.Client(noRetry, func(o *bidi.Options) { o.MaxPartSize = 4 << 10 }), ctx)
		errc := make(chan error, 1)
		goBlocked(t, "(*Session).Send", func() {
			for {
				if err := sess.Send(ctx, bidi.Binary(make([]byte, 8<<10))); err != nil {
					errc <- err
					return
				}
			}
		})
		select {
		case err := <-errc:
			t.Fatalf("Send failed before the error response: %v", err)
		default:
		}
		close(release)
		select {
		case err := <-errc:
			checkModelError(t, "pending Send", err)
		case <-time.After(5 * time.Second):
			t.Fatal("pending Send did not return the 424")
		}
		_, err := sess.Recv(ctx)
		checkModelError(t, "later Recv", err)
	})

	t.Run("Response", func(t *testing.T) {
		srv := newServer(t, biditest.HandlerFunc(func(st *biditest.Stream) {
			st.Fail(424, "ModelError", fields)
		}))
		ctx := testCtx(t)
		sess, err := srv.Client(noRetry).Open(ctx, &bidi.OpenInput{EndpointName: "ep"})
		if err != nil {
			checkModelError(t, "Open", err) // the error may beat Open
			return
		}
		defer sess.Close()
		_, err = sess.Response(ctx)
		checkModelError(t, "Response", err)
	})
}

func TestHTTPErrorTypes(t *testing.T) {
	cases := []struct {
		status    int
		errorType string
		check     func(error) bool
	}{
		{400, "InputValidationError", func(err error) bool { var e *bidi.InputValidationError; return errors.As(err, &e) }},
		{500, "InternalServerError", func(err error) bool { var e *bidi.InternalServerError; return errors.As(err, &e) }},
		{503, "ServiceUnavailableError", func(err error) bool { var e *bidi.ServiceUnavailableError; return errors.As(err, &e) }},
		{400, "ThrottlingException", func(err error) bool {
			var e *bidi.ResponseError
			return errors.As(err, &e) && e.Code == "ThrottlingException" && e.StatusCode == 400 && e.Message == "slow down"
		}},
		{502, "SomethingNew", func(err error) bool {
			var e *bidi.ResponseError
			return errors.As(err, &e) && e.Code == "SomethingNew" && e.StatusCode == 502 && e.Header.Get("X-Amzn-Errortype") == "SomethingNew"
		}},
	}
	for _, tc := range cases {
		t.Run(tc.errorType, func(t *testing.T) {
			srv := newServer(t, biditest.HandlerFunc(func(st *biditest.Stream) {
				st.Fail(tc.status, tc.errorType, map[string]any{"Message": "slow down", "ErrorCode": "E1"})
			}))
			ctx := testCtx(t)
			sess, err := srv.Client(noRetry).Open(ctx, &bidi.OpenInput{EndpointName: "ep"})
			if err == nil {
				defer sess.Close()
				_, err = sess.Recv(ctx)
			}
			if !tc.check(err) {
				t.Fatalf("got %v (%T)", err, err)
			}
		})
	}
}

// TestSendAfterModelStreamError: after a mid-stream ModelStreamError,
// Send returns that typed error, both when Recv has seen it and when
// nobody receives.
func TestSendAfterModelStreamError(t *testing.T) {
	handler := biditest.HandlerFunc(func(st *biditest.Stream) {
		st.Accept()
		if _, err := st.Recv(); err != nil {
			return
		}
		st.SendException("ModelStreamError", []byte(`{"Message":"container closed the WebSocket","ErrorCode":"ModelInvocationTimeExceeded"}`))
		<-st.Context().Done() // keep the stream open: no reset
	})
	check := func(t *testing.T, what string, err error) {
		t.Helper()
		var mse *bidi.ModelStreamError
		if !errors.As(err, &mse) || mse.ErrorCode_ != "ModelInvocationTimeExceeded" || mse.Message != "container closed the WebSocket" {
			t.Fatalf("%s = %v (%T), want *ModelStreamError", what, err, err)
		}
	}
	t.Run("after Recv", func(t *testing.T) {
		srv := newServer(t, handler)
		ctx := testCtx(t)
		sess := open(t, srv.Client(), ctx)
		if err := sess.Send(ctx, bidi.Text("go")); err != nil {
			t.Fatal(err)
		}
		_, err := sess.Recv(ctx)
		check(t, "Recv", err)
		check(t, "Send", sess.Send(ctx, bidi.Text("again")))
		_, err = sess.Recv(ctx)
		check(t, "second Recv", err)
		if resp, err := sess.Response(ctx); err != nil || resp.StatusCode != 200 {
			t.Fatalf("Response = %v, %v", resp, err)
		}
	})
	t.Run("without Recv", func(t *testing.T) {
		// The error is in-band and the stream stays open: only Recv,
		// which decodes, learns it (the session decodes nothing by
		// itself); Send carries on until then, and reports it after.
		srv := newServer(t, handler)
		ctx := testCtx(t)
		sess := open(t, srv.Client(), ctx)
		for _, m := range []string{"go", "still open"} {
			if err := sess.Send(ctx, bidi.Text(m)); err != nil {
				t.Fatalf("Send %q before Recv = %v, want nil (the stream is open)", m, err)
			}
		}
		_, err := sess.Recv(ctx)
		check(t, "Recv", err)
		check(t, "Send after Recv", sess.Send(ctx, bidi.Text("again")))
	})
}

func TestMidStreamErrors(t *testing.T) {
	cases := []struct {
		name  string
		send  func(st *biditest.Stream)
		check func(error) bool
	}{
		{"InternalStreamFailure", func(st *biditest.Stream) { st.SendException("InternalStreamFailure", []byte(`{"Message":"internal"}`)) },
			func(err error) bool {
				var e *bidi.InternalStreamFailure
				return errors.As(err, &e) && e.Message == "internal"
			}},
		{"unmodeled exception", func(st *biditest.Stream) { st.SendException("NewException", []byte(`{"Message":"new"}`)) },
			func(err error) bool {
				var e *bidi.ExceptionError
				return errors.As(err, &e) && e.Code == "NewException" && e.Message == "new"
			}},
		{"error message", func(st *biditest.Stream) { st.SendError("ThrottlingException", "too fast") },
			func(err error) bool {
				var e *bidi.ExceptionError
				return errors.As(err, &e) && e.Code == "ThrottlingException" && e.Message == "too fast"
			}},
		{"missing message type", func(st *biditest.Stream) { st.WriteRaw(encodeMessage(&eventstream.Message{Payload: []byte("?")})) },
			func(err error) bool { return errors.Is(err, bidi.ErrMalformedResponse) }},
		{"garbage", func(st *biditest.Stream) { st.WriteRaw([]byte("this is not an event stream at all")) },
			func(err error) bool { return errors.Is(err, bidi.ErrMalformedResponse) }},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			srv := newServer(t, biditest.HandlerFunc(func(st *biditest.Stream) {
				st.Send(bidi.Text("before"))
				tc.send(st)
			}))
			ctx := testCtx(t)
			sess := open(t, srv.Client(), ctx)
			m, err := sess.Recv(ctx)
			if err != nil || string(m.Data) != "before" {
				t.Fatalf("first Recv = %q, %v; the message before the error must come first", m.Data, err)
			}
			_, err = sess.Recv(ctx)
			if !tc.check(err) {
				t.Fatalf("Recv = %v (%T)", err, err)
			}
			if err2 := sess.Send(ctx, bidi.Text("x")); err2 == nil {
				t.Fatal("Send succeeded after a mid-stream error")
			}
		})
	}
}

func TestTruncatedStreams(t *testing.T) {
	frame, _ := eventstream.AppendMessage(nil, &eventstream.Message{
		Headers: wire.AppendPartHeaders(nil, &wire.Part{DataType: wire.DataTypeUTF8, CompletionState: wire.CompletionComplete}),
		Payload: []byte("a complete message"),
	})
	cases := []struct {
		name string
		h    func(st *biditest.Stream)
	}{
		{"cut inside a frame", func(st *biditest.Stream) { st.WriteRaw(frame[:len(frame)/2]) }},
		{"cut inside the prelude", func(st *biditest.Stream) { st.WriteRaw(frame[:5]) }},
		{"ended after a PARTIAL part", func(st *biditest.Stream) { st.SendPart(bidi.Part{Data: []byte("half")}) }},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			srv := newServer(t, biditest.HandlerFunc(func(st *biditest.Stream) {
				st.Send(bidi.Text("first"))
				tc.h(st)
			}))
			ctx := testCtx(t)
			sess := open(t, srv.Client(), ctx)
			if m, err := sess.Recv(ctx); err != nil || string(m.Data) != "first" {
				t.Fatalf("Recv = %q, %v", m.Data, err)
			}
			_, err := sess.Recv(ctx)
			if !errors.Is(err, io.ErrUnexpectedEOF) || err == io.EOF {
				t.Fatalf("Recv = %v, want an error wrapping io.ErrUnexpectedEOF", err)
			}
			if _, err2 := sess.Recv(ctx); !errors.Is(err2, io.ErrUnexpectedEOF) {
				t.Fatalf("second Recv = %v, want the same error", err2)
			}
		})
	}
	t.Run("reset", func(t *testing.T) {
		srv := newServer(t, biditest.HandlerFunc(func(st *biditest.Stream) {
			st.Send(bidi.Text("first"))
			st.WriteRaw(frame[:10]) // flushed: it reaches the client before the reset
			st.Reset()
		}))
		ctx := testCtx(t)
		sess := open(t, srv.Client(), ctx)
		sess.Recv(ctx)
		_, err := sess.Recv(ctx)
		if !errors.Is(err, io.ErrUnexpectedEOF) {
			t.Fatalf("Recv after RST_STREAM = %v, want an error wrapping io.ErrUnexpectedEOF", err)
		}
	})
	t.Run("reset after a PARTIAL part", func(t *testing.T) {
		srv := newServer(t, biditest.HandlerFunc(func(st *biditest.Stream) {
			st.SendPart(bidi.Part{Data: []byte("half")})
			st.Reset()
		}))
		ctx := testCtx(t)
		sess := open(t, srv.Client(), ctx)
		_, err := sess.Recv(ctx)
		if !errors.Is(err, io.ErrUnexpectedEOF) {
			t.Fatalf("Recv after RST_STREAM = %v, want an error wrapping io.ErrUnexpectedEOF", err)
		}
		// The reset's code stays reachable.
		var h2 *bidi.HTTP2Error
		if !errors.As(err, &h2) || h2.Code != http2.ErrCodeInternal || !h2.Remote || h2.GoAway {
			t.Fatalf("Recv after RST_STREAM = %v, want an *HTTP2Error with the server's INTERNAL_ERROR", err)
		}
		if _, err2 := sess.Recv(ctx); !errors.Is(err2, io.ErrUnexpectedEOF) {
			t.Fatalf("second Recv = %v, want the same error", err2)
		}
	})
	t.Run("Reader", func(t *testing.T) {
		srv := newServer(t, biditest.HandlerFunc(func(st *biditest.Stream) {
			st.SendPart(bidi.Part{Data: []byte("half")})
		}))
		ctx := testCtx(t)
		sess := open(t, srv.Client(), ctx)
		b, err := io.ReadAll(sess.Reader(ctx))
		if string(b) != "half" || !errors.Is(err, io.ErrUnexpectedEOF) {
			t.Fatalf("ReadAll = %q, %v", b, err)
		}
	})
}

func TestOversizeMessages(t *testing.T) {
	srv := newServer(t, biditest.HandlerFunc(func(st *biditest.Stream) {
		st.Send(bidi.Text("small 1"))
		for range 5 { // 5×600 bytes, over the limit of 1000
			st.SendPart(bidi.Part{Data: make([]byte, 600)})
		}
		st.SendPart(bidi.Part{Data: make([]byte, 600), Complete: true})
		st.Send(bidi.Text("small 2"))
		st.Send(bidi.Binary(make([]byte, 5000))) // one part over the limit
		st.Send(bidi.Text("small 3"))
	}))
	ctx := testCtx(t)
	sess := open(t, srv.Client(func(o *bidi.Options) { o.MaxMessageSize = 1000 }), ctx)
	want := []string{"small 1", "too large", "small 2", "too large", "small 3", "EOF"}
	for i, w := range want {
		m, err := sess.Recv(ctx)
		var got string
		var tooLarge *bidi.MessageTooLargeError
		switch {
		case err == io.EOF:
			got = "EOF"
		case errors.As(err, &tooLarge) && tooLarge.Limit == 1000:
			got = "too large"
		case err != nil:
			t.Fatalf("Recv %d: %v", i, err)
		default:
			got = string(m.Data)
		}
		if got != w {
			t.Fatalf("Recv %d = %q, want %q", i, got, w)
		}
	}
}

func TestUnknownEventsSkipped(t *testing.T) {
	srv := newServer(t, biditest.HandlerFunc(func(st *biditest.Stream) {
		st.WriteRaw(encodeMessage(&eventstream.Message{Headers: eventstream.Headers{
			{Name: wire.MessageTypeHeader, Value: eventstream.StringValue("event")},
			{Name: wire.EventTypeHeader, Value: eventstream.StringValue("FutureEvent")},
		}, Payload: []byte("{}")}))
		st.WriteRaw(encodeMessage(&eventstream.Message{Headers: eventstream.Headers{
			{Name: wire.MessageTypeHeader, Value: eventstream.StringValue("future-kind")},
		}}))
		st.Send(bidi.Text("known"))
	}))
	ctx := testCtx(t)
	sess := open(t, srv.Client(), ctx)
	m, err := sess.Recv(ctx)
	if err != nil || string(m.Data) != "known" {
		t.Fatalf("Recv = %q, %v", m.Data, err)
	}
	if _, err := sess.Recv(ctx); err != io.EOF {
		t.Fatalf("Recv = %v, want io.EOF", err)
	}
}

// TestNotHTTP2: a peer that answers over HTTP/1.1 fails the session with
// ErrNotHTTP2 before any stream.
func TestNotHTTP2(t *testing.T) {
	h1 := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
	}))
	h1.EnableHTTP2 = false
	h1.Config.ErrorLog = log.New(io.Discard, "", 0) // the failed ALPN handshake
	h1.StartTLS()
	defer h1.Close()
	cfg := aws.Config{Region: "us-west-2", Credentials: credentials.NewStaticCredentialsProvider("AKID", "SECRET", "")}
	ctx := testCtx(t)

	t.Run("default transport", func(t *testing.T) {
		c := bidi.NewFromConfig(cfg, func(o *bidi.Options) {
			o.BaseEndpoint = aws.String(h1.URL)
			o.TLSConfig = h1.Client().Transport.(*http.Transport).TLSClientConfig
		})
		_, err := c.Open(ctx, &bidi.OpenInput{EndpointName: "ep"})
		if !errors.Is(err, bidi.ErrNotHTTP2) {
			t.Fatalf("Open = %v, want ErrNotHTTP2 before any stream", err)
		}
	})
	// An http:// (h2c) URL pointing at a TLS port, and at an HTTP/1-only
	// cleartext server: Open fails at once, saying what the peer speaks.
	h1c := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	defer h1c.Close()
	for _, tc := range []struct{ name, url, hint string }{
		{"h2c to a TLS port", "http://" + h1.Listener.Addr().String(), "https://"},
		{"h2c to HTTP/1", h1c.URL, "HTTP/1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := bidi.NewFromConfig(cfg, func(o *bidi.Options) { o.BaseEndpoint = aws.String(tc.url) })
			_, err := c.Open(ctx, &bidi.OpenInput{EndpointName: "ep"})
			if !errors.Is(err, bidi.ErrNotHTTP2) || !strings.Contains(err.Error(), tc.hint) {
				t.Fatalf("Open = %v, want ErrNotHTTP2 mentioning %q", err, tc.hint)
			}
		})
	}
}

// TestErrorStringsHideEchoedContent: the container's OriginalMessage, which
// may echo request content, stays out of error strings.
func TestErrorStringsHideEchoedContent(t *testing.T) {
	srv := newServer(t, biditest.HandlerFunc(func(st *biditest.Stream) {
		st.Fail(424, "ModelError", map[string]any{"Message": "m", "OriginalMessage": "SECRET-ECHO"})
	}))
	ctx := testCtx(t)
	sess, err := srv.Client(noRetry).Open(ctx, &bidi.OpenInput{EndpointName: "ep"})
	if err == nil {
		defer sess.Close()
		_, err = sess.Recv(ctx)
	}
	if err == nil || strings.Contains(err.Error(), "SECRET-ECHO") {
		t.Fatalf("error %q", err)
	}
}

// TestSendCauseBehindUndeliveredMessages: the service sends messages,
// then a ModelStreamError, and ends the stream while the caller receives
// nothing. As with grpc, Send and CloseSend learn at once that the stream
// ended (ErrStreamEnded, CloseSend nil), without Recv and without the
// session decoding anything; Recv returns the messages and then the
// typed cause, which Send and CloseSend return from then on. The replies
// wait undecoded in the stream's buffer meanwhile.
func TestSendCauseBehindUndeliveredMessages(t *testing.T) {
	isMSE := func(err error) bool {
		var mse *bidi.ModelStreamError
		return errors.As(err, &mse) && mse.ErrorCode_ == "E" && mse.Message == "container died"
	}
	// drain receives n messages and then expects the ModelStreamError.
	drain := func(t *testing.T, ctx context.Context, sess *bidi.Session, n int) {
		t.Helper()
		for i := 0; i < n; i++ {
			if m, err := sess.Recv(ctx); err != nil || string(m.Data) != fmt.Sprint(i) {
				t.Fatalf("Recv %d = %q, %v", i, m.Data, err)
			}
		}
		if _, err := sess.Recv(ctx); !isMSE(err) {
			t.Fatalf("Recv after the messages = %v, want *ModelStreamError", err)
		}
	}
	for _, messages := range []int{0, 40, 100} {
		t.Run(fmt.Sprint(messages, " messages"), func(t *testing.T) {
			// The handler's first failed write, if any, explains a
			// failure below (a stream that carried nothing).
			handlerErr := make(chan error, 1)
			srv := newServer(t, biditest.HandlerFunc(func(st *biditest.Stream) {
				var err error
				for i := 0; i < messages && err == nil; i++ {
					err = st.Send(bidi.Text(fmt.Sprint(i)))
				}
				if err == nil {
					err = st.SendException("ModelStreamError", []byte(`{"Message":"container died","ErrorCode":"E"}`))
				}
				handlerErr <- err
			}))
			ctx := testCtx(t)
			sess := open(t, srv.Client(), ctx)
			if err := firstSendError(t, ctx, sess); !errors.Is(err, bidi.ErrStreamEnded) {
				t.Fatalf("Send before Recv = %v, want ErrStreamEnded", err)
			}
			if err := <-handlerErr; err != nil {
				t.Fatalf("the handler's write failed: %v (%s)", err, bidi.DescribeAttempt(sess))
			}
			if bidi.UnreadBytes(sess) == 0 {
				t.Fatalf("the replies were taken from the stream without Recv (%s)", bidi.DescribeAttempt(sess))
			}
			if err := sess.CloseSend(); err != nil {
				t.Fatalf("CloseSend before Recv = %v, want nil (the stream ended)", err)
			}
			drain(t, ctx, sess, messages)
			if err := sess.Send(ctx, bidi.Text("x")); !isMSE(err) {
				t.Fatalf("Send after Recv = %v, want *ModelStreamError", err)
			}
			if err := sess.CloseSend(); !isMSE(err) {
				t.Fatalf("CloseSend after Recv = %v, want *ModelStreamError", err)
			}
		})
	}
}

// TestUnexpectedPartValuesLenient: a PayloadPart whose DataType or
// CompletionState is outside the model's values does not end the stream:
// anything but UTF8 is binary, anything but PARTIAL completes the message.
func TestUnexpectedPartValuesLenient(t *testing.T) {
	part := func(dataType, state, payload string) *eventstream.Message {
		return &eventstream.Message{Headers: eventstream.Headers{
			{Name: wire.DataTypeHeader, Value: eventstream.StringValue(dataType)},
			{Name: wire.CompletionStateHeader, Value: eventstream.StringValue(state)},
			{Name: wire.EventTypeHeader, Value: eventstream.StringValue("PayloadPart")},
			{Name: wire.MessageTypeHeader, Value: eventstream.StringValue("event")},
		}, Payload: []byte(payload)}
	}
	srv := newServer(t, biditest.HandlerFunc(func(st *biditest.Stream) {
		st.WriteRaw(encodeMessage(part("TEXT", "COMPLETE", "a")))
		st.WriteRaw(encodeMessage(part("UTF8", "PARTIAL", "b1")))
		st.WriteRaw(encodeMessage(part("UTF8", "DONE", "b2")))
		st.WriteRaw(encodeMessage(part("utf8", "partial", "c")))
		st.Send(bidi.Text("known"))
	}))
	ctx := testCtx(t)
	sess := open(t, srv.Client(), ctx)
	for _, want := range []bidi.Message{
		bidi.Binary([]byte("a")), bidi.Text("b1b2"), bidi.Binary([]byte("c")), bidi.Text("known"),
	} {
		m, err := sess.Recv(ctx)
		if err != nil || string(m.Data) != string(want.Data) || m.Type != want.Type {
			t.Fatalf("Recv = %q (%v), %v; want %q (%v)", m.Data, m.Type, err, want.Data, want.Type)
		}
	}
	if _, err := sess.Recv(ctx); err != io.EOF {
		t.Fatalf("Recv = %v, want io.EOF", err)
	}
}

// TestResponseErrorShowsActualStatus: a modeled error that comes with
// another status than its modeled one is described with the status the
// service sent.
func TestResponseErrorShowsActualStatus(t *testing.T) {
	srv := newServer(t, biditest.HandlerFunc(func(st *biditest.Stream) {
		st.Fail(400, "ModelError", map[string]any{"Message": "bad model input"})
	}))
	ctx := testCtx(t)
	sess, err := srv.Client(noRetry).Open(ctx, &bidi.OpenInput{EndpointName: "ep"})
	if err == nil {
		_, err = sess.Response(ctx)
		sess.Close()
	}
	var re *bidi.ResponseError
	var me *bidi.ModelError
	if !errors.As(err, &re) || !errors.As(err, &me) || re.StatusCode != 400 {
		t.Fatalf("error %v, want a ResponseError 400 wrapping a ModelError", err)
	}
	if s := err.Error(); !strings.Contains(s, "ModelError (400)") || strings.Contains(s, "(424)") {
		t.Fatalf("Error() = %q, want the actual status 400", s)
	}
	if s := me.Error(); !strings.Contains(s, "ModelError (424)") {
		t.Fatalf("ModelError.Error() = %q, want its modeled status", s)
	}
}

// TestNoLookAheadPastException: the service sends 32 messages, a
// ModelStreamError and then an unknown event, and ends the stream while
// nobody receives. The stream's end must not make the session decode
// anything, nor Recv read on past the exception: the unknown event is
// never decoded (it would be logged).
func TestNoLookAheadPastException(t *testing.T) { synctest.Test(t, noLookAheadPastException) }

func noLookAheadPastException(t *testing.T) {
	srv, dial := newMemServer(t, biditest.HandlerFunc(func(st *biditest.Stream) {
		for i := 0; i < 32; i++ {
			st.Send(bidi.Text(fmt.Sprint(i)))
		}
		st.SendException("ModelStreamError", []byte(`{"Message":"container died","ErrorCode":"E"}`))
		st.WriteRaw(encodeMessage(&eventstream.Message{Headers: eventstream.Headers{
			{Name: wire.MessageTypeHeader, Value: eventstream.StringValue("event")},
			{Name: wire.EventTypeHeader, Value: eventstream.StringValue("AfterTheEnd")},
		}, Payload: []byte("{}")}))
	}))
	log := &captureLogger{}
	c := srv.Client(dial, func(o *bidi.Options) { o.Logger = log; o.ClientLogMode = aws.LogRetries })
	ctx := testCtx(t)
	sess := open(t, c, ctx)
	isMSE := func(err error) bool {
		var mse *bidi.ModelStreamError
		return errors.As(err, &mse) && mse.ErrorCode_ == "E"
	}
	if err := firstSendError(t, ctx, sess); !errors.Is(err, bidi.ErrStreamEnded) {
		t.Fatalf("Send = %v, want ErrStreamEnded", err) // the stream is over
	}
	// A negative check: nothing signals that an event did not happen,
	// but in the bubble nothing is left to happen once every goroutine
	// waits. By then the transport has stopped the request body, the
	// event that made a faulty session look ahead.
	synctest.Wait()
	for i := 0; i < 32; i++ {
		if m, err := sess.Recv(ctx); err != nil || string(m.Data) != fmt.Sprint(i) {
			t.Fatalf("Recv %d = %q, %v", i, m.Data, err)
		}
	}
	if _, err := sess.Recv(ctx); !isMSE(err) {
		t.Fatalf("Recv after the messages = %v, want *ModelStreamError", err)
	}
	if strings.Contains(log.text(), "AfterTheEnd") {
		t.Fatalf("the session decoded past the exception:\n%s", log.text())
	}
}

// TestOpenAfterStreamEnded: when the stream has already ended with an
// error by the time Open checks (the service answered, sent a message and
// cut the stream short), Open returns the session, whose Recv returns the
// message and then the error: Open fails only for a request that failed
// before the response headers. A hook makes Open check only once the
// session knows the stream is over, so that every case of its wait that
// can be is ready; over the iterations, any of them would be picked.
func TestOpenAfterStreamEnded(t *testing.T) {
	frame, _ := eventstream.AppendMessage(nil, &eventstream.Message{
		Headers: wire.AppendPartHeaders(nil, &wire.Part{DataType: wire.DataTypeUTF8, CompletionState: wire.CompletionComplete}),
		Payload: []byte("a complete message"),
	})
	srv := newServer(t, biditest.HandlerFunc(func(st *biditest.Stream) {
		st.Send(bidi.Text("first"))
		st.WriteRaw(frame[:len(frame)/2])
	}))
	t.Cleanup(bidi.SetOpenHook(func(s *bidi.Session) {
		select {
		case <-bidi.StreamOver(s):
		case <-time.After(5 * time.Second):
		}
	}))
	c := srv.Client()
	ctx := testCtx(t)
	for i := range 30 {
		sess, err := c.Open(ctx, &bidi.OpenInput{EndpointName: "my-endpoint"})
		if err != nil {
			t.Fatalf("Open %d = %v; the stream ended after the response: want the session", i, err)
		}
		if m, err := sess.Recv(ctx); err != nil || string(m.Data) != "first" {
			t.Fatalf("Recv %d = %q, %v", i, m.Data, err)
		}
		if _, err := sess.Recv(ctx); !errors.Is(err, io.ErrUnexpectedEOF) {
			t.Fatalf("Recv %d = %v, want an error wrapping io.ErrUnexpectedEOF", i, err)
		}
		sess.Close()
	}
}

// TestOversizePartNotBuffered: MaxMessageSize bounds what the session
// buffers, not only what it delivers: a 24 MiB PayloadPart against a
// 64 KiB limit streams through without being held in memory, is reported
// as *MessageTooLargeError, and the next message arrives.
func TestOversizePartNotBuffered(t *testing.T) {
	huge, err := eventstream.AppendMessage(nil, &eventstream.Message{
		Headers: wire.AppendPartHeaders(nil, &wire.Part{DataType: wire.DataTypeBinary, CompletionState: wire.CompletionComplete}),
		Payload: make([]byte, 24<<20-1024),
	})
	if err != nil {
		t.Fatal(err)
	}
	srv := newServer(t, biditest.HandlerFunc(func(st *biditest.Stream) {
		st.WriteRaw(huge)
		st.Send(bidi.Text("next"))
	}))
	ctx := testCtx(t)
	sess := open(t, srv.Client(func(o *bidi.Options) { o.MaxMessageSize = 64 << 10 }), ctx)
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	_, err = sess.Recv(ctx)
	var tooLarge *bidi.MessageTooLargeError
	if !errors.As(err, &tooLarge) {
		t.Fatalf("Recv = %v, want *MessageTooLargeError", err)
	}
	if m, err := sess.Recv(ctx); err != nil || string(m.Data) != "next" {
		t.Fatalf("Recv after the oversize part = %q, %v", m.Data, err)
	}
	runtime.ReadMemStats(&after)
	// The in-process server allocates too (HTTP/2 framing of 24 MiB),
	// but less than the part: the client must not hold it (buffering it
	// costs over 48 MiB, its growth steps included).
	if grown := after.TotalAlloc - before.TotalAlloc; grown > 20<<20 {
		t.Fatalf("%d MiB allocated while a 24 MiB part went by", grown>>20)
	}
}

// TestNotAnEventStream: a 200 without the event-stream content type is
// ErrMalformedResponse, also when its body is empty.
func TestNotAnEventStream(t *testing.T) {
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		w.WriteHeader(200)
	}))
	srv.EnableHTTP2 = true
	srv.StartTLS()
	defer srv.Close()
	cfg := aws.Config{Region: "us-west-2", Credentials: credentials.NewStaticCredentialsProvider("AKID", "SECRET", "")}
	c := bidi.NewFromConfig(cfg, func(o *bidi.Options) {
		o.BaseEndpoint = aws.String(srv.URL)
		o.TLSConfig = srv.Client().Transport.(*http.Transport).TLSClientConfig
	})
	ctx := testCtx(t)
	sess, err := c.Open(ctx, &bidi.OpenInput{EndpointName: "ep"})
	if err == nil {
		defer sess.Close()
		_, err = sess.Recv(ctx)
	}
	if !errors.Is(err, bidi.ErrMalformedResponse) {
		t.Fatalf("got %v, want ErrMalformedResponse", err)
	}
}
