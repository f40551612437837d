package bridge_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sagemaker-bidi/sagemaker-bidi/bidi"
	"github.com/sagemaker-bidi/sagemaker-bidi/examples/container/model"
	"github.com/sagemaker-bidi/sagemaker-bidi/examples/gateway/bridge"
)

// These tests run SDK → gateway → the sample container over loopback
// sockets.

// recvParts reads n parts.
func recvParts(t *testing.T, sess *bidi.Session, n int) []bidi.Part {
	t.Helper()
	ctx := testContext(t)
	var parts []bidi.Part
	for range n {
		p, err := sess.RecvPart(ctx)
		if err != nil {
			t.Fatalf("after %d parts (%s): %v", len(parts), describe(parts), err)
		}
		p.Data = append([]byte(nil), p.Data...)
		parts = append(parts, p)
	}
	return parts
}

// expectEOF checks that the stream ends cleanly.
func expectEOF(t *testing.T, sess *bidi.Session) {
	t.Helper()
	if m, err := sess.Recv(testContext(t)); err != io.EOF {
		t.Fatalf("Recv = %q, %v; want io.EOF", m.Data, err)
	}
}

// expectStreamError returns the ModelStreamError that ends the stream,
// after any messages.
func expectStreamError(t *testing.T, sess *bidi.Session) *bidi.ModelStreamError {
	t.Helper()
	ctx := testContext(t)
	for {
		m, err := sess.Recv(ctx)
		if err == nil {
			t.Logf("message before the error: %q", m.Data)
			continue
		}
		var mse *bidi.ModelStreamError
		if !errors.As(err, &mse) {
			t.Fatalf("Recv error = %v (%T), want a *bidi.ModelStreamError", err, err)
		}
		return mse
	}
}

func TestEchoTextAndBinary(t *testing.T) {
	g := startGateway(t, sampleContainer(t, model.Options{}))
	sess := open(t, g.client(t), bidi.OpenInput{ModelQueryString: "mode=echo&fragment=1000"})
	ctx := testContext(t)

	if err := sess.Send(ctx, bidi.Text("hello, gateway")); err != nil {
		t.Fatal(err)
	}
	got := recvParts(t, sess, 1)
	if want := (bidi.Part{Data: []byte("hello, gateway"), Type: bidi.DataTypeUTF8, Complete: true}); !equalParts(got, []bidi.Part{want}) {
		t.Fatalf("text echo = %s", describe(got))
	}

	// The container echoes binary as frames of 1000 bytes with FIN=0, then
	// an empty FIN=1 frame (coder/websocket's Writer): one part each.
	audio := bytes.Repeat([]byte{0, 1, 2, 3, 0xff}, 500) // 2500 bytes
	if err := sess.Send(ctx, bidi.Binary(audio)); err != nil {
		t.Fatal(err)
	}
	got = recvParts(t, sess, 4)
	want := []bidi.Part{
		{Data: audio[:1000], Type: bidi.DataTypeBinary},
		{Data: audio[1000:2000], Type: bidi.DataTypeBinary},
		{Data: audio[2000:], Type: bidi.DataTypeBinary},
		{Data: []byte{}, Type: bidi.DataTypeBinary, Complete: true},
	}
	if !equalParts(got, want) {
		t.Fatalf("binary echo parts = %d %s", len(got), describeSizes(got))
	}
	if err := sess.CloseSend(); err != nil {
		t.Fatal(err)
	}
	expectEOF(t, sess)
}

