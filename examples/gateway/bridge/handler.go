package bridge

import (
	"context"
	"log/slog"
	"net/http"
	"net/url"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sagemaker-bidi/sagemaker-bidi/bidi"
	"github.com/sagemaker-bidi/sagemaker-bidi/bidi/biditest"
	"github.com/sagemaker-bidi/sagemaker-bidi/examples/gateway/internal/wsframe"
)

// Handler is the gateway's model: a [biditest.Handler] that joins each
// stream to a new WebSocket connection to the model container, mapping
// parts and frames as SageMaker does (see the package documentation).
//
// A Handler serves any number of streams at once. Each session ends
// when its WebSocket is closed; it watches its stream's context, so
// closing the server ends every session within CloseTimeout. After the
// server is closed, [Handler.Wait] waits for the last goroutine.
type Handler struct {
	opts    Options
	base    *url.URL
	pingURL string
	health  *http.Client
	log     *slog.Logger

	wg     sync.WaitGroup // every session goroutine
	active atomic.Int64
	ids    atomic.Uint64
}

// NewHandler returns a Handler configured by opts, or an error if the
// options are invalid (a malformed container URL, say).
func NewHandler(opts Options) (*Handler, error) {
	o, base, err := opts.resolve()
	if err != nil {
		return nil, err
	}
	return &Handler{
		opts:    o,
		base:    base,
		pingURL: pingURL(base),
		health: &http.Client{
			// One connection per check: no idle connections to outlive
			// the gateway, and a fresh answer each time.
			Transport:     &http.Transport{DisableKeepAlives: true},
			CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
		},
		log: o.Logger,
	}, nil
}

// Options returns the handler's options, defaults filled in.
func (h *Handler) Options() Options { return h.opts }

// ActiveSessions returns the number of sessions being served.
func (h *Handler) ActiveSessions() int { return int(h.active.Load()) }

// Wait waits until every goroutine of every session has returned. Call
// it after the server has closed, so that no new session starts.
func (h *Handler) Wait() { h.wg.Wait() }

// ServeBidi serves one stream: it checks the target variant and the
// container's health, opens the container's WebSocket and answers 200
// with the invoked variant, or an HTTP error (see the package
// documentation), then bridges the two until the WebSocket is closed.
func (h *Handler) ServeBidi(st *biditest.Stream) {
	h.wg.Add(1)
	defer h.wg.Done()
	h.active.Add(1)
	defer h.active.Add(-1)

	path := st.ModelInvocationPath
	if path == "" {
		path = DefaultInvocationPath
	}
	log := h.log.With("session", h.ids.Add(1))
	log.Info("session requested", "endpoint", st.EndpointName, "remote", st.RemoteAddr,
		"path", "/"+path, "query", st.ModelQueryString != "", "request_id", st.RequestID)

	if st.TargetVariant != "" && st.TargetVariant != h.opts.Variant {
		log.Info("session refused: unknown target variant", "target_variant", st.TargetVariant)
		failVariant(st, st.TargetVariant, h.opts.Variant)
		return
	}
	ctx := st.Context()
	if err := h.CheckHealth(ctx); err != nil {
		log.Warn("session refused: container health check failed", "err", err)
		failHealth(st, err)
		return
	}
	start := time.Now()
	conn, err := h.dial(ctx, path, st.ModelQueryString)
	if err != nil {
		log.Warn("session refused: WebSocket connection failed", "err", err)
		failUpgrade(st, err)
		return
	}
	st.SetInvokedVariant(h.opts.Variant)
	if err := st.Accept(); err != nil {
		conn.Close()
		log.Info("session abandoned: client gone before the response", "err", err)
		return
	}
	log.Info("session open", "container", conn.RemoteAddr().String(), "connect_time", time.Since(start).Round(time.Microsecond))

	s := newSession(h, st, conn, log)
	o := s.run()
	if !o.clean && !s.clientGone.Load() {
		if err := st.SendModelStreamError(o.errorCode(), o.message); err != nil {
			log.Info("could not send the ModelStreamError: client gone", "err", err)
		}
	}
	attrs := []any{
		"cause", o.cause, "close_code", o.code, "duration", time.Since(start).Round(time.Millisecond),
		"parts_up", s.partsUp.Load(), "bytes_up", s.bytesUp.Load(),
		"parts_down", s.partsDown.Load(), "bytes_down", s.bytesDown.Load(),
	}
	if o.clean {
		log.Info("session end", attrs...)
	} else {
		log.Warn("session end: ModelStreamError", append(attrs, "error_code", o.errorCode())...)
	}
}

// dial opens the container's WebSocket at /path?query, bounded by
// DialTimeout and ctx.
func (h *Handler) dial(ctx context.Context, path, query string) (*wsframe.Conn, error) {
	u := *h.base
	u.Path = "/" + path
	u.RawQuery = query
	ctx, cancel := context.WithTimeout(ctx, h.opts.DialTimeout)
	defer cancel()
	return wsframe.Dial(ctx, u.String(), &wsframe.DialOptions{
		MaxFrameSize: int64(h.opts.MaxFrameSize),
		UserAgent:    "sagemaker-bidi-gateway/" + bidi.Version,
	})
}
