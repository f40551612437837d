package bridge

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
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

// CheckHealth sends GET /ping to the container, as SageMaker does before
// it routes traffic to it, and returns nil if it answers 200 within
// HealthTimeout, or a [*HealthError]. With a negative HealthTimeout it
// returns nil at once.
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
	resp, err := h.health.Do(req)
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
