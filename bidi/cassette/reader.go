package cassette

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"time"
)

// DefaultMaxLineSize is the default bound on one line of a cassette
// (64 MiB): a part of the event-stream limit, 24 MiB, written as text with
// every byte escaped, or as base64, fits.
const DefaultMaxLineSize = 64 << 20

// ReaderOptions configure a [Reader]. The zero value is ready to use.
type ReaderOptions struct {
	// MaxLineSize bounds a line, in bytes. 0 means DefaultMaxLineSize.
	MaxLineSize int
}

// ErrNotCassette is matched by the error of a file whose first line is
// not a cassette header.
var ErrNotCassette = errors.New("cassette: not a cassette")

// ErrLineTooLong is matched by the error of a line over
// ReaderOptions.MaxLineSize.
var ErrLineTooLong = errors.New("cassette: line too long")

// SyntaxError reports a line that is not a valid cassette line.
type SyntaxError struct {
	Line int   // 1-based line number
	Err  error // what is wrong
}

// Error names the line.
func (e *SyntaxError) Error() string { return fmt.Sprintf("cassette: line %d: %v", e.Line, e.Err) }

// Unwrap returns Err.
func (e *SyntaxError) Unwrap() error { return e.Err }

// VersionError reports a cassette written in a format version this
// package does not read.
type VersionError struct {
	Version int // the cassette's
}

// Error names both versions.
func (e *VersionError) Error() string {
	return fmt.Sprintf("cassette: format version %d is newer than this reader's %d", e.Version, Version)
}

// A Reader reads a cassette's events one at a time. It is not safe for
// concurrent use.
type Reader struct {
	br     *bufio.Reader
	max    int
	line   int
	header Header
	buf    []byte
	err    error // sticky
}

// NewReader reads the header of the cassette in r and returns a Reader
// of its events. nil opts means the defaults. A first line that is not a
// header is an error matching ErrNotCassette; a later version a
// [*VersionError].
func NewReader(r io.Reader, opts *ReaderOptions) (*Reader, error) {
	rd := &Reader{br: bufio.NewReaderSize(r, 64<<10), max: DefaultMaxLineSize}
	if opts != nil && opts.MaxLineSize > 0 {
		rd.max = opts.MaxLineSize
	}
	b, err := rd.readLine()
	if err == io.EOF {
		return nil, &SyntaxError{Line: 1, Err: ErrNotCassette}
	}
	if err != nil {
		return nil, err
	}
	var h headerLine
	if err := json.Unmarshal(b, &h); err != nil || h.Cassette != Magic {
		return nil, &SyntaxError{Line: 1, Err: ErrNotCassette}
	}
	if h.Version < 1 {
		return nil, &SyntaxError{Line: 1, Err: fmt.Errorf("invalid version %d", h.Version)}
	}
	if h.Version > Version {
		return nil, &VersionError{Version: h.Version}
	}
	rd.header = Header{Version: h.Version, Recorder: h.Recorder}
	if h.Recorded != "" {
		t, err := time.Parse(time.RFC3339, h.Recorded)
		if err != nil {
			return nil, &SyntaxError{Line: 1, Err: fmt.Errorf("recorded: %w", err)}
		}
		rd.header.Recorded = t
	}
	return rd, nil
}

// Header returns the cassette's header.
func (r *Reader) Header() Header { return r.header }

// Next returns the next event. Its Data is owned by the caller. It
// returns io.EOF at the end of the file, a [*SyntaxError] for a malformed
// line (a truncated last line is one, wrapping io.ErrUnexpectedEOF).
// Blank lines and events of kinds this version does not know are skipped.
// Errors are sticky.
func (r *Reader) Next() (Event, error) {
	for r.err == nil {
		b, err := r.readLine()
		if err != nil {
			r.err = err
			break
		}
		if len(bytes.TrimSpace(b)) == 0 {
			continue
		}
		var l eventLine
		if err := json.Unmarshal(b, &l); err != nil {
			r.err = &SyntaxError{Line: r.line, Err: err}
			break
		}
		if !known(Kind(l.Kind)) {
			continue
		}
		e, err := fromLine(&l)
		if err != nil {
			r.err = &SyntaxError{Line: r.line, Err: err}
			break
		}
		return e, nil
	}
	return Event{}, r.err
}

// known reports whether k is a kind of this version.
func known(k Kind) bool {
	switch k {
	case KindOpen, KindResponse, KindSend, KindSendEnd, KindRecv, KindException, KindError, KindEnd:
		return true
	}
	return false
}

// readLine returns the next line without its newline, valid until the
// next call; io.EOF at the end of the file.
func (r *Reader) readLine() ([]byte, error) {
	r.line++
	r.buf = r.buf[:0]
	for {
		chunk, err := r.br.ReadSlice('\n')
		if len(r.buf)+len(chunk) > r.max+1 {
			return nil, &SyntaxError{Line: r.line, Err: fmt.Errorf("%w (over %d bytes)", ErrLineTooLong, r.max)}
		}
		r.buf = append(r.buf, chunk...)
		switch {
		case err == nil:
			return r.buf[:len(r.buf)-1], nil
		case errors.Is(err, bufio.ErrBufferFull):
			continue
		case err == io.EOF && len(r.buf) == 0:
			return nil, io.EOF
		case err == io.EOF:
			return nil, &SyntaxError{Line: r.line, Err: fmt.Errorf("last line not terminated: %w", io.ErrUnexpectedEOF)}
		default:
			return nil, fmt.Errorf("cassette: reading: %w", err)
		}
	}
}

// Cassette is a whole cassette in memory, for replay.
type Cassette struct {
	Header Header
	Events []Event
}

// Load reads a whole cassette from r (see [NewReader] and [Reader.Next]
// for the errors).
func Load(r io.Reader) (*Cassette, error) {
	rd, err := NewReader(r, nil)
	if err != nil {
		return nil, err
	}
	c := &Cassette{Header: rd.Header()}
	for {
		e, err := rd.Next()
		if err == io.EOF {
			return c, nil
		}
		if err != nil {
			return nil, err
		}
		c.Events = append(c.Events, e)
	}
}
