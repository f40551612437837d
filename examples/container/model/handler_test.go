package model

import (
	"bytes"
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"
)

// fixedTime is the created time of chat completions in tests.
var fixedTime = time.Unix(1752128962, 0)

// constReader yields an endless run of one byte, for predictable ids.
type constReader byte

func (r constReader) Read(p []byte) (int, error) {
	for i := range p {
		p[i] = byte(r)
	}
	return len(p), nil
}

// newServer starts a Handler on a loopback httptest server; cleanup drops
// the sessions and stops the server.
func newServer(t *testing.T, opts Options) (*httptest.Server, *Handler) {
	t.Helper()
	if opts.Now == nil {
		opts.Now = func() time.Time { return fixedTime }
	}
	if opts.Rand == nil {
		opts.Rand = constReader(0xab)
	}
	h := NewHandler(opts)
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	t.Cleanup(func() { h.Close() })
	return srv, h
}

func testContext(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// dial opens a coder/websocket client connection to pathQuery on srv.
func dial(t *testing.T, srv *httptest.Server, pathQuery string) *websocket.Conn {
	t.Helper()
	c, resp, err := websocket.Dial(testContext(t), wsURL(srv, pathQuery), nil)
	if err != nil {
		if resp != nil {
			t.Fatalf("dial %s: %v (HTTP %d)", pathQuery, err, resp.StatusCode)
		}
		t.Fatalf("dial %s: %v", pathQuery, err)
	}
	t.Cleanup(func() { c.CloseNow() })
	return c
}

func wsURL(srv *httptest.Server, pathQuery string) string {
	return "ws" + strings.TrimPrefix(srv.URL, "http") + pathQuery
}

func TestPing(t *testing.T) {
	srv, _ := newServer(t, Options{})
	for _, tc := range []struct {
		method, path string
		want         int
	}{
		{http.MethodGet, "/ping", http.StatusOK},
		{http.MethodHead, "/ping", http.StatusOK},
		{http.MethodPost, "/ping", http.StatusMethodNotAllowed},
		{http.MethodGet, "/invocations-bidirectional-stream", http.StatusUpgradeRequired},
	} {
		req, _ := http.NewRequest(tc.method, srv.URL+tc.path, nil)
		resp, err := srv.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != tc.want {
			t.Errorf("%s %s = %d, want %d", tc.method, tc.path, resp.StatusCode, tc.want)
		}
	}
}

func TestUpgradeRefused(t *testing.T) {
	srv, _ := newServer(t, Options{})
	for _, tc := range []struct {
		query string
		want  int
	}{
		{"?refuse=503", http.StatusServiceUnavailable},
		{"?refuse=200", http.StatusOK},
		{"?bogus=1", http.StatusBadRequest},
		{"?close_code=1005", http.StatusBadRequest},
		{"?fragment=0", http.StatusBadRequest},
		{"?mode=sing", http.StatusBadRequest},
	} {
		_, resp, err := websocket.Dial(testContext(t), wsURL(srv, "/invocations-bidirectional-stream"+tc.query), nil)
		if err == nil {
			t.Errorf("%s: upgrade succeeded", tc.query)
			continue
		}
		if resp == nil || resp.StatusCode != tc.want {
			t.Errorf("%s: response %v, err %v; want HTTP %d", tc.query, resp, err, tc.want)
		}
	}
}

func TestDefaultsAndQuery(t *testing.T) {
	if err := CheckQuery("mode=echo&fragment=256&delay=5ms"); err != nil {
		t.Fatal(err)
	}
	if err := CheckQuery("mode=echo&frgment=256"); err == nil || !strings.Contains(err.Error(), `"frgment"`) {
		t.Fatalf("CheckQuery(typo) = %v", err)
	}
	b, err := parseBehavior("mode=echo&fragment=256", "fragment=10")
	if err != nil {
		t.Fatal(err)
	}
	if b.mode != modeEcho || b.fragment != 10 {
		t.Fatalf("behavior = %+v, want echo mode with the query's fragment size", b)
	}
	for _, name := range []string{"mode", "close_after", "deaf_after", "no_pong"} {
		if !strings.Contains(QueryHelp(), name) {
			t.Errorf("QueryHelp does not describe %s", name)
		}
	}

	// Options.Defaults apply; the connection's query overrides them.
	srv, _ := newServer(t, Options{Defaults: "refuse=503"})
	_, resp, err := websocket.Dial(testContext(t), wsURL(srv, "/"), nil)
	if err == nil || resp == nil || resp.StatusCode != http.StatusServiceUnavailable {
		t.Fatalf("dial with refuse default: %v, %v", resp, err)
	}
	c := dial(t, srv, "/?refuse=0")
	ctx := testContext(t)
	if err := c.Write(ctx, websocket.MessageText, []byte("hi")); err != nil {
		t.Fatal(err)
	}
	if _, p, err := c.Read(ctx); err != nil || string(p) != "hi" {
		t.Fatalf("read = %q, %v", p, err)
	}
}

func TestReadLimit(t *testing.T) {
	srv, _ := newServer(t, Options{ReadLimit: 1000})
	c := dial(t, srv, "/invocations-bidirectional-stream")
	ctx := testContext(t)
	if err := c.Write(ctx, websocket.MessageBinary, bytes.Repeat([]byte{1}, 2000)); err != nil {
		t.Fatal(err)
	}
	_, _, err := c.Read(ctx)
	if got := websocket.CloseStatus(err); got != websocket.StatusMessageTooBig {
		t.Fatalf("read after a too big message: %v, want close 1009", err)
	}
}

func TestShutdown(t *testing.T) {
	srv, h := newServer(t, Options{})
	c := dial(t, srv, "/invocations-bidirectional-stream")
	ctx := testContext(t)

	readErr := make(chan error, 1)
	go func() {
		_, _, err := c.Read(ctx)
		readErr <- err
	}()
	if err := h.Shutdown(ctx); err != nil {
		t.Fatalf("Shutdown: %v", err)
	}
	var ce websocket.CloseError
	if err := <-readErr; !errors.As(err, &ce) || ce.Code != websocket.StatusGoingAway {
		t.Fatalf("client read during shutdown: %v, want close 1001", err)
	}
	_, resp, err := websocket.Dial(ctx, wsURL(srv, "/"), nil)
	if err == nil || resp == nil || resp.StatusCode != http.StatusServiceUnavailable {
		t.Fatalf("dial after shutdown: %v, %v; want HTTP 503", resp, err)
	}
}
