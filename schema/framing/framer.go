package framing

import (
	"bytes"
	"io"
	"time"
)

// lineState is where the framer is relative to the current line.
type lineState uint8

const (
	lnStart lineState = iota // at the first byte of a line
	lnValue                  // inside a line whose bytes are event data
	lnSkip                   // discarding bytes up to the line end
)

var bom = []byte{0xEF, 0xBB, 0xBF}

// framer is the framing core shared by [Reader] and [Decoder]. It turns a
// byte stream, presented in arbitrary fragments, into events. It keeps no
// reference to its input between calls: whatever it has not consumed, the
// caller presents again, extended, on the next call. Every decision it
// takes depends only on bytes it has seen, never on where the input was
// split, so fragmenting the stream never changes the events.
//
// The format-specific parts live in sse.go and jsonlines.go.
type framer struct {
	format  Format // the configured or detected format
	maxSize int
	resync  bool

	pos       int64 // stream offset of the first byte of the current input
	started   bool  // the byte order mark check is done
	state     lineState
	skipLF    bool // the last line ended with '\r'; swallow a following '\n'
	resyncing bool // after an error, looking for the next event start
	err       error

	sc     scanner
	val    []byte // the data of the event being framed
	valOff int64  // stream offset of val[0]
	// The event step produced: its data (aliasing val), offset, whether
	// it is [DONE], and its fields.
	outData  []byte
	outOff   int64
	outDone  bool
	outType  string
	outID    string
	outRetry time.Duration

	// SSE only.
	lf, cr   byteFinder // the fast path's searches for '\n' and '\r'
	lineSeen int        // bytes of a pending field line already searched for its end
	// valDone says a complete value ended on the current data line; at
	// the start of a line, on the line before: the event is held.
	valDone bool
	// tail is how many bytes at the end of val (blanks and line ends) are
	// tentative: they become data only if more data follows, and are
	// dropped if the event ends first, so that they never count towards
	// the size limit. tailLost says some were not kept, being over the
	// limit: if more data follows, the event is too large.
	tail     int
	tailLost bool
	badAt    int64  // offset of the first syntax error in val, or -1
	badMsg   string // description of that error
	evType   string // event type for the next event
	lastType string // previous event type, kept to avoid re-allocating it
	id       string
	retry    time.Duration
	// A complete value whose line has ended is held until its block ends
	// (see sse.go); these are the fields it had then, and whether an event
	// field followed it.
	heldType  string
	heldID    string
	heldRetry time.Duration
	heldTyped bool
	// compact says the stream ends events without blank lines: a data
	// line followed a held event. Complete values are then dispatched at
	// the end of their line.
	compact bool
}

func (f *framer) init(o Options) {
	*f = framer{
		format:  o.Format,
		maxSize: o.maxEventSize(),
		resync:  o.Resync,
		val:     f.val[:0],
		sc:      scanner{stack: f.sc.stack[:0]},
		badAt:   -1,
		lf:      byteFinder{c: '\n', at: -1},
		cr:      byteFinder{c: '\r', at: -1},
	}
}

// step consumes input (the first byte of which is at stream offset f.pos)
// until an event completes, an error occurs, or the input is exhausted. It
// returns the number of bytes consumed; with a nil error, event returns
// the event. With ErrNeedInput, in[n:] must be presented again, followed by
// more input; eof says no more will come.
func (f *framer) step(in []byte, eof bool) (int, error) {
	if f.err != nil {
		return 0, f.err
	}
	n, err := f.run(in, eof)
	f.pos += int64(n)
	return n, err
}

// run is step without the bookkeeping of f.pos. The format-specific
// steps it calls return stop when run must return their error (nil for
// an event).
func (f *framer) run(in []byte, eof bool) (int, error) {
	i := 0
	for {
		if i == len(in) {
			if !eof {
				return i, ErrNeedInput
			}
			return i, f.finish(f.pos + int64(i))
		}
		if f.skipLF {
			f.skipLF = false
			if in[i] == '\n' {
				i++
			}
			continue
		}
		if !f.started {
			if in[i] == bom[0] {
				if len(in)-i < len(bom) && !eof {
					return i, ErrNeedInput
				}
				if bytes.HasPrefix(in[i:], bom) {
					i += len(bom)
				}
			}
			f.started = true
			continue
		}
		if f.format == FormatAuto {
			switch c := in[i]; c {
			case ' ', '\t', '\r', '\n':
				i++
				continue
			default:
				f.format = detectFormat(c)
			}
		}
		if f.state == lnSkip {
			j := lineEnd(in[i:])
			if j < 0 {
				i = len(in)
				continue
			}
			i = f.endLine(in, i+j)
			continue
		}
		var stop bool
		var err error
		if f.format == FormatSSE {
			i, stop, err = f.sseStep(in, i, eof)
		} else {
			i, stop, err = f.jsonLinesStep(in, i)
		}
		if stop {
			return i, err
		}
	}
}