// The sample container's toy chat model streams one SSE event per text
// message; each arrives as one COMPLETE UTF8 part.
func TestChatStream(t *testing.T) {
	g := startGateway(t, sampleContainer(t, model.Options{}))
	sess := open(t, g.client(t), bidi.OpenInput{})
	ctx := testContext(t)
	req := `{"model":"toy","stream":true,"messages":[{"role":"user","content":"hi there"}]}`
	if err := sess.Send(ctx, bidi.Text(req)); err != nil {
		t.Fatal(err)
	}
	var answer strings.Builder
	for {
		p, err := sess.RecvPart(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if p.Type != bidi.DataTypeUTF8 || !p.Complete {
			t.Fatalf("part %s, want UTF8 COMPLETE", describe([]bidi.Part{p}))
		}
		data := string(p.Data)
		if !strings.HasPrefix(data, "data: ") || !strings.HasSuffix(data, "\n\n") {
			t.Fatalf("part %q is not one SSE event", data)
		}
		if data == "data: [DONE]\n\n" {
			break
		}
		var chunk struct {
			Choices []struct {
				Delta struct{ Content string } `json:"delta"`
			} `json:"choices"`
		}
		if err := json.Unmarshal([]byte(strings.TrimPrefix(data, "data: ")), &chunk); err != nil {
			t.Fatalf("event %q: %v", data, err)
		}
		for _, c := range chunk.Choices {
			answer.WriteString(c.Delta.Content)
		}
	}
	if got := answer.String(); !strings.Contains(got, "hi there") {
		t.Fatalf("answer = %q, want it to repeat the question", got)
	}
	sess.CloseSend()
	expectEOF(t, sess)
}

// ModelInvocationPath becomes the WebSocket's path and ModelQueryString
// its query; without them the path is /invocations-bidirectional-stream.
func TestPathAndQueryForwarded(t *testing.T) {
	g := startGateway(t, sampleContainer(t, model.Options{}))
	for _, tc := range []struct {
		in        bidi.OpenInput
		wantPath  string
		wantQuery string
	}{
		{bidi.OpenInput{ModelInvocationPath: "v1/chat/stream", ModelQueryString: "hello=true&mode=echo&close_reason=a%2Fb.~"},
			"/v1/chat/stream", "hello=true&mode=echo&close_reason=a%2Fb.~"},
		{bidi.OpenInput{ModelQueryString: "hello=true"}, "/invocations-bidirectional-stream", "hello=true"},
	} {
		sess := open(t, g.client(t), tc.in)
		m, err := sess.Recv(testContext(t))
		if err != nil {
			t.Fatal(err)
		}
		var hello struct{ Path, Query string }
		if err := json.Unmarshal(m.Data, &hello); err != nil || m.Type != bidi.DataTypeUTF8 {
			t.Fatalf("hello = %q (%v): %v", m.Data, m.Type, err)
		}
		if hello.Path != tc.wantPath || hello.Query != tc.wantQuery {
			t.Errorf("container saw path %q query %q, want %q %q", hello.Path, hello.Query, tc.wantPath, tc.wantQuery)
		}
		sess.CloseSend()
		expectEOF(t, sess)
	}
}

func TestInvokedVariant(t *testing.T) {
	url := sampleContainer(t, model.Options{})
	for _, variant := range []string{"", "Blue-2"} {
		g := startGateway(t, url, func(c *bridge.Config) { c.Variant = variant })
		want := variant
		if want == "" {
			want = "AllTraffic"
		}
		for _, target := range []string{"", want} {
			sess := open(t, g.client(t), bidi.OpenInput{TargetVariant: target})
			resp, err := sess.Response(testContext(t))
			if err != nil {
				t.Fatal(err)
			}
			if resp.InvokedProductionVariant != want {
				t.Errorf("variant %q, target %q: invoked variant %q, want %q", variant, target, resp.InvokedProductionVariant, want)
			}
		}
		// A variant the gateway does not serve is a 400 InputValidationError.
		sess := open(t, g.client(t), bidi.OpenInput{TargetVariant: "Green"})
		_, err := sess.Response(testContext(t))
		var ive *bidi.InputValidationError
		if !errors.As(err, &ive) || !strings.Contains(ive.Message, `"Green"`) {
			t.Errorf("target Green: %v, want an InputValidationError naming it", err)
		}
	}
}

// A container that refuses the upgrade gives 424 ModelError "Failed to
// establish WebSocket connection", with its status and body, as soon as
// it happens: the client has not closed its side.
func TestRefusedUpgrade(t *testing.T) {
	g := startGateway(t, sampleContainer(t, model.Options{}))
	sess := open(t, g.client(t), bidi.OpenInput{ModelQueryString: "refuse=503"})
	ctx := testContext(t)
	start := time.Now()
	_, err := sess.Recv(ctx) // no CloseSend: the error must not wait for it
	var me *bidi.ModelError
	if !errors.As(err, &me) {
		t.Fatalf("Recv = %v, want a *bidi.ModelError", err)
	}
	if me.Message != bridge.UpgradeFailedMessage || me.OriginalStatusCode != 503 ||
		!strings.Contains(me.OriginalMessage, "upgrade refused on request") {
		t.Fatalf("ModelError = %+v", *me)
	}
	var re *bidi.ResponseError
	if !errors.As(err, &re) || re.StatusCode != http.StatusFailedDependency {
		t.Fatalf("error %v is not an HTTP 424", err)
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Errorf("the 424 took %v", d)
	}
	if err := sess.Send(ctx, bidi.Text("late")); !errors.As(err, &me) {
		t.Errorf("Send after the 424 = %v, want the ModelError", err)
	}
}

// The bidi client retries the transient 424 on its own: the container sees
// every attempt.
func TestRefusedUpgradeRetried(t *testing.T) {
	var upgrades atomic.Int32
	h := model.NewHandler(model.Options{})
	url := serveContainer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/ping" {
			upgrades.Add(1)
		}
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(func() { h.Close() })
	g := startGateway(t, url)
	c := g.client(t, func(o *bidi.Options) { o.RetryMaxAttempts = 3; o.RetryMaxBackoff = time.Millisecond })
	sess := open(t, c, bidi.OpenInput{ModelQueryString: "refuse=503"})
	_, err := sess.Recv(testContext(t))
	var me *bidi.ModelError
	if !errors.As(err, &me) || me.Message != bridge.UpgradeFailedMessage {
		t.Fatalf("Recv = %v, want the ModelError", err)
	}
	if n := upgrades.Load(); n != 3 {
		t.Errorf("container saw %d upgrade attempts, want 3", n)
	}
}

