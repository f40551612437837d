// Package logthrottle bounds the log lines that a client can cause at
// will (rejected requests, failed TLS handshakes, connections over a
// cap): per kind of line, a few get through per window and the others
// are counted, and the next line let through reports how many were
// dropped. A hostile client then costs a few lines a minute, not one per
// attempt. Package biditest and the local gateway share it.
package logthrottle

import (
	"sync"
	"time"
)

const (
	// Burst is how many lines of one kind get through per Window.
	Burst = 5
	// Window is the period over which Burst lines of a kind get through.
	Window = 10 * time.Second
	// maxKinds bounds the kinds remembered: kinds are a handful of
	// constants or rule and error-type pairs, so the table is cleared,
	// never grown, when a caller makes more.
	maxKinds = 256
)

// A Throttle decides, per kind of log line, which lines get through. Its
// zero value is ready to use; it is safe for concurrent use.
type Throttle struct {
	mu    sync.Mutex
	kinds map[string]*window // guarded by mu
}

type window struct {
	start      time.Time
	n          int // lines let through in the window so far
	suppressed int // lines dropped since the last one let through
}

// Allow reports whether a line of kind may be logged at now, and how many
// lines of that kind were dropped since the last one let through (0 when
// it is not allowed).
func (t *Throttle) Allow(kind string, now time.Time) (ok bool, suppressed int) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.kinds == nil {
		t.kinds = make(map[string]*window)
	}
	w := t.kinds[kind]
	if w == nil {
		if len(t.kinds) >= maxKinds {
			clear(t.kinds)
		}
		w = &window{start: now}
		t.kinds[kind] = w
	}
	if now.Sub(w.start) >= Window {
		w.start, w.n = now, 0
	}
	if w.n >= Burst {
		w.suppressed++
		return false, 0
	}
	w.n++
	suppressed, w.suppressed = w.suppressed, 0
	return true, suppressed
}
