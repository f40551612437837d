package biditest

// A Handler scripts the model behind a [Server]: ServeBidi runs once per
// stream, in the server's request goroutine, after the request passed the
// server's checks. The stream's response ends when ServeBidi returns.
type Handler interface {
	ServeBidi(st *Stream)
}

// HandlerFunc adapts a function to a [Handler].
type HandlerFunc func(st *Stream)

// ServeBidi calls f(st).
func (f HandlerFunc) ServeBidi(st *Stream) { f(st) }

// Echo returns a Handler that accepts the stream at once and sends every
// received part back as it arrives, with the same DataType and
// CompletionState, until the client's end frame or an error.
func Echo() Handler {
	return HandlerFunc(func(st *Stream) {
		if st.Accept() != nil {
			return
		}
		for {
			st.rmu.Lock()
			p, err := st.nextPart() // p.Data aliases the decoder until the next call
			if err == nil {
				err = st.SendPart(p.Part)
			}
			st.rmu.Unlock()
			if err != nil {
				return
			}
		}
	})
}
