package relay

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/sagemaker-bidi/sagemaker-bidi/bidi"
	"github.com/sagemaker-bidi/sagemaker-bidi/bidi/biditest"
)

// env is a relay in front of a biditest server, on loopback.
type env struct {
	srv    *biditest.Server
	client *bidi.Client
	h      *Handler
	hs     *httptest.Server
	gate   *gate
	web    *http.Client // the WebSocket clients' (newBubbleEnv); nil: net/http's default
}

// newEnv starts biditest with model (nil: Echo) and a relay with opts
// (Authorize accepts every request for endpoint "ep" unless opts says
// otherwise through authorize).
func newEnv(t testing.TB, model biditest.Handler, opts *Options, authorize AuthorizeFunc, mods ...func(*bidi.Client, *Options)) *env {
	t.Helper()
	return newEnvWith(t, nil, model, opts, authorize, mods...)
}

// newEnvWith is newEnv with clientOpt (if not nil) applied to the relay's
// bidi.Client's options.
func newEnvWith(t testing.TB, clientOpt func(*bidi.Options), model biditest.Handler, opts *Options, authorize AuthorizeFunc, mods ...func(*bidi.Client, *Options)) *env {
	t.Helper()
	srv := biditest.NewServer(model)
	t.Cleanup(srv.Close)
	client := srv.Client(func(o *bidi.Options) {
		o.RetryMaxAttempts = 1
		if clientOpt != nil {
			clientOpt(o)
		}
	})
	if authorize == nil {
		authorize = func(*http.Request) (*bidi.OpenInput, error) {
			return &bidi.OpenInput{EndpointName: "ep"}, nil
		}
	}
	h, err := New(client, authorize, withMods(client, opts, mods))
	if err != nil {
		t.Fatal(err)
	}
	e := &env{srv: srv, client: client, h: h, gate: newGate()}
	e.hs = httptest.NewUnstartedServer(h)
	e.hs.Listener = gateListener{e.hs.Listener, e.gate}
	e.hs.Start()
	t.Cleanup(func() {
		e.gate.open()
		e.hs.Close()
		h.Close()
	})
	return e
}

// withMods returns opts (nil: the defaults) changed by mods, a copy if
// there are any.
func withMods(client *bidi.Client, opts *Options, mods []func(*bidi.Client, *Options)) *Options {
	if len(mods) == 0 {
		return opts
	}
	var o Options
	if opts != nil {
		o = *opts
	}
	for _, m := range mods {
		m(client, &o)
	}
	return &o
}

// plainSessions makes newEnv's relay open plain sessions on its client.
func plainSessions(c *bidi.Client, o *Options) { o.Open = Sessions(c) }

func (e *env) url() string { return "ws" + strings.TrimPrefix(e.hs.URL, "http") }

// dial connects a client; it fails the test on error.
func (e *env) dial(t testing.TB) *websocket.Conn {
	t.Helper()
	c, _, err := websocket.Dial(t.Context(), e.url(), &websocket.DialOptions{HTTPClient: e.web})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.CloseNow() })
	c.SetReadLimit(1 << 20)
	return c
}

// readUntilClose reads every message until the connection ends and
// returns them with the close error.
func readUntilClose(t *testing.T, c *websocket.Conn) ([]bidi.Message, error) {
	t.Helper()
	var got []bidi.Message
	for {
		typ, b, err := c.Read(t.Context())
		if err != nil {
			return got, err
		}
		m := bidi.Message{Data: b, Type: bidi.DataTypeBinary}
		if typ == websocket.MessageText {
			m.Type = bidi.DataTypeUTF8
		}
		got = append(got, m)
	}
}

// wantClose checks that err is a close with code and, if reason is not
// empty, that reason.
func wantClose(t *testing.T, err error, code websocket.StatusCode, reason string) {
	t.Helper()
	var ce websocket.CloseError
	if !errors.As(err, &ce) {
		t.Fatalf("connection ended with %v, want close %d", err, code)
	}
	if ce.Code != code || (reason != "" && ce.Reason != reason) {
		t.Fatalf("close %d %q, want %d %q", ce.Code, ce.Reason, code, reason)
	}
}

// endOfInput recognises the text message "end".
func endOfInput(m bidi.Message) bool { return m.Type == bidi.DataTypeUTF8 && string(m.Data) == "end" }

// gate blocks the relay's writes to its clients while shut, so that a
// test can make a client's socket stall without relying on kernel buffer
// sizes.
type gate struct {
	mu   sync.Mutex
	shut bool
	ch   chan struct{} // closed when the gate opens
}

func newGate() *gate {
	ch := make(chan struct{})
	close(ch)
	return &gate{ch: ch}
}

func (g *gate) close() {
	g.mu.Lock()
	defer g.mu.Unlock()
	if !g.shut {
		g.shut, g.ch = true, make(chan struct{})
	}
}

func (g *gate) open() {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.shut {
		g.shut = false
		close(g.ch)
	}
}

func (g *gate) wait() {
	g.mu.Lock()
	ch := g.ch
	g.mu.Unlock()
	<-ch
}

type gateListener struct {
	net.Listener
	g *gate
}

func (l gateListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return gateConn{c, l.g}, nil
}

type gateConn struct {
	net.Conn
	g *gate
}

func (c gateConn) Write(p []byte) (int, error) {
	c.g.wait()
	return c.Conn.Write(p)
}

// fakeModel is a Model the test drives: Recv returns what the test puts
// in replies, Send records.
type fakeModel struct {
	replies  chan bidi.Message
	end      chan error // the error Recv returns after replies (nil: io.EOF)
	mu       sync.Mutex
	sent     []bidi.Message
	finished chan time.Duration // Finish's quiet, when called
	closed   chan struct{}
	once     sync.Once
}

func newFakeModel() *fakeModel {
	return &fakeModel{
		replies:  make(chan bidi.Message, 64),
		end:      make(chan error, 1),
		finished: make(chan time.Duration, 1),
		closed:   make(chan struct{}),
	}
}

func (f *fakeModel) Send(ctx context.Context, m bidi.Message) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.sent = append(f.sent, bidi.Message{Data: append([]byte(nil), m.Data...), Type: m.Type})
	return nil
}

func (f *fakeModel) Recv(ctx context.Context) (bidi.Message, error) {
	select {
	case m := <-f.replies:
		return m, nil
	case <-ctx.Done():
		return bidi.Message{}, ctx.Err()
	case <-f.closed:
		return bidi.Message{}, bidi.ErrSessionClosed
	case err := <-f.end:
		// A reply queued before the end comes first, as from a real
		// stream (select picks at random when both are ready).
		select {
		case m := <-f.replies:
			f.end <- err
			return m, nil
		default:
		}
		if err == nil {
			return bidi.Message{}, io.EOF
		}
		return bidi.Message{}, err
	}
}

func (f *fakeModel) CloseSend() error { return nil }
func (f *fakeModel) Close() error {
	f.once.Do(func() { close(f.closed) })
	return nil
}

// finishingModel adds Finish to a fakeModel: it records the call and
// ends the model cleanly.
type finishingModel struct{ *fakeModel }

func (f finishingModel) Finish(ctx context.Context, quiet time.Duration) error {
	f.finished <- quiet
	f.end <- nil
	return nil
}

func (f *fakeModel) sentMessages() []bidi.Message {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]bidi.Message(nil), f.sent...)
}
