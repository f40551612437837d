package model

import "unicode/utf8"

// splitter re-cuts a byte stream into pieces of n bytes, whatever the
// boundaries of what was written, so a client has to reassemble SSE events
// that span messages. A piece is shorter than n only at a flush or to keep
// a UTF-8 sequence whole (each piece goes out as a text message); a
// sequence longer than n makes a longer piece.
type splitter struct {
	n    int
	buf  []byte
	emit func([]byte) error // must not keep the slice
}

// write appends p and emits every complete piece.
func (s *splitter) write(p []byte) error {
	s.buf = append(s.buf, p...)
	for len(s.buf) >= s.n {
		k := cutUTF8(s.buf, s.n)
		if err := s.emit(s.buf[:k]); err != nil {
			return err
		}
		s.buf = s.buf[k:]
	}
	return nil
}

// flush emits what is left.
func (s *splitter) flush() error {
	if len(s.buf) == 0 {
		return nil
	}
	err := s.emit(s.buf)
	s.buf = s.buf[:0]
	return err
}

// cutUTF8 returns where to cut b so the first piece has at most n bytes
// and does not end inside a UTF-8 sequence; if the first sequence is
// longer than n, it returns that sequence's length.
func cutUTF8(b []byte, n int) int {
	if n >= len(b) {
		return len(b)
	}
	i := n
	for i > 0 && !utf8.RuneStart(b[i]) {
		i--
	}
	if i == 0 {
		_, size := utf8.DecodeRune(b)
		return size
	}
	return i
}
