package relay

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/sagemaker-bidi/sagemaker-bidi/bidi"
	"github.com/sagemaker-bidi/sagemaker-bidi/bidi/biditest"
)

// Every message is echoed once, in order, with its type; EndOfInput ends
// the call with 1000 after the last echo.
func TestEchoTextAndBinary(t *testing.T) {
	e := newEnv(t, nil, &Options{EndOfInput: endOfInput, FinishQuiet: time.Millisecond, ToModelQueueBytes: 1 << 20, ToClientQueueBytes: 1 << 20}, nil)
	c := e.dial(t)
	var want []bidi.Message
	for i := range 50 {
		m := bidi.Text(fmt.Sprintf(`{"n":%d}`, i))
		if i%2 == 1 {
			m = bidi.Binary(bytes.Repeat([]byte{byte(i)}, 100*i))
		}
		want = append(want, m)
		typ := websocket.MessageText
		if m.Type == bidi.DataTypeBinary {
			typ = websocket.MessageBinary
		}
		if err := c.Write(t.Context(), typ, m.Data); err != nil {
			t.Fatal(err)
		}
	}
	// A large message travels fragmented to the model and back whole.
	big := bidi.Binary(bytes.Repeat([]byte("0123456789abcdef"), 4<<10))
	want = append(want, big)
	if err := c.Write(t.Context(), websocket.MessageBinary, big.Data); err != nil {
		t.Fatal(err)
	}
	if err := c.Write(t.Context(), websocket.MessageText, []byte("end")); err != nil {
		t.Fatal(err)
	}
	got, err := readUntilClose(t, c)
	wantClose(t, err, websocket.StatusNormalClosure, "")
	if len(got) != len(want) {
		t.Fatalf("got %d messages, want %d", len(got), len(want))
	}
	for i := range want {
		if got[i].Type != want[i].Type || !bytes.Equal(got[i].Data, want[i].Data) {
			t.Fatalf("message %d: got %v %d bytes, want %v %d bytes", i, got[i].Type, len(got[i].Data), want[i].Type, len(want[i].Data))
		}
	}
	// The model saw the big message as parts and the end as a clean end.
	st := e.srv.Streams()
	if len(st) != 1 {
		t.Fatalf("%d streams, want 1", len(st))
	}
}

func TestInvalidUTF8(t *testing.T) {
	e := newEnv(t, nil, nil, nil)
	c := e.dial(t)
	if err := c.Write(t.Context(), websocket.MessageText, []byte{'o', 'k', 0xff}); err != nil {
		t.Fatal(err)
	}
	_, err := readUntilClose(t, c)
	wantClose(t, err, websocket.StatusInvalidFramePayloadData, "text message is not valid UTF-8")
}

// ErrorLog gets the call's close code and kind, and a copy of its
// request that keeps the URL and remote address but not the header.
func TestErrorLogGetsRequestCopy(t *testing.T) {
	type entry struct {
		r    *http.Request
		code websocket.StatusCode
		kind string
	}
	logged := make(chan entry, 4)
	e := newEnv(t, nil, &Options{ErrorLog: func(r *http.Request, code websocket.StatusCode, kind string) {
		logged <- entry{r, code, kind}
	}}, nil)
	c, _, err := websocket.Dial(t.Context(), e.url()+"/call?user=7", &websocket.DialOptions{
		HTTPHeader: http.Header{"X-Secret-Token": {"s3cret"}},
	})
	if err != nil {
		t.Fatal(err)
	}
	defer c.CloseNow()
	if err := c.Write(t.Context(), websocket.MessageText, []byte{0xff}); err != nil {
		t.Fatal(err)
	}
	_, err = readUntilClose(t, c)
	wantClose(t, err, websocket.StatusInvalidFramePayloadData, "")
	var got entry
	select {
	case got = <-logged:
	case <-t.Context().Done():
		t.Fatal("ErrorLog not called")
	}
	if got.code != websocket.StatusInvalidFramePayloadData || got.kind != KindInvalidUTF8 {
		t.Errorf("ErrorLog(%d, %q), want 1007 %q", got.code, got.kind, KindInvalidUTF8)
	}
	r := got.r
	if r.Method != http.MethodGet || r.URL.Path != "/call" || r.URL.Query().Get("user") != "7" || r.RemoteAddr == "" || r.Host == "" {
		t.Errorf("ErrorLog's request: %s %v host %q from %q", r.Method, r.URL, r.Host, r.RemoteAddr)
	}
	if len(r.Header) != 0 || r.Context() == nil {
		t.Errorf("ErrorLog's request keeps %d header fields (%v)", len(r.Header), r.Header)
	}
}

