package relay

import (
	"context"
	"net/http"
	"net/url"
	"path"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/coder/websocket"

	"github.com/sagemaker-bidi/sagemaker-bidi/bidi"
)

// AuthorizeFunc decides whether a WebSocket request may open a model
// session, and with which input: the endpoint, variant and routing the
// application chooses for this user (never taken blindly from the
// request). It runs before anything is opened or upgraded; an error
// refuses the request with its HTTP status (see [StatusError]; 403 when
// it has none). It may be called concurrently.
type AuthorizeFunc func(r *http.Request) (*bidi.OpenInput, error)

// A Handler relays WebSocket clients to model sessions: an http.Handler
// to mount where browsers, phones or any WebSocket client connect. Each
// request is, in order: checked to be a WebSocket upgrade (else 426),
// checked for its Origin (else 403), counted against MaxClients (else
// 503 with Retry-After), authorised by the AuthorizeFunc (else its
// status), given its model session through Options.Open (a refusal is
// reported as [CloseFor] or [HTTPStatusFor] says) and only then upgraded.
// Then every client message goes to the model as one message (binary as
// BINARY, text as UTF8) and every model message to the client, until
// one side ends; see the package documentation for how calls end.
//
// A Handler is safe for concurrent use. Shutdown ends its calls
// gracefully, Close at once; both refuse new requests with 503.
//
// The http.Server it runs on should bound what happens before the
// handler runs (ReadHeaderTimeout, MaxHeaderBytes): a relay's
// connections are hijacked, and the server's other timeouts do not
// apply to them.
type Handler struct {
	authorize AuthorizeFunc
	open      OpenFunc
	opts      Options
	obs       *observer

	slots chan struct{} // one token per call in progress (MaxClients)
	wg    sync.WaitGroup
	watch watchdog // hands off the calls' blocked deliveries

	// The calls from before their model is opened to their cleanup, so
	// that Shutdown and Close reach them (see track): a list through the
	// calls' own prev and next fields, which costs a call no allocation
	// (a context.AfterFunc per call and Handler event cost each a few
	// hundred bytes). Guarded by callsMu, as are draining and closed.
	callsMu  sync.Mutex
	calls    *call
	draining bool // Shutdown or Close was called: requests are refused, started calls end gracefully
	closed   bool // Close was called: calls end at once, opens are cancelled
}

// New returns a Handler that opens model sessions with client (through
// Options.Open, [Rotating] on client by default) for the requests
// authorize accepts. client may be nil when opts.Open is set.
func New(client *bidi.Client, authorize AuthorizeFunc, opts *Options) (*Handler, error) {
	if authorize == nil {
		return nil, ErrNoAuthorize
	}
	o := opts.resolved()
	open := o.Open
	if open == nil {
		if client == nil {
			return nil, ErrNoOpen
		}
		open = Rotating(client, nil)
	}
	tp, mp := o.TracerProvider, o.MeterProvider
	if client != nil {
		co := client.Options()
		if tp == nil {
			tp = co.TracerProvider
		}
		if mp == nil {
			mp = co.MeterProvider
		}
	}
	return &Handler{
		authorize: authorize,
		open:      open,
		opts:      o,
		obs:       newObserver(tp, mp),
		slots:     make(chan struct{}, o.MaxClients),
	}, nil
}

// Active returns the number of calls in progress.
func (h *Handler) Active() int { return len(h.slots) }

// Shutdown refuses new requests and ends every call gracefully: the
// model's input ends (see [Finisher]), its remaining replies are
// delivered and the client gets 1001 "going away". It returns once every
// call is over, or with ctx's error, after which it ends the calls still
// running at once, as Close does.
func (h *Handler) Shutdown(ctx context.Context) error {
	for _, c := range h.endCalls(false) {
		c.drain()
	}
	done := make(chan struct{})
	go func() { h.wg.Wait(); close(done) }()
	select {
	case <-done:
		h.watch.close()
		return nil
	case <-ctx.Done():
		h.Close()
		<-done
		return ctx.Err()
	}
}