// The gateway checks GET /ping on its own schedule, as SageMaker does,
// not per session: while the last check failed, sessions get no
// WebSocket and the client gets SageMaker's 424 ModelError, its
// OriginalMessage naming the failed check; once a check passes, sessions
// open.
func TestHealthCheckGatesSessions(t *testing.T) {
	var healthy atomic.Bool
	var upgrades atomic.Int32
	h := model.NewHandler(model.Options{})
	t.Cleanup(func() { h.Close() })
	url := serveContainer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch {
		case r.URL.Path != "/ping":
			upgrades.Add(1)
		case !healthy.Load():
			http.Error(w, "warming up", http.StatusServiceUnavailable)
			return
		}
		h.ServeHTTP(w, r)
	}))
	g := startGateway(t, url, func(c *bridge.Config) { c.HealthInterval = 20 * time.Millisecond })
	c := g.client(t)

	sess := open(t, c, bidi.OpenInput{})
	_, err := sess.Recv(testContext(t))
	var me *bidi.ModelError
	if !errors.As(err, &me) || me.Message != bridge.UpgradeFailedMessage || me.OriginalStatusCode != 503 ||
		!strings.HasPrefix(me.OriginalMessage, bridge.HealthFailedMessage) {
		t.Fatalf("unhealthy container: %v, want a 424 ModelError about the health check", err)
	}
	if n := upgrades.Load(); n != 0 {
		t.Errorf("the gateway opened %d WebSockets on an unhealthy container", n)
	}

	healthy.Store(true)
	waitFor(t, "a passing health check", func() bool { return g.Handler().Health(context.Background()) == nil })
	if !strings.Contains(g.logs.String(), "container healthy again") {
		t.Error("the log does not tell that the container recovered")
	}
	sess = open(t, c, bidi.OpenInput{ModelQueryString: "mode=echo"})
	ctx := testContext(t)
	sess.Send(ctx, bidi.Text("ok"))
	if m, err := sess.Recv(ctx); err != nil || string(m.Data) != "ok" {
		t.Fatalf("healthy container: %q, %v", m.Data, err)
	}
}

