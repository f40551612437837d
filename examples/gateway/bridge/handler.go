package bridge

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sagemaker-bidi/sagemaker-bidi/bidi/biditest"
	"github.com/sagemaker-bidi/sagemaker-bidi/examples/gateway/internal/wsframe"
)

// Handler is the gateway's model: a [biditest.Handler] that joins each
// stream to a new WebSocket connection to the model container, mapping
// parts and frames as SageMaker does (see the package documentation).
//
// A Handler serves any number of streams at once. Each session ends
// when its WebSocket is closed; it watches its stream's context, so
// closing the server ends every session within CloseTimeout. It checks
// the container's health every HealthInterval from the start, until
// [Handler.Close]. After the server is closed, [Handler.Wait] waits for
// the last goroutine of the sessions.
type Handler struct {
	opts    Options
	base    *url.URL
	pingURL string
	client  *http.Client // of the health checks
	log     *slog.Logger
	health  health

	wg     sync.WaitGroup // every session goroutine
	active atomic.Int64
	ids    atomic.Uint64

	maxStreamAge time.Duration // the server's, for the log; set by Start

	// mu guards sessions and closes. closeSink.Close takes it under the
	// biditest recorder's lock, so nothing may call into a stream while
	// holding it.
	mu       sync.Mutex
	sessions map[*session]struct{}           // running sessions, for Abort
	closes   map[*biditest.Stream]*closeSink // recorded sessions (Config.Record), by stream
}

// NewHandler returns a Handler configured by opts, or an error if the
// options are invalid (a malformed container URL, say).
func NewHandler(opts Options) (*Handler, error) {
	o, base, err := opts.resolve()
	if err != nil {
		return nil, err
	}
	h := &Handler{
		opts:    o,
		base:    base,
		pingURL: pingURL(base),
		client: &http.Client{
			// One connection per check: no idle connections to outlive
			// the gateway, and a fresh answer each time.
			Transport:     &http.Transport{DisableKeepAlives: true, DialContext: o.DialContext},
			CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
		},
		log:      o.Logger,
		sessions: make(map[*session]struct{}),
	}
	h.health.first = make(chan struct{})
	h.health.done = make(chan struct{})
	h.health.ctx, h.health.cancel = context.WithCancel(context.Background())
	go h.healthLoop()
	return h, nil
}

