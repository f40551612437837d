package bridge

// RecordedSessions returns the number of recorded sessions h still
// tracks for their close: 0 once every recorded session ended.
func RecordedSessions(h *Handler) int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.closes)
}
