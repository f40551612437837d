package bridge

import (
	"sync"
	"time"
)

// A throttle lets through, per kind of log line, throttleBurst lines per
// throttleWindow and counts the others, which the next line let through
// reports. Lines a client can cause at will (rejected requests, failed
// TLS handshakes) then cost a few lines a minute, not one per attempt.
type throttle struct {
	mu    sync.Mutex
	kinds map[string]*throttleState
}

type throttleState struct {
	start      time.Time
	n          int // lines let through in the window
	suppressed int // lines dropped since the last one let through
}

const (
	throttleBurst  = 5
	throttleWindow = 10 * time.Second
	throttleKinds  = 256 // kinds are rule and error type pairs: few
)

// allow reports whether a line of kind may be logged at now, and how many
// lines of that kind were dropped since the last one let through.
func (t *throttle) allow(kind string, now time.Time) (ok bool, suppressed int) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.kinds == nil {
		t.kinds = make(map[string]*throttleState)
	}
	st := t.kinds[kind]
	if st == nil {
		if len(t.kinds) >= throttleKinds {
			clear(t.kinds)
		}
		st = &throttleState{start: now}
		t.kinds[kind] = st
	}
	if now.Sub(st.start) >= throttleWindow {
		st.start, st.n = now, 0
	}
	if st.n >= throttleBurst {
		st.suppressed++
		return false, 0
	}
	st.n++
	suppressed, st.suppressed = st.suppressed, 0
	return true, suppressed
}
