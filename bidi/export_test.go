package bidi

// SetOpenHook makes Open call f after starting a session's goroutine and
// before waiting for its request to be on its way, so that tests can
// order events around that wait. It returns a function that removes f.
func SetOpenHook(f func(*Session)) (restore func()) {
	testHookOpenWait = f
	return func() { testHookOpenWait = nil }
}

// ReadAheadRounds returns how many times the session's goroutine was
// woken to read ahead of Recv.
func ReadAheadRounds(s *Session) int64 { return s.rx.bgRounds.Load() }