func TestMessageTooBig(t *testing.T) {
	e := newEnv(t, nil, &Options{MaxMessageSize: 1024}, nil)
	c := e.dial(t)
	if err := c.Write(t.Context(), websocket.MessageBinary, make([]byte, 2048)); err != nil {
		t.Fatal(err)
	}
	_, err := readUntilClose(t, c)
	wantClose(t, err, websocket.StatusMessageTooBig, "")
}

// A refused open reaches the client as a close code and the modeled
// message, never the body's other fields.
func TestRefusedOpenCloses(t *testing.T) {
	for _, tc := range []struct {
		status int
		typ    string
		fields map[string]any
		code   websocket.StatusCode
		reason string
		http   int
	}{
		{424, "ModelError", map[string]any{"Message": "Failed to establish WebSocket connection", "OriginalMessage": "secret-ish container text"},
			StatusBadGateway, "424 ModelError: Failed to establish WebSocket connection", 502},
		{400, "InputValidationError", map[string]any{"Message": "bad variant"},
			websocket.StatusInternalError, "400 InputValidationError: bad variant", 502},
		{503, "ServiceUnavailableError", map[string]any{"Message": "busy"},
			websocket.StatusTryAgainLater, "503 ServiceUnavailableError: busy", 503},
		{400, "ThrottlingException", map[string]any{"message": "Rate exceeded"},
			websocket.StatusTryAgainLater, "400 ThrottlingException: Rate exceeded", 503},
	} {
		t.Run(tc.typ, func(t *testing.T) {
			model := biditest.HandlerFunc(func(st *biditest.Stream) { st.Fail(tc.status, tc.typ, tc.fields) })
			e := newEnv(t, model, nil, nil)
			c, _, err := websocket.Dial(t.Context(), e.url(), nil)
			if err != nil {
				t.Fatal(err)
			}
			defer c.CloseNow()
			_, err = readUntilClose(t, c)
			wantClose(t, err, tc.code, tc.reason)
			if strings.Contains(err.Error(), "secret-ish") {
				t.Fatalf("close reason carries the container's message: %v", err)
			}

			e2 := newEnv(t, model, &Options{RefuseWithHTTPStatus: true}, nil)
			_, resp, err := websocket.Dial(t.Context(), e2.url(), nil)
			if err == nil || resp == nil || resp.StatusCode != tc.http {
				t.Fatalf("dial: %v, response %v; want status %d", err, resp, tc.http)
			}
			body, _ := io.ReadAll(resp.Body)
			if !strings.Contains(string(body), tc.reason) {
				t.Fatalf("body %q does not hold %q", body, tc.reason)
			}
		})
	}
}

