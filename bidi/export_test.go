package bidi

// SetOpenHook makes Open call f after starting a session's goroutine and
// before waiting for its request to be on its way, so that tests can
// order events around that wait. It returns a function that removes f.
func SetOpenHook(f func(*Session)) (restore func()) {
	testHookOpenWait = f
	return func() { testHookOpenWait = nil }
}
