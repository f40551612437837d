package biditest

import "slices"

// ForgetStream removes st from the streams [Server.Streams] lists, so
// that a long-running server (the local gateway in examples/gateway, for
// one) does not keep every stream it ever served. It may be called while
// st's handler runs or after; st itself is unaffected. Forgetting a
// stream the server does not list does nothing.
func (s *Server) ForgetStream(st *Stream) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if i := slices.Index(s.streams, st); i >= 0 {
		s.streams = slices.Delete(s.streams, i, i+1)
	}
}

// TakeViolations returns the violations recorded so far, in order, as
// [Server.Violations] does, and clears the list: a long-running server
// can log them as they come without keeping them.
func (s *Server) TakeViolations() []error {
	s.mu.Lock()
	defer s.mu.Unlock()
	v := s.violations
	s.violations = nil
	return v
}
