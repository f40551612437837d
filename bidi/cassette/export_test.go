package cassette

// SetCloseSendHooks sets the hooks of Recording.CloseSend and of the
// session's end waiting for it (see testHookCloseSent), and returns a
// function that clears them.
func SetCloseSendHooks(closeSent, awaiting func()) (restore func()) {
	testHookCloseSent, testHookAwaitCloseSend = closeSent, awaiting
	return func() { testHookCloseSent, testHookAwaitCloseSend = nil, nil }
}
