package biditest

import "slices"

// ForgetStream removes st from the streams [Server.Streams] lists, so
// that a long-running server (the local gateway in examples/gateway, for
// one) does not keep every stream it ever served, and drops the parts it
// recorded, giving their bytes back to [Server.MaxRecordedBytes]. It may
// be called while st's handler runs or after; st's fields are unaffected,
// and [Stream.Received] returns only the parts recorded afterwards.
// Forgetting a stream the server does not list does nothing.
func (s *Server) ForgetStream(st *Stream) {
	s.mu.Lock()
	i := slices.Index(s.streams, st)
	if i >= 0 {
		s.streams = slices.Delete(s.streams, i, i+1)
	}
	s.mu.Unlock()
	if i >= 0 {
		st.forgetRecorded()
	}
}
