package cassette

import (
	"errors"
	"fmt"
	"io"
	"strconv"
	"sync"
	"time"
)

// A Sink receives the events of one session in order: a [Writer], or a
// live view such as the gateway's inspector. Write must not keep e or
// its Data after it returns. Close marks the end of the session.
type Sink interface {
	Write(e *Event) error
	Close() error
}

// WriterOptions configure a [Writer]. The zero value is ready to use.
type WriterOptions struct {
	// Recorder names the program writing (see Header.Recorder).
	Recorder string
	// Recorded is when the session started. Zero means now.
	Recorded time.Time
	// Redact, if set, is called with every event before it is written and
	// may change any field but Kind and T: set Data to what may be stored
	// (a new slice: the bytes of Data belong to the session and must not
	// be modified) and Redacted to true, clear a QueryString or an error
	// Body. It runs under the Writer's lock.
	Redact func(e *Event)
	// BufferSize is the size of the write buffer. 0 means 64 KiB. Events
	// reach the underlying writer when the buffer fills, on Flush and on
	// Close.
	BufferSize int
}

// ErrClosed is returned by the Write and Flush methods of a closed
// [Writer].
var ErrClosed = errors.New("cassette: writer closed")

// A Writer writes one session's cassette to an io.Writer, one line per
// event, through a fixed buffer: memory does not grow with the session.
// It is safe for concurrent use; events are written in the order of the
// calls. Close flushes but does not close the underlying writer.
type Writer struct {
	mu     sync.Mutex // guards everything below
	w      io.Writer
	buf    []byte // the encoded events not yet written to w
	size   int    // the buffer size: buf is written to w once it holds this much
	redact func(*Event)
	err    error // sticky write error, or ErrClosed
}

// NewWriter writes a cassette header to w and returns a Writer for the
// session's events. nil opts means the defaults.
func NewWriter(w io.Writer, opts *WriterOptions) (*Writer, error) {
	var o WriterOptions
	if opts != nil {
		o = *opts
	}
	if o.BufferSize <= 0 {
		o.BufferSize = 64 << 10
	}
	if o.Recorded.IsZero() {
		o.Recorded = time.Now()
	}
	cw := &Writer{w: w, buf: make([]byte, 0, o.BufferSize), size: o.BufferSize, redact: o.Redact}
	b := append(cw.buf, `{"cassette":`...)
	b = appendQuoted(b, Magic)
	b = append(b, `,"version":`...)
	b = strconv.AppendInt(b, Version, 10)
	b = appendStr(b, "recorded", o.Recorded.UTC().Format(time.RFC3339))
	b = appendStr(b, "recorder", o.Recorder)
	cw.buf = append(b, '}', '\n')
	if len(cw.buf) >= cw.size {
		if err := cw.flushLocked(); err != nil {
			return nil, fmt.Errorf("cassette: writing header: %w", err)
		}
	}
	return cw, nil
}

// Write appends e to the cassette. e is not modified (the redaction hook
// sees a copy) and not kept. A write error is sticky.
//
// The event is encoded straight into the buffer; the buffer goes to the
// underlying writer once it holds BufferSize bytes, so that a session
// makes one write call per BufferSize bytes, not one per event.
func (w *Writer) Write(e *Event) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.err != nil {
		return w.err
	}
	if w.redact != nil {
		c := *e
		w.redact(&c)
		c.Kind, c.T = e.Kind, e.T
		e = &c
	}
	w.buf = append(appendEvent(w.buf, e), '\n')
	if len(w.buf) >= w.size {
		if err := w.flushLocked(); err != nil {
			w.err = fmt.Errorf("cassette: writing event: %w", err)
		}
	}
	return w.err
}

// flushLocked writes the buffer to the underlying writer and empties it,
// dropping a buffer that a large event grew beyond twice the size.
// w.mu is held.
func (w *Writer) flushLocked() error {
	if len(w.buf) == 0 {
		return nil
	}
	n, err := w.w.Write(w.buf)
	if err == nil && n < len(w.buf) {
		err = io.ErrShortWrite
	}
	if cap(w.buf) > 2*w.size {
		w.buf = make([]byte, 0, w.size)
	}
	w.buf = w.buf[:0]
	return err
}

// Flush writes the buffered events to the underlying writer.
func (w *Writer) Flush() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.err != nil {
		return w.err
	}
	if err := w.flushLocked(); err != nil {
		w.err = fmt.Errorf("cassette: flushing: %w", err)
	}
	return w.err
}

// Close flushes the buffered events; later writes fail with ErrClosed.
// It returns the first write error, if any. Calling it again returns nil.
func (w *Writer) Close() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.err == ErrClosed {
		return nil
	}
	err := w.err
	if err == nil {
		if ferr := w.flushLocked(); ferr != nil {
			err = fmt.Errorf("cassette: flushing: %w", ferr)
		}
	}
	w.err = ErrClosed
	w.buf = nil
	return err
}

// Tee returns a Sink that writes every event to each of sinks in order
// and closes them all; it returns the first error. A failing sink does not
// keep the others from their events.
func Tee(sinks ...Sink) Sink { return tee(sinks) }

type tee []Sink

func (t tee) Write(e *Event) error {
	var first error
	for _, s := range t {
		if err := s.Write(e); err != nil && first == nil {
			first = err
		}
	}
	return first
}

func (t tee) Close() error {
	var first error
	for _, s := range t {
		if err := s.Close(); err != nil && first == nil {
			first = err
		}
	}
	return first
}