// Sessions cause no health check of their own: with a long interval, ten
// sessions find the container checked once.
func TestHealthCheckNotPerSession(t *testing.T) {
	var pings atomic.Int32
	h := model.NewHandler(model.Options{Defaults: "mode=echo"})
	t.Cleanup(func() { h.Close() })
	url := serveContainer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/ping" {
			pings.Add(1)
		}
		h.ServeHTTP(w, r)
	}))
	g := startGateway(t, url, func(c *bridge.Config) { c.HealthInterval = time.Hour })
	c := g.client(t)
	for i := range 10 {
		echoOnce(t, open(t, c, bidi.OpenInput{}), fmt.Sprint("session ", i))
	}
	if n := pings.Load(); n != 1 {
		t.Fatalf("%d health checks for 10 sessions, want 1 (at start)", n)
	}
}

// No container at all: the health check fails with the network error.
func TestNoContainer(t *testing.T) {
	g := startGateway(t, "ws://127.0.0.1:1") // nothing listens on port 1
	sess := open(t, g.client(t), bidi.OpenInput{})
	_, err := sess.Recv(testContext(t))
	var me *bidi.ModelError
	if !errors.As(err, &me) || me.Message != bridge.UpgradeFailedMessage ||
		!strings.Contains(me.OriginalMessage, "GET http://127.0.0.1:1/ping failed") || me.OriginalStatusCode != 0 {
		t.Fatalf("Recv = %v, want a 424 ModelError about /ping", err)
	}

	// Without the health check, the failed connection is the 424 SageMaker
	// returns.
	g = startGateway(t, "ws://127.0.0.1:1", func(c *bridge.Config) { c.HealthTimeout = -1 })
	sess = open(t, g.client(t), bidi.OpenInput{})
	_, err = sess.Recv(testContext(t))
	if !errors.As(err, &me) || me.Message != bridge.UpgradeFailedMessage || me.OriginalStatusCode != 0 {
		t.Fatalf("Recv = %v, want a 424 %q", err, bridge.UpgradeFailedMessage)
	}
}

// A container that closes mid-stream gives the client a ModelStreamError
// with the close code as ErrorCode and the reason in the Message, after
// the messages sent before the close.
func TestContainerClosesMidStream(t *testing.T) {
	g := startGateway(t, sampleContainer(t, model.Options{}))
	sess := open(t, g.client(t), bidi.OpenInput{ModelQueryString: "mode=echo&close_after=2&close_code=4001&close_reason=bye%20now"})
	ctx := testContext(t)
	for _, text := range []string{"one", "two"} {
		if err := sess.Send(ctx, bidi.Text(text)); err != nil {
			t.Fatal(err)
		}
		if m, err := sess.Recv(ctx); err != nil || string(m.Data) != text {
			t.Fatalf("echo of %q = %q, %v", text, m.Data, err)
		}
	}
	mse := expectStreamError(t, sess)
	if mse.ErrorCode_ != "4001" || mse.Message != `Model container closed the WebSocket connection (code 4001, reason "bye now")` {
		t.Fatalf("ModelStreamError = %+v", *mse)
	}
	if err := sess.Send(ctx, bidi.Text("three")); !errors.As(err, &mse) {
		t.Errorf("Send after the close = %v, want the ModelStreamError", err)
	}
}

// A container that drops its TCP connection without a close frame: 1006.
func TestContainerDropsConnection(t *testing.T) {
	g := startGateway(t, sampleContainer(t, model.Options{}))
	sess := open(t, g.client(t), bidi.OpenInput{ModelQueryString: "mode=echo&close_after=1&abrupt=true"})
	ctx := testContext(t)
	sess.Send(ctx, bidi.Text("one"))
	if m, err := sess.Recv(ctx); err != nil || string(m.Data) != "one" {
		t.Fatalf("echo = %q, %v", m.Data, err)
	}
	mse := expectStreamError(t, sess)
	if mse.ErrorCode_ != "1006" || !strings.Contains(mse.Message, "without a close frame (code 1006)") {
		t.Fatalf("ModelStreamError = %+v", *mse)
	}
}

