package bridge

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"sync"
	"time"
)

// HealthError reports a container that failed its health check, GET
// /ping: it answered another status than 200, or could not be reached.
type HealthError struct {
	URL        string // the URL checked
	StatusCode int    // the status answered, or 0 when none was
	Status     string // the status line's text, when answered
	Err        error  // the request error, when not answered
}

// Error describes the failure.
func (e *HealthError) Error() string {
	if e.StatusCode != 0 {
		return fmt.Sprintf("GET %s answered %s", e.URL, e.Status)
	}
	return fmt.Sprintf("GET %s failed: %v", e.URL, e.Err)
}

// Unwrap returns the request error.
func (e *HealthError) Unwrap() error { return e.Err }

// pingURL returns the health-check URL of the container at base.
func pingURL(base *url.URL) string {
	u := *base
	switch u.Scheme {
	case "ws":
		u.Scheme = "http"
	case "wss":
		u.Scheme = "https"
	}
	u.Path = "/ping"
	return u.String()
}

// CheckHealth sends GET /ping to the container, as SageMaker does on its
// own schedule, and returns nil if it answers 200 within HealthTimeout,
// or a [*HealthError]. With a negative HealthTimeout it returns nil at
// once. The handler runs it every HealthInterval (see [Handler.Health]);
// sessions never wait for one.
func (h *Handler) CheckHealth(ctx context.Context) error {
	if h.opts.HealthTimeout < 0 {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, h.opts.HealthTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, h.pingURL, nil)
	if err != nil {
		return &HealthError{URL: h.pingURL, Err: err}
	}
	resp, err := h.client.Do(req)
	if err != nil {
		var ue *url.Error // "Get URL: cause": the URL is in HealthError already
		if errors.As(err, &ue) {
			err = ue.Err
		}
		return &HealthError{URL: h.pingURL, Err: err}
	}
	io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return &HealthError{URL: h.pingURL, StatusCode: resp.StatusCode, Status: resp.Status}
	}
	return nil
}

// health is the state of the scheduled health checks.
type health struct {
	first  chan struct{}      // closed once the first check is done
	ctx    context.Context    // cancelled by Handler.Close
	cancel context.CancelFunc // stops the loop
	done   chan struct{}      // closed when the loop returns

	mu   sync.Mutex
	last error // result of the last check
}

// healthLoop checks the container's health at once, then every
// HealthInterval until Close, and logs every change of state after the
// first check.
func (h *Handler) healthLoop() {
	defer close(h.health.done)
	t := time.NewTicker(h.opts.HealthInterval)
	defer t.Stop()
	for first := true; ; first = false {
		err := h.CheckHealth(h.health.ctx)
		if h.health.ctx.Err() != nil {
			err = errors.New("bridge: handler closed")
		}
		// A change is logged before it is published (only this loop
		// writes last), so that whoever sees the new state through
		// Health finds its line in the log.
		h.health.mu.Lock()
		prev := h.health.last
		h.health.mu.Unlock()
		switch {
		case first:
		case err != nil && prev == nil:
			h.log.Warn("container unhealthy: sessions get 424 ModelError until GET /ping answers 200", "err", err)
		case err == nil && prev != nil:
			h.log.Info("container healthy again")
		}
		h.health.mu.Lock()
		h.health.last = err
		h.health.mu.Unlock()
		if first {
			close(h.health.first)
		}
		select {
		case <-h.health.ctx.Done():
			return
		case <-t.C:
		}
	}
}

// Health returns the result of the last scheduled health check: nil if
// the container answered GET /ping with 200, else a [*HealthError]. Before
// the first check is done it waits for it, or for ctx.
func (h *Handler) Health(ctx context.Context) error {
	select {
	case <-h.health.first:
	case <-ctx.Done():
		return ctx.Err()
	}
	h.health.mu.Lock()
	defer h.health.mu.Unlock()
	return h.health.last
}
