package framing

import "io"

// Reader is the pull form of the framing: it reads a byte stream and
// returns one [Event] per JSON value, in Server-Sent Events or JSON Lines.
//
// The stream may arrive in fragments split anywhere (inside "data:", a JSON
// string, a multi-byte UTF-8 character or a "\r\n"); the events are the
// same as for the whole stream.
//
// A Reader is not safe for concurrent use. It holds one read buffer and
// one event buffer, reused for every event (so an event's Data is valid
// only until the next call); neither grows beyond about
// [Options.MaxEventSize].
type Reader struct {
	in  input
	src io.Reader
}

// NewReader returns a Reader that frames the bytes of r, configured by
// the default [Options] adjusted by optFns in order.
func NewReader(r io.Reader, optFns ...func(*Options)) *Reader {
	rd := &Reader{src: r}
	rd.in.init(buildOptions(optFns))
	return rd
}

// Reset makes rd read from r with the given options, as a new Reader
// would, keeping its buffers.
func (rd *Reader) Reset(r io.Reader, optFns ...func(*Options)) {
	rd.src = r
	rd.in.init(buildOptions(optFns))
}

// Next returns the next event.
//
// The event's Data is valid only until the next call to Next or Reset.
// Next returns [io.EOF] only when the underlying reader ends cleanly
// between values; input that stops inside a value gives a [*SyntaxError]
// wrapping [io.ErrUnexpectedEOF]. Malformed input gives a [*SyntaxError],
// an oversized event an [*EventTooLargeError]; both are final unless
// [Options.Resync] is set, in which case the following call continues
// with the next event. An error from the underlying reader is returned
// as is, and Next may be called again after it.
func (rd *Reader) Next() (Event, error) {
	for {
		err := rd.in.next()
		if err == nil {
			return rd.in.f.event(), nil
		}
		if err != ErrNeedInput {
			return Event{}, err
		}
		if err := rd.in.fill(rd.src); err != nil {
			return Event{}, err
		}
	}
}

// Format returns the stream's format: the one configured, or the one
// detected, or FormatAuto while no significant byte has been read.
func (rd *Reader) Format() Format { return rd.in.f.format }