// Close refuses new requests and ends every call at once: clients get
// 1001 "going away" and model sessions are closed. It waits for the
// calls' goroutines to exit.
func (h *Handler) Close() error {
	for _, c := range h.endCalls(true) {
		c.closeNow()
	}
	h.wg.Wait()
	h.watch.close()
	return nil
}

// ServeHTTP relays one WebSocket client; see Handler.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if !isUpgrade(r) {
		w.Header().Set("Connection", "Upgrade")
		w.Header().Set("Upgrade", "websocket")
		h.refuse(w, http.StatusUpgradeRequired, "WebSocket upgrade required")
		return
	}
	if !h.originAllowed(r) {
		h.refuse(w, http.StatusForbidden, "origin not allowed")
		return
	}
	if h.isDraining() {
		h.refuse(w, http.StatusServiceUnavailable, "shutting down")
		return
	}
	select {
	case h.slots <- struct{}{}:
	default:
		w.Header().Set("Retry-After", "1")
		h.refuse(w, http.StatusServiceUnavailable, "too many clients")
		return
	}
	h.wg.Add(1)
	release := func() {
		<-h.slots
		h.wg.Done()
	}
	started := false // the call took over release, cancel and stop
	defer func() {
		if !started {
			release()
		}
	}()

	in, err := h.authorize(r)
	if err != nil {
		status, msg := refusal(err)
		h.refuse(w, status, msg)
		return
	}
	if in == nil {
		h.refuse(w, http.StatusInternalServerError, "")
		return
	}

	// The call's context keeps the request's values (a trace, say) but
	// not its cancellation, and ends with the call or with Close.
	ctx, cancel := context.WithCancel(context.WithoutCancel(r.Context()))
	ctx, obs := h.obs.startCall(ctx, in.EndpointName)
	c := newCall(h, r, ctx, cancel, obs)
	if !h.track(c) {
		cancel()
		obs.end(websocket.StatusGoingAway, KindShutdown)
		h.refuse(w, http.StatusServiceUnavailable, "shutting down")
		return
	}
	defer func() {
		if !started {
			h.untrack(c)
			cancel()
		}
	}()
	model, err := h.openModel(ctx, cancel, in)
	if err != nil {
		code, reason := CloseFor(err)
		if h.opts.RefuseWithHTTPStatus {
			status := HTTPStatusFor(err)
			h.refuse(w, status, reason)
			obs.end(code, KindOpenRefused)
			return
		}
		var conn *clientConn
		ws, aerr := websocket.Accept(smallBufWriter{ResponseWriter: w, conn: &conn}, r, &websocket.AcceptOptions{InsecureSkipVerify: true})
		if aerr == nil {
			conn.limitReads(closeReadLimit)
			ws.Close(code, reason)
		}
		h.logEnd(r, code, KindOpenRefused)
		obs.end(code, KindOpenRefused)
		return
	}
	c.model = model
	ws, err := websocket.Accept(smallBufWriter{ResponseWriter: w, conn: &c.conn}, r, &websocket.AcceptOptions{
		InsecureSkipVerify: true, // checked above, before anything was opened
		OnPingReceived:     c.onPing,
	})
	if err != nil {
		model.Close()
		obs.end(websocket.StatusAbnormalClosure, KindClientGone)
		return
	}
	// The call goes on without this goroutine (net/http is done with a
	// hijacked connection once ServeHTTP returns): its pumps and timers
	// run it, and its cleanup releases the slot.
	c.release = release
	started = true
	c.start(ws)
}

// track adds c to the Handler's calls, unless Close was called: it then
// reports false, and c must not start.
func (h *Handler) track(c *call) bool {
	h.callsMu.Lock()
	defer h.callsMu.Unlock()
	if h.closed {
		return false
	}
	c.next = h.calls
	if h.calls != nil {
		h.calls.prev = c
	}
	h.calls = c
	return true
}

// untrack removes c from the Handler's calls; its cleanup calls it, or
// ServeHTTP for a call that did not start.
func (h *Handler) untrack(c *call) {
	h.callsMu.Lock()
	defer h.callsMu.Unlock()
	if c.prev != nil {
		c.prev.next = c.next
	} else if h.calls == c {
		h.calls = c.next
	}
	if c.next != nil {
		c.next.prev = c.prev
	}
	c.prev, c.next = nil, nil
}