// A refused authorisation is answered before anything is opened.
func TestAuthorizeRefuses(t *testing.T) {
	var opened atomic.Int32
	e := newEnv(t, nil, &Options{Open: func(ctx context.Context, in *bidi.OpenInput) (Model, error) {
		opened.Add(1)
		return nil, fmt.Errorf("must not open")
	}}, func(r *http.Request) (*bidi.OpenInput, error) {
		switch r.URL.Query().Get("who") {
		case "nobody":
			return nil, &StatusError{Status: http.StatusUnauthorized, Message: "log in first"}
		case "plain":
			return nil, fmt.Errorf("some internal detail")
		}
		return nil, &StatusError{Status: http.StatusTooManyRequests}
	})
	for _, tc := range []struct {
		who    string
		status int
		body   string
	}{
		{"nobody", 401, "log in first"},
		{"plain", 403, "Forbidden"},
		{"many", 429, "Too Many Requests"},
	} {
		_, resp, err := websocket.Dial(t.Context(), e.url()+"?who="+tc.who, nil)
		if err == nil || resp == nil || resp.StatusCode != tc.status {
			t.Fatalf("%s: dial %v, response %v; want %d", tc.who, err, resp, tc.status)
		}
		body, _ := io.ReadAll(resp.Body)
		if strings.TrimSpace(string(body)) != tc.body {
			t.Fatalf("%s: body %q, want %q", tc.who, body, tc.body)
		}
	}
	if n := opened.Load(); n != 0 {
		t.Fatalf("Open called %d times", n)
	}
}

func TestOriginCheck(t *testing.T) {
	e := newEnv(t, nil, &Options{OriginPatterns: []string{"app.example.com", "https://*.example.org"}}, nil)
	for _, tc := range []struct {
		origin string
		ok     bool
	}{
		{"https://evil.example", false},
		{"null", false},
		{"https://app.example.com", true},
		{"https://x.example.org", true},
		{"http://x.example.org", false},
		{"http://" + strings.TrimPrefix(e.hs.URL, "http://"), true}, // same host
	} {
		c, resp, err := websocket.Dial(t.Context(), e.url(), &websocket.DialOptions{HTTPHeader: http.Header{"Origin": {tc.origin}}})
		if tc.ok != (err == nil) {
			t.Fatalf("origin %q: dial error %v, want ok=%v", tc.origin, err, tc.ok)
		}
		if err == nil {
			c.CloseNow()
		} else if resp.StatusCode != http.StatusForbidden {
			t.Fatalf("origin %q: status %d, want 403", tc.origin, resp.StatusCode)
		}
	}
	// Not an upgrade at all.
	resp, err := http.Get(e.hs.URL)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusUpgradeRequired {
		t.Fatalf("plain GET: %d, want 426", resp.StatusCode)
	}
}

func TestMaxClients(t *testing.T) {
	// A short FinishQuiet: the first call ends soon after its close.
	e := newEnv(t, nil, &Options{MaxClients: 1, FinishQuiet: 10 * time.Millisecond}, nil)
	c := e.dial(t)
	_, resp, err := websocket.Dial(t.Context(), e.url(), nil)
	if err == nil || resp.StatusCode != http.StatusServiceUnavailable || resp.Header.Get("Retry-After") == "" {
		t.Fatalf("second client: %v %v, want 503 with Retry-After", err, resp)
	}
	c.Close(websocket.StatusNormalClosure, "")
	// Once the first call is over, its slot is free again.
	for e.h.Active() != 0 {
		time.Sleep(time.Millisecond) // polling the condition, not timing it
	}
	e.dial(t)
}

// The model's end reaches the client as CloseFor says, after the replies
// before it.
func TestModelEndCloseCode(t *testing.T) {
	model := biditest.HandlerFunc(func(st *biditest.Stream) {
		st.Accept()
		m, err := st.Recv()
		if err != nil {
			return
		}
		st.Send(m)
		st.SendException("ModelStreamError", []byte(`{"Message":"the model fell over","ErrorCode":"1011"}`))
	})
	// A plain session: a RotatingSession would reconnect instead.
	e := newEnv(t, model, nil, nil, plainSessions)
	c := e.dial(t)
	if err := c.Write(t.Context(), websocket.MessageText, []byte("hi")); err != nil {
		t.Fatal(err)
	}
	got, err := readUntilClose(t, c)
	wantClose(t, err, websocket.StatusInternalError, "ModelStreamError: the model fell over")
	if len(got) != 1 || string(got[0].Data) != "hi" {
		t.Fatalf("got %v, want the echo first", got)
	}
}