// detectFormat chooses the framing from the first significant byte.
func detectFormat(c byte) Format {
	switch c {
	case '{', '[', '"', '-', '0', '1', '2', '3', '4', '5', '6', '7', '8', '9', 't', 'f', 'n':
		return FormatJSONLines
	}
	return FormatSSE
}

// endLine consumes the line end at in[i] and returns the next position.
func (f *framer) endLine(in []byte, i int) int {
	if in[i] == '\r' {
		f.skipLF = true
	}
	f.state = lnStart
	return i + 1
}

// lineEnd returns the index of the first '\r' or '\n' in b, or -1.
func lineEnd(b []byte) int {
	if i := bytes.IndexByte(b, '\n'); i >= 0 {
		if j := bytes.IndexByte(b[:i], '\r'); j >= 0 {
			return j
		}
		return i
	}
	return bytes.IndexByte(b, '\r')
}

// startVal begins the data of a new event at stream offset off.
func (f *framer) startVal(off int64) {
	f.val = f.val[:0]
	f.valOff = off
}

// appendVal adds bytes to the event data, within the size limit.
func (f *framer) appendVal(b []byte) error {
	if len(f.val)+len(b) > f.maxSize {
		return f.tooLarge()
	}
	f.val = append(f.val, b...)
	return nil
}

// tooLarge fails the event in progress for exceeding the size limit.
func (f *framer) tooLarge() error {
	return f.fail(&EventTooLargeError{Offset: f.valOff, Limit: f.maxSize}, true)
}

// emit makes the event data framed in f.val the event, and starts
// afresh. The event aliases f.val, which only a later step overwrites.
func (f *framer) emit() {
	f.emitData(f.val, f.valOff)
	f.clearVal()
}

// emitData makes data, at stream offset off, the event. data must stay
// unchanged until the next step.
func (f *framer) emitData(data []byte, off int64) {
	f.outData, f.outOff, f.outDone = data, off, false
	f.outType, f.outID, f.outRetry = f.evType, f.id, f.retry
	f.evType = ""
}

// emitDone makes the [DONE] marker at stream offset off the event.
func (f *framer) emitDone(off int64) {
	f.outData, f.outOff, f.outDone = nil, off, true
	f.outType, f.outID, f.outRetry = f.evType, f.id, f.retry
	f.evType = ""
}

// event returns the event of the last step that produced one.
func (f *framer) event() Event {
	return Event{Data: f.outData, Done: f.outDone, Type: f.outType, ID: f.outID, Retry: f.outRetry, Offset: f.outOff}
}

// clearVal forgets the event in progress, keeping the buffer's memory.
func (f *framer) clearVal() {
	f.sc.reset()
	f.val = f.val[:0]
	f.valDone = false
	f.tail = 0
	f.tailLost = false
	f.badAt = -1
}

// fail records err. With resync on, the framer drops the event in
// progress and looks for the next event start, after discarding the rest
// of the current line if skipLine is set; otherwise err is final.
func (f *framer) fail(err error, skipLine bool) error {
	f.clearVal()
	f.evType = ""
	if !f.resync {
		f.err = err
		return err
	}
	f.resyncing = true
	if skipLine {
		f.state = lnSkip
	} else {
		f.state = lnStart
	}
	return err
}

// finish handles the end of input, which is at stream offset end.
func (f *framer) finish(end int64) error {
	if f.badAt >= 0 {
		// Malformed SSE data that no blank line ended.
		return f.fail(&SyntaxError{Offset: f.badAt, Msg: f.badMsg}, false)
	}
	if f.sc.inValue() && !f.sc.endOfInput() {
		f.err = &SyntaxError{Offset: end, Msg: "input ended inside a JSON value", Err: io.ErrUnexpectedEOF}
		return f.err
	}
	if len(f.val) > 0 {
		if f.format == FormatSSE {
			f.emitSSE()
		} else {
			f.emit()
		}
		return nil
	}
	f.err = io.EOF
	return io.EOF
}
