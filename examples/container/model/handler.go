package model

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/coder/websocket"
)

// DefaultReadLimit is the largest message a session reads when
// [Options.ReadLimit] is zero.
const DefaultReadLimit = 32 << 20

// Options configure a [Handler]. The zero value is ready to use.
type Options struct {
	// Defaults is a query string of behaviour parameters (see the package
	// documentation) applied to every connection before the connection's
	// own query string, e.g. "mode=echo&fragment=256". An invalid value
	// makes every upgrade fail with 400; check it first with [CheckQuery].
	Defaults string

	// ReadLimit is the largest message, in bytes, a session reads; a larger
	// one closes the connection with 1009 (message too big). Zero means
	// [DefaultReadLimit].
	ReadLimit int64

	// Logger receives one line per connection; nil discards them.
	Logger *slog.Logger

	// Now gives the "created" time of chat completions; nil means
	// time.Now.
	Now func() time.Time

	// Rand supplies the random part of chat completion ids; nil means
	// crypto/rand. It is called with the handler's lock held, so it need
	// not be safe for concurrent use.
	Rand io.Reader
}

// Handler serves the SageMaker container contract: GET /ping answers 200,
// and a WebSocket upgrade on any path starts a session whose behaviour
// comes from [Options.Defaults] and the request's query string.
//
// A Handler may serve many connections at once; Shutdown and Close may be
// called from any goroutine, more than once. Sessions outlive
// http.Server.Shutdown, because their connections are hijacked: call
// [Handler.Shutdown] or [Handler.Close] to end them.
type Handler struct {
	opts   Options
	log    *slog.Logger
	ctx    context.Context // parent of every session; canceled by Close
	cancel context.CancelFunc

	mu       sync.Mutex
	closing  bool
	sessions map[*websocket.Conn]struct{}
	wg       sync.WaitGroup
}

// NewHandler returns a Handler configured by opts.
func NewHandler(opts Options) *Handler {
	if opts.ReadLimit == 0 {
		opts.ReadLimit = DefaultReadLimit
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.Rand == nil {
		opts.Rand = rand.Reader
	}
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	ctx, cancel := context.WithCancel(context.Background())
	return &Handler{
		opts:     opts,
		log:      log,
		ctx:      ctx,
		cancel:   cancel,
		sessions: make(map[*websocket.Conn]struct{}),
	}
}

// ServeHTTP answers GET and HEAD /ping with 200, upgrades WebSocket
// requests on any path, and answers other requests with 426 Upgrade
// Required. A query string that does not parse is refused with 400, and a
// Handler that is shutting down refuses upgrades with 503.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if !isUpgrade(r) {
		switch {
		case r.URL.Path == "/ping" && (r.Method == http.MethodGet || r.Method == http.MethodHead):
			w.WriteHeader(http.StatusOK)
		case r.URL.Path == "/ping":
			w.Header().Set("Allow", "GET, HEAD")
			http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
		default:
			w.Header().Set("Upgrade", "websocket")
			http.Error(w, "this container speaks WebSocket: upgrade required", http.StatusUpgradeRequired)
		}
		return
	}
	b, err := parseBehavior(h.opts.Defaults, r.URL.RawQuery)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	if b.refuse != 0 {
		http.Error(w, "upgrade refused on request (refuse query parameter)", b.refuse)
		return
	}
	if !h.enter() {
		http.Error(w, "shutting down", http.StatusServiceUnavailable)
		return
	}
	defer h.wg.Done()
	h.serveSession(w, r, b)
}

func isUpgrade(r *http.Request) bool {
	for _, v := range r.Header.Values("Upgrade") {
		for _, tok := range strings.Split(v, ",") {
			if strings.EqualFold(strings.TrimSpace(tok), "websocket") {
				return true
			}
		}
	}
	return false
}

// enter counts a starting session unless the handler is closing.
func (h *Handler) enter() bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closing {
		return false
	}
	h.wg.Add(1)
	return true
}

// track registers an accepted connection for Shutdown and Close; it
// reports false if the handler started closing after the session entered.
func (h *Handler) track(c *websocket.Conn) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closing {
		return false
	}
	h.sessions[c] = struct{}{}
	return true
}

func (h *Handler) untrack(c *websocket.Conn) {
	h.mu.Lock()
	delete(h.sessions, c)
	h.mu.Unlock()
}

// Shutdown refuses new sessions, closes the open ones with 1001 (going
// away) and waits for them to end. If ctx ends first, it drops the
// remaining connections as [Handler.Close] does and returns ctx's error.
// Deaf sessions (deaf_after) do not answer the close handshake; each
// gives up on it after about 5 s.
func (h *Handler) Shutdown(ctx context.Context) error {
	conns := h.stop()
	for _, c := range conns {
		go c.Close(websocket.StatusGoingAway, "container shutting down")
	}
	done := make(chan struct{})
	go func() {
		h.wg.Wait()
		close(done)
	}()
	select {
	case <-done:
		h.cancel()
		return nil
	case <-ctx.Done():
		h.cancel()
		<-done
		return ctx.Err()
	}
}

// Close refuses new sessions, drops every open connection without a close
// handshake and waits for the sessions to end.
func (h *Handler) Close() error {
	h.stop()
	h.cancel()
	h.wg.Wait()
	return nil
}

// stop marks the handler closing and returns the open connections.
func (h *Handler) stop() []*websocket.Conn {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.closing = true
	conns := make([]*websocket.Conn, 0, len(h.sessions))
	for c := range h.sessions {
		conns = append(conns, c)
	}
	return conns
}

// newID returns a chat completion id, "chatcmpl-" and 32 hex digits.
func (h *Handler) newID() string {
	var b [16]byte
	h.mu.Lock()
	_, err := io.ReadFull(h.opts.Rand, b[:])
	h.mu.Unlock()
	if err != nil {
		h.log.Warn("chat id: reading randomness failed", "err", err)
	}
	return "chatcmpl-" + hex.EncodeToString(b[:])
}

// errHookClosed ends a session that closed itself on request (close_after).
var errHookClosed = errors.New("model: closed by close_after")