// A client's close frame ends the model's input gracefully (Finish), not
// by aborting the session.
func TestClientCloseFinishesModel(t *testing.T) {
	fm := newFakeModel()
	e := newEnv(t, nil, &Options{Open: func(context.Context, *bidi.OpenInput) (Model, error) {
		return finishingModel{fm}, nil
	}, FinishQuiet: 123 * time.Millisecond}, nil)
	c := e.dial(t)
	c.Write(t.Context(), websocket.MessageText, []byte("last words"))
	c.Close(websocket.StatusNormalClosure, "bye")
	select {
	case q := <-fm.finished:
		if q != 123*time.Millisecond {
			t.Fatalf("Finish quiet %v", q)
		}
	case <-t.Context().Done():
		t.Fatal("Finish was not called")
	}
	if s := fm.sentMessages(); len(s) != 1 || string(s[0].Data) != "last words" {
		t.Fatalf("model got %v", s)
	}
}

// EndOfInput keeps the model's input open through Finish, so a reply
// that comes after the client's last message still reaches it, then
// the close.
func TestEndOfInputDeliversLastReply(t *testing.T) {
	fm := newFakeModel()
	e := newEnv(t, nil, &Options{EndOfInput: endOfInput, Open: func(context.Context, *bidi.OpenInput) (Model, error) {
		return lateModel{fm}, nil
	}}, nil)
	c := e.dial(t)
	c.Write(t.Context(), websocket.MessageText, []byte("question"))
	c.Write(t.Context(), websocket.MessageText, []byte("end"))
	got, err := readUntilClose(t, c)
	wantClose(t, err, websocket.StatusNormalClosure, "")
	if len(got) != 1 || string(got[0].Data) != "late answer" {
		t.Fatalf("got %v, want the late answer", got)
	}
}

// lateModel answers only when Finish is called, as a model still
// thinking when the client's input ends.
type lateModel struct{ *fakeModel }

func (l lateModel) Finish(ctx context.Context, quiet time.Duration) error {
	l.replies <- bidi.Text("late answer")
	l.end <- nil
	return nil
}

func TestHooks(t *testing.T) {
	e := newEnv(t, nil, &Options{
		EndOfInput: endOfInput,
		ToModel: func(ctx context.Context, m bidi.Message) (bidi.Message, error) {
			if string(m.Data) == "skip" {
				return m, ErrSkip
			}
			return bidi.Text(strings.ToUpper(string(m.Data))), nil
		},
		ToClient: func(ctx context.Context, m bidi.Message) (bidi.Message, error) {
			if string(m.Data) == "BOOM" {
				return m, websocket.CloseError{Code: 4001, Reason: "boom seen"}
			}
			return bidi.Text("<" + string(m.Data) + ">"), nil
		},
	}, nil)
	c := e.dial(t)
	for _, s := range []string{"a", "skip", "b"} {
		c.Write(t.Context(), websocket.MessageText, []byte(s))
		if s == "skip" {
			continue
		}
		_, b, err := c.Read(t.Context())
		if want := "<" + strings.ToUpper(s) + ">"; err != nil || string(b) != want {
			t.Fatalf("after %q: %q %v, want %q", s, b, err, want)
		}
	}
	c.Write(t.Context(), websocket.MessageText, []byte("boom"))
	got, err := readUntilClose(t, c)
	wantClose(t, err, 4001, "boom seen")
	if len(got) != 0 {
		t.Fatalf("got %q after boom", got)
	}
}