// isDraining reports whether Shutdown or Close was called.
func (h *Handler) isDraining() bool {
	h.callsMu.Lock()
	defer h.callsMu.Unlock()
	return h.draining
}

// endCalls records that Shutdown (closed false) or Close (closed true)
// was called, and returns the calls in progress, for the caller to end
// outside the lock (ending one may start its cleanup, which untracks
// it). A call that starts later learns it in start (see call.started).
func (h *Handler) endCalls(closed bool) []*call {
	h.callsMu.Lock()
	defer h.callsMu.Unlock()
	h.draining = true
	h.closed = h.closed || closed
	var cs []*call
	for c := h.calls; c != nil; c = c.next {
		cs = append(cs, c)
	}
	return cs
}

// openModel opens the model side within OpenTimeout. ctx governs the
// session; cancel ends it, which is how the timeout stops an open.
func (h *Handler) openModel(ctx context.Context, cancel context.CancelFunc, in *bidi.OpenInput) (Model, error) {
	var timedOut atomic.Bool
	t := time.AfterFunc(h.opts.OpenTimeout, func() { timedOut.Store(true); cancel() })
	m, err := h.open(ctx, in)
	t.Stop()
	if err == nil && ctx.Err() != nil {
		m.Close()
		err = ctx.Err()
	}
	if err != nil && timedOut.Load() {
		err = ErrOpenTimeout
	}
	return m, err
}

// refuse answers a request before any upgrade.
func (h *Handler) refuse(w http.ResponseWriter, status int, msg string) {
	h.obs.refuse(status)
	if msg == "" {
		msg = http.StatusText(status)
	}
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(status)
	_, _ = w.Write([]byte(msg + "\n"))
}

// logRequest returns what a call keeps of its request r for ErrorLog:
// nothing without one, else a copy with r's context, method, URL, host,
// remote address and request URI, and no header or body, so that a
// running call does not keep r's header alive.
func (h *Handler) logRequest(r *http.Request) *http.Request {
	if h.opts.ErrorLog == nil {
		return nil
	}
	lr := &http.Request{
		Method: r.Method, URL: r.URL, Proto: r.Proto, ProtoMajor: r.ProtoMajor, ProtoMinor: r.ProtoMinor,
		Host: r.Host, RemoteAddr: r.RemoteAddr, RequestURI: r.RequestURI, Header: http.Header{},
	}
	return lr.WithContext(r.Context())
}

func (h *Handler) logEnd(r *http.Request, code websocket.StatusCode, kind string) {
	if h.opts.ErrorLog != nil && code != websocket.StatusNormalClosure {
		h.opts.ErrorLog(r, code, kind)
	}
}

// isUpgrade reports whether r asks for a WebSocket upgrade.
func isUpgrade(r *http.Request) bool {
	return r.Method == http.MethodGet &&
		headerHasToken(r.Header, "Connection", "upgrade") &&
		headerHasToken(r.Header, "Upgrade", "websocket")
}

func headerHasToken(h http.Header, key, token string) bool {
	for _, v := range h.Values(key) {
		for t := range strings.SplitSeq(v, ",") {
			if strings.EqualFold(strings.TrimSpace(t), token) {
				return true
			}
		}
	}
	return false
}

// originAllowed reports whether r's Origin may connect: no Origin, the
// request's own host, or a match of Options.OriginPatterns.
func (h *Handler) originAllowed(r *http.Request) bool {
	origin := r.Header.Get("Origin")
	if origin == "" || h.opts.InsecureSkipOriginCheck {
		return true
	}
	u, err := url.Parse(origin)
	if err != nil || u.Host == "" {
		return false
	}
	if strings.EqualFold(u.Host, r.Host) {
		return true
	}
	for _, p := range h.opts.OriginPatterns {
		target := u.Host
		if strings.Contains(p, "://") {
			target = u.Scheme + "://" + u.Host
		}
		if ok, _ := path.Match(strings.ToLower(p), strings.ToLower(target)); ok {
			return true
		}
	}
	return false
}