// Garbage inside a frame is forwarded as it is: SageMaker never looks
// inside payloads, so a text frame that is not UTF-8 reaches the client as
// a UTF8 part with the same bytes.
func TestGarbageForwardedAsIs(t *testing.T) {
	g := startGateway(t, sampleContainer(t, model.Options{}))
	sess := open(t, g.client(t), bidi.OpenInput{ModelQueryString: "mode=echo&garbage_after=0"})
	got := recvParts(t, sess, 1)
	want := []byte{'g', 'a', 'r', 'b', 'a', 'g', 'e', ':', 0x80, 0xc0, 0xaf, 0xfe, 0xff}
	if !bytes.Equal(got[0].Data, want) || got[0].Type != bidi.DataTypeUTF8 || !got[0].Complete {
		t.Fatalf("garbage part = %s %x", describe(got), got[0].Data)
	}
	ctx := testContext(t)
	sess.Send(ctx, bidi.Text("still here"))
	if m, err := sess.Recv(ctx); err != nil || string(m.Data) != "still here" {
		t.Fatalf("echo after garbage = %q, %v", m.Data, err)
	}
}

// A container that never answers pings is given up after the configured
// number of missed pongs; the client gets a ModelStreamError.
func TestPingTimeout(t *testing.T) {
	t.Parallel() // mostly waiting: ping intervals
	for _, query := range []string{"mode=echo&no_pong=true", "mode=echo&deaf_after=0&hold=1m"} {
		t.Run(query, func(t *testing.T) {
			g := startGateway(t, sampleContainer(t, model.Options{}), func(c *bridge.Config) {
				c.PingInterval = 20 * time.Millisecond
				c.MaxMissedPongs = 3
				c.CloseTimeout = 200 * time.Millisecond
			})
			// From before Open: the gateway may start pinging before
			// Open returns (see TestAcceptDeadline).
			start := time.Now()
			sess := open(t, g.client(t), bidi.OpenInput{ModelQueryString: query})
			mse := expectStreamError(t, sess)
			elapsed := time.Since(start)
			if mse.ErrorCode_ != "1006" || mse.Message != "Model container did not answer 3 WebSocket pings sent every 20ms (code 1006)" {
				t.Fatalf("ModelStreamError = %+v", *mse)
			}
			// 3 missed intervals after the first ping: about 80 ms, plus at
			// most the close timeout for a deaf container.
			if elapsed < 60*time.Millisecond || elapsed > 2*time.Second {
				t.Errorf("ping timeout after %v", elapsed)
			}
		})
	}
}

// A container that answers pings keeps its session through many intervals.
func TestPingsAnswered(t *testing.T) {
	t.Parallel() // mostly waiting: 15 ping intervals
	g := startGateway(t, sampleContainer(t, model.Options{}), func(c *bridge.Config) {
		c.PingInterval = 20 * time.Millisecond
		c.MaxMissedPongs = 5
	})
	sess := open(t, g.client(t), bidi.OpenInput{ModelQueryString: "mode=echo"})
	ticks(t, testContext(t), sess, 10, 30*time.Millisecond) // 15 ping intervals
}

// ticks sends n ticks, pause apart, checks each one's echo, then ends the
// session and expects its clean end.
func ticks(t *testing.T, ctx context.Context, sess *bidi.Session, n int, pause time.Duration) {
	t.Helper()
	for i := range n {
		time.Sleep(pause)
		if err := sess.Send(ctx, bidi.Text("tick")); err != nil {
			t.Fatalf("send %d: %v", i, err)
		}
		if m, err := sess.Recv(ctx); err != nil || string(m.Data) != "tick" {
			t.Fatalf("echo %d = %q, %v", i, m.Data, err)
		}
	}
	sess.CloseSend()
	expectEOF(t, sess)
}

func equalParts(a, b []bidi.Part) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if !bytes.Equal(a[i].Data, b[i].Data) || a[i].Type != b[i].Type || a[i].Complete != b[i].Complete {
			return false
		}
	}
	return true
}

func describeSizes(parts []bidi.Part) string {
	var sb strings.Builder
	for _, p := range parts {
		state := "COMPLETE"
		if !p.Complete {
			state = "PARTIAL"
		}
		fmt.Fprintf(&sb, " %s/%s/%d", p.Type, state, len(p.Data))
	}
	return sb.String()
}