// A client that does not read fills its queue; OverflowClose closes it
// with 1008 once the queue is full.
func TestOverflowClose(t *testing.T) {
	aborted := make(chan string, 1)
	taken := make(chan struct{}, 16)
	testHookAbort = func(kind string) { aborted <- kind }
	testHookPush = func(toModel bool, _ int, _ bool) {
		if toModel {
			taken <- struct{}{}
		}
	}
	// Reset after the env's cleanup (cleanups run last first), once the
	// relay's goroutines, which read the hooks, are gone.
	t.Cleanup(func() { testHookAbort, testHookPush = nil, nil })
	e := newEnv(t, nil, &Options{ToClientQueueBytes: 4 << 10, ToModelQueueBytes: 16 << 20}, nil)
	c := e.dial(t)
	e.gate.close()
	msg := make([]byte, 1000)
	// Each message once the relay took the one before, so that the
	// client is never further ahead than the relay reads while it closes
	// (see TestBlockedSendHandsReadingOn).
loop:
	for {
		if err := c.Write(t.Context(), websocket.MessageBinary, msg); err != nil {
			t.Fatal(err)
		}
		select {
		case <-taken:
		case kind := <-aborted:
			if kind != KindOverflow {
				t.Fatalf("aborted with %s", kind)
			}
			break loop
		}
	}
	e.gate.open()
	_, err := readUntilClose(t, c)
	wantClose(t, err, websocket.StatusPolicyViolation, "client too slow")
}

// OverflowDropOldest keeps the newest messages and counts the others.
func TestOverflowDropOldest(t *testing.T) {
	const n, size = 40, 1000
	e := newEnv(t, nil, &Options{ToClientQueueBytes: 8 << 10, ToModelQueueBytes: 1 << 20, Overflow: OverflowDropOldest, EndOfInput: endOfInput, FinishQuiet: time.Millisecond}, nil)
	dropOldestRun(t, e, n, size)
}

// dropOldestRun sends n echoed messages of size bytes through e's relay
// (Overflow: OverflowDropOldest, an 8 KiB queue to the client) while its
// writes to the client are held at the gate, so that the replies fill the
// queue and the oldest are dropped; then it opens the gate, ends the
// input and checks what the client got: some replies dropped, the others
// whole, in order and ending with the newest.
func dropOldestRun(t *testing.T, e *env, n, size int) {
	t.Helper()
	var pushed, dropped, in atomic.Int32
	done := make(chan struct{})
	testHookPush = func(toModel bool, d int, ok bool) {
		if toModel {
			in.Add(1)
		}
		if !toModel && ok {
			dropped.Add(int32(d))
			if pushed.Add(1) == int32(n) {
				close(done)
			}
		}
	}
	defer func() { testHookPush = nil }()
	c := e.dial(t)
	e.gate.close()
	for i := range n {
		if err := c.Write(t.Context(), websocket.MessageBinary, payload(i, size)); err != nil {
			t.Fatal(err)
		}
	}
	// Every reply was delivered at once (the first, whose write waits at
	// the gate) or went into the queue, most of them to be dropped.
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatalf("%d pushes, %d in", pushed.Load(), in.Load())
	}
	e.gate.open()
	c.Write(t.Context(), websocket.MessageText, []byte("end"))
	got, err := readUntilClose(t, c)
	wantClose(t, err, websocket.StatusNormalClosure, "")
	if len(got)+int(dropped.Load()) != n || dropped.Load() == 0 {
		t.Fatalf("got %d, dropped %d, want %d in all and some dropped", len(got), dropped.Load(), n)
	}
	checkSurvivors(t, got, size, n-1)
}

// checkSurvivors checks that the replies got are whole copies of what was
// sent (payload(id, size)), in order, and end with the last one sent.
func checkSurvivors(t *testing.T, got []bidi.Message, size, last int) {
	t.Helper()
	id := func(m bidi.Message) int { return int(m.Data[0]) | int(m.Data[1])<<8 }
	for i, m := range got {
		if string(m.Data) != string(payload(id(m), size)) {
			t.Fatalf("message %d (%d bytes) is not what was sent", id(m), len(m.Data))
		}
		if i > 0 && id(m) <= id(got[i-1]) {
			t.Fatalf("out of order: %d after %d", id(m), id(got[i-1]))
		}
	}
	if len(got) == 0 || id(got[len(got)-1]) != last {
		t.Fatalf("%d messages, the last not %d", len(got), last)
	}
}

