package framing

// Decoder is the push form of the framing, for callers that receive
// whole messages, such as a bidirectional session's receive loop: write
// each message as it arrives, then call Next until it returns
// [ErrNeedInput]. It frames exactly as a [Reader] does.
//
//	for {
//		msg, err := recv()
//		if err == io.EOF {
//			dec.Close() // no more input: Next reports how it ended
//		} else if err != nil {
//			return err
//		} else {
//			dec.Write(msg)
//		}
//		for {
//			ev, err := dec.Next()
//			if err == framing.ErrNeedInput {
//				break // wait for the next message
//			}
//			if err == io.EOF {
//				return nil // closed cleanly between values
//			}
//			if err != nil {
//				return err // e.g. closed inside a value: io.ErrUnexpectedEOF
//			}
//			handle(ev)
//		}
//	}
//
// Next returns an event as soon as the bytes written show where it ends.
// In SSE, that is the blank line after its data, or, in a stream without
// blank lines, the line after its data (fields after data belong to its
// event if a blank line follows them); once such a stream has shown it
// uses no blank lines, at the end of the data line. So the first event of
// a stream without blank lines (or its only one) comes with the next
// message, or with Close.
//
// A Decoder is not safe for concurrent use. It copies what is written, so
// the caller may reuse its message buffer; it holds the bytes written but
// not yet framed, plus one event buffer bounded by [Options.MaxEventSize].
// An event's Data aliases these buffers, valid until the next call.
type Decoder struct {
	in     input
	closed bool
}

// NewDecoder returns a Decoder configured by the default [Options]
// adjusted by optFns in order.
func NewDecoder(optFns ...func(*Options)) *Decoder {
	d := new(Decoder)
	d.in.init(buildOptions(optFns))
	return d
}

// Reset discards all state and applies new options, keeping buffers.
func (d *Decoder) Reset(optFns ...func(*Options)) {
	d.in.init(buildOptions(optFns))
	d.closed = false
}

// Write appends p to the input. It never fails before Close, after which
// it returns [ErrClosed]. It implements [io.Writer].
func (d *Decoder) Write(p []byte) (int, error) {
	if d.closed {
		return 0, ErrClosed
	}
	d.in.write(p)
	return len(p), nil
}

// Close marks the end of the input. Next then returns the events still
// buffered, and finally [io.EOF] if the input ended cleanly between values,
// or a [*SyntaxError] wrapping [io.ErrUnexpectedEOF] if it stopped inside
// one. Close always returns nil.
func (d *Decoder) Close() error {
	d.closed = true
	d.in.eof = true
	return nil
}

// Next returns the next complete event from the input written so far, or
// [ErrNeedInput] when there is none yet.
//
// The event's Data is valid only until the next call to Next, Write or
// Reset.
// Errors are as for [Reader.Next].
func (d *Decoder) Next() (Event, error) {
	if err := d.in.next(); err != nil {
		return Event{}, err
	}
	return d.in.f.event(), nil
}

// Format returns the stream's format: the one configured, or the one
// detected, or FormatAuto while no significant byte has been written.
func (d *Decoder) Format() Format { return d.in.f.format }