// Close stops the scheduled health checks and waits for the one in
// progress. Sessions are not affected. It may be called more than once.
func (h *Handler) Close() {
	h.health.cancel()
	<-h.health.done
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

	if h.opts.EndpointName != "" && st.EndpointName != h.opts.EndpointName {
		log.Info("session refused: unknown endpoint name", "endpoint", st.EndpointName)
		failEndpoint(st, st.EndpointName, h.opts.EndpointName)
		return
	}
	if st.TargetVariant != "" && st.TargetVariant != h.opts.Variant {
		log.Info("session refused: unknown target variant", "target_variant", st.TargetVariant)
		failVariant(st, st.TargetVariant, h.opts.Variant)
		return
	}
	ctx := st.Context()
	if err := h.Health(ctx); err != nil {
		log.Warn("session refused: container unhealthy", "err", err)
		failHealth(st, err)
		return
	}
	start := time.Now()
	conn, err := h.dial(ctx, path, st.ModelQueryString)
	if err != nil {
		var te *AcceptTimeoutError
		if errors.As(err, &te) {
			log.Warn("session refused: "+te.Error(), "dial_timeout", te.Timeout)
		} else {
			log.Warn("session refused: WebSocket connection failed", "err", err)
		}
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
	h.track(s, true)
	o := s.run()
	h.track(s, false)
	code, reason := s.closeSeen(o)
	h.noteClose(st, code, reason)
	switch {
	case o.clean || s.clientGone.Load():
	case o.internal:
		if err := st.SendException("InternalStreamFailure", exceptionBody(o.message, "")); err != nil {
			log.Info("could not send the InternalStreamFailure: client gone", "err", err)
		}
	default:
		if err := st.SendException("ModelStreamError", exceptionBody(o.message, o.errorCode())); err != nil {
			log.Info("could not send the ModelStreamError: client gone", "err", err)
		}
	}
	attrs := []any{
		"cause", o.cause, "close_code", o.code, "duration", time.Since(start).Round(time.Millisecond),
		"parts_up", s.partsUp.Load(), "bytes_up", s.bytesUp.Load(),
		"parts_down", s.partsDown.Load(), "bytes_down", s.bytesDown.Load(),
	}
	switch {
	case o.clean:
		log.Info("session end", attrs...)
	case o.internal:
		log.Warn("session end: InternalStreamFailure", attrs...)
	default:
		log.Warn("session end: ModelStreamError", append(attrs, "error_code", o.errorCode())...)
	}
}

// track adds a running session to the handler's set, or removes it.
func (h *Handler) track(s *session, running bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if running {
		h.sessions[s] = struct{}{}
	} else {
		delete(h.sessions, s)
	}
}

// Abort ends every running session with reason: the client gets an
// InternalStreamFailure whose Message is reason (the platform, not the
// model, ended the stream), and the container's WebSocket is closed with
// 1001 (going away). It returns the number of sessions aborted; they
// finish within CloseTimeout. The gateway's Shutdown uses it once its
// grace period is over.
func (h *Handler) Abort(reason string) int {
	h.mu.Lock()
	sessions := make([]*session, 0, len(h.sessions))
	for s := range h.sessions {
		sessions = append(sessions, s)
	}
	h.mu.Unlock()
	for _, s := range sessions {
		s.end(aborted(reason), wsframe.ClosePayload(wsframe.CloseGoingAway, "gateway shutting down"))
	}
	return len(sessions)
}

// waitIdle waits until no session is running, or ctx ends.
func (h *Handler) waitIdle(ctx context.Context) {
	t := time.NewTicker(10 * time.Millisecond)
	defer t.Stop()
	for h.active.Load() > 0 {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// AcceptTimeoutError reports a container that did not accept the
// WebSocket connection within DialTimeout.
type AcceptTimeoutError struct {
	Timeout time.Duration // the DialTimeout in force
	Err     error         // the dial error
}

// Error names the limit, and SageMaker's.
func (e *AcceptTimeoutError) Error() string {
	return fmt.Sprintf("the container did not accept the WebSocket connection within %v (SageMaker allows %v: a container this slow fails there)",
		e.Timeout, SageMakerAcceptLimit)
}

// Unwrap returns the dial error.
func (e *AcceptTimeoutError) Unwrap() error { return e.Err }

// dial opens the container's WebSocket at /path?query, bounded by
// DialTimeout ([*AcceptTimeoutError] when it runs out) and ctx.
func (h *Handler) dial(ctx context.Context, path, query string) (*wsframe.Conn, error) {
	u := *h.base
	u.Path = "/" + path
	u.RawQuery = query
	dctx, cancel := context.WithTimeout(ctx, h.opts.DialTimeout)
	defer cancel()
	conn, err := wsframe.Dial(dctx, u.String(), &wsframe.DialOptions{
		NetDial:      h.opts.DialContext,
		MaxFrameSize: int64(h.opts.MaxFrameSize),
		UserAgent:    "sagemaker-bidi-gateway",
	})
	if err != nil && ctx.Err() == nil && errors.Is(dctx.Err(), context.DeadlineExceeded) {
		err = &AcceptTimeoutError{Timeout: h.opts.DialTimeout, Err: err}
	}
	return conn, err
}

// exceptionBody is the JSON body of the modeled mid-stream exceptions,
// {"Message": message, "ErrorCode": errorCode}, in the model's member
// order, ErrorCode left out when empty.
func exceptionBody(message, errorCode string) []byte {
	b, _ := json.Marshal(struct {
		Message   string `json:"Message"`
		ErrorCode string `json:"ErrorCode,omitempty"`
	}{message, errorCode})
	return b
}