func TestIdleTimeout(t *testing.T) {
	e := newEnv(t, nil, &Options{IdleTimeout: 20 * time.Millisecond, FinishQuiet: time.Millisecond}, nil)
	c := e.dial(t)
	_, err := readUntilClose(t, c)
	wantClose(t, err, websocket.StatusGoingAway, "idle timeout")
}

func TestPingFlood(t *testing.T) {
	e := newEnv(t, nil, &Options{MaxPingsPerSecond: 3}, nil)
	c := e.dial(t)
	errc := make(chan error, 1)
	go func() { _, err := readUntilClose(t, c); errc <- err }()
	for range 100 {
		ctx, cancel := context.WithTimeout(t.Context(), time.Second)
		err := c.Ping(ctx)
		cancel()
		if err != nil {
			break
		}
	}
	wantClose(t, <-errc, websocket.StatusPolicyViolation, "too many pings")
}

// Shutdown ends calls gracefully with 1001, after their replies.
func TestShutdown(t *testing.T) {
	e := newEnv(t, nil, &Options{FinishQuiet: time.Millisecond}, nil)
	c := e.dial(t)
	c.Write(t.Context(), websocket.MessageText, []byte("x"))
	if _, b, err := c.Read(t.Context()); err != nil || string(b) != "x" {
		t.Fatalf("echo %q %v", b, err)
	}
	errc := make(chan error, 1)
	go func() { _, err := readUntilClose(t, c); errc <- err }()
	if err := e.h.Shutdown(t.Context()); err != nil {
		t.Fatal(err)
	}
	wantClose(t, <-errc, websocket.StatusGoingAway, "going away")
	_, resp, err := websocket.Dial(t.Context(), e.url(), nil)
	if err == nil || resp.StatusCode != http.StatusServiceUnavailable {
		t.Fatalf("after Shutdown: %v", err)
	}
}

// A model whose Send blocks does not stop the relay from reading its
// client: the message being sent hands the reading on, the next ones
// fill the queue, and OverflowClose closes with "model too slow". The
// client writes each message once the relay has taken the one before
// (testHookPush): a client that ran ahead by more than the relay reads
// while it closes (closeReadLimit) would have its connection reset, as
// the relay's close handshake is bounded.
func TestBlockedSendHandsReadingOn(t *testing.T) {
	aborted := make(chan string, 1)
	taken := make(chan struct{}, 16)
	testHookAbort = func(kind string) { aborted <- kind }
	testHookPush = func(toModel bool, _ int, _ bool) {
		if toModel {
			taken <- struct{}{}
		}
	}
	// Reset after the env's cleanup (cleanups run last first), once the
	// relay's goroutines, which read the hooks, are gone.
	t.Cleanup(func() { testHookAbort, testHookPush = nil, nil })
	e := newEnv(t, nil, &Options{
		ToModelQueueBytes: 4 << 10,
		Open: func(context.Context, *bidi.OpenInput) (Model, error) {
			return stuckModel{newFakeModel()}, nil
		},
	}, nil)
	c := e.dial(t)
	msg := make([]byte, 1000)
	for i := 0; ; i++ {
		if err := c.Write(t.Context(), websocket.MessageBinary, msg); err != nil {
			t.Fatalf("write %d: %v", i, err)
		}
		select {
		case <-taken:
			continue
		case kind := <-aborted:
			if kind != KindOverflow {
				t.Fatalf("aborted with %s", kind)
			}
			if i < (4<<10)/1000 {
				t.Fatalf("aborted after %d messages, before the queue could be full", i+1)
			}
			_, err := readUntilClose(t, c)
			wantClose(t, err, websocket.StatusPolicyViolation, "model too slow")
			return
		}
	}
}

// stuckModel's Send blocks until the call ends.
type stuckModel struct{ *fakeModel }

func (m stuckModel) Send(ctx context.Context, _ bidi.Message) error {
	<-ctx.Done()
	return ctx.Err()
}
