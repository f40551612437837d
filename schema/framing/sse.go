package framing

import (
	"bytes"
	"strconv"
	"time"
)

// This file holds the Server-Sent Events side of the framer. The WHATWG
// "interpret an event stream" rules apply (fields, comments, LF/CR/CRLF,
// multi-line data, dispatch at a blank line), with the deviations LMI
// containers need:
//
//   - Data that forms one complete JSON value at the end of a line is an
//     event without a blank line, so streams without blank lines work. It
//     is held until the next line shows where its block ends: a blank
//     line, the end of input or a line that is not a field or comment
//     dispatches it with the fields of its block, those after the data
//     included, as WHATWG does; a data line dispatches it with the fields
//     it had, leaving those in between to the next event, since fields
//     come before their data in the streams seen. Once a data line has
//     followed a complete value, the stream is known not to use blank
//     lines (compact), and complete values are dispatched at the end of
//     their line: a receive loop that feeds whole messages gets each
//     event without waiting for the next message.
//   - While the data is an incomplete JSON value, a line that does not
//     start with "data" continues it verbatim (a pretty-printed value after
//     a single "data:"), unless it is a comment or an "event", "id" or
//     "retry" field, which no JSON text can start with (except a ':' that
//     the value awaits after an object key, which continues it).
//   - Data followed by a blank line is an event whatever it contains, as
//     in WHATWG; so such data needs no scanning when the blank line is
//     already in view (the fast path of sseDataStart). Malformed data not
//     followed by a blank line is a syntax error.
//   - Blanks (spaces and tabs) that end a line of data are data only if
//     more data follows, as are line ends: the event is the data without
//     surrounding whitespace, and its size, bounded by MaxEventSize, never
//     counts blanks it does not contain, whichever path frames it.
//   - A line that is neither a field, a comment nor blank is garbage
//     between events and a syntax error, where WHATWG would ignore it.

const (
	dataField  = "data"
	doneMarker = "[DONE]"
	// maxDoneBlanks is how many spaces or tabs may stand on each side of
	// "[DONE]". The bound keeps the wait for the rest of the line short,
	// and being a property of the line, it frames every split alike.
	maxDoneBlanks = 64
)

// sseStep advances over one piece of an SSE line starting at in[i]. stop
// says whether run must return err (nil for an event).
func (f *framer) sseStep(in []byte, i int, eof bool) (int, bool, error) {
	if f.state == lnStart {
		n, stop, err := f.sseLineStart(in[i:], eof, f.pos+int64(i))
		return i + n, stop, err
	}
	return f.sseData(in, i)
}

// sseLineStart interprets the start of the line p, at stream offset off.
// It returns how many bytes it consumed.
func (f *framer) sseLineStart(p []byte, eof bool, off int64) (int, bool, error) {
	pending := len(f.val) > 0
	switch p[0] {
	case '\n', '\r':
		if pending { // the block's end dispatches its event
			f.emitSSE()
			return f.endLine(p, 0), true, nil
		}
		f.resyncing = false
		f.evType = ""
		return f.endLine(p, 0), false, nil
	case 'd':
		if len(p) <= len(dataField) && !eof && dataField[:len(p)] == string(p) {
			return 0, true, ErrNeedInput
		}
		if !bytes.HasPrefix(p, []byte(dataField)) {
			break
		}
		n := len(dataField)
		colon := n < len(p) && p[n] == ':'
		if !colon && n < len(p) && p[n] != '\n' && p[n] != '\r' {
			break // another field whose name starts with "data"
		}
		if f.badAt >= 0 {
			break
		}
		if f.valDone {
			// A data line after a complete value: the held event ends
			// here, and this line starts the next one.
			f.dispatchHeld()
			return 0, true, nil
		}
		f.resyncing = false
		if !colon {
			// "data" alone: a data field with an empty value.
			f.state = lnValue
			return n, false, nil
		}
		if pending {
			f.state = lnValue
			return n + 1, false, nil
		}
		return f.sseDataStart(p, eof, off)
	}
	if f.badAt >= 0 {
		// Malformed data, and no blank line to end the event.
		return 0, true, f.fail(&SyntaxError{Offset: f.badAt, Msg: f.badMsg}, false)
	}
	if pending && !f.valDone {
		// The value is unfinished: the line continues it, unless it is a
		// comment or a field that JSON text cannot start with.
		if p[0] == ':' && f.sc.st != scColon {
			f.state = lnSkip
			return 0, false, nil
		}
		if other, err := f.otherLine(p, eof, lnValue); other || err != nil {
			return 0, err != nil, err
		}
		return f.sseField(p, eof, off)
	}
	if p[0] == ':' { // comment
		f.resyncing = false
		f.state = lnSkip
		return 0, false, nil
	}
	return f.sseField(p, eof, off)
}

// sseDataStart handles "data:" that starts an event: the [DONE] marker,
// the fast path for data followed by a blank line, or the start of a value
// that sseData scans.
func (f *framer) sseDataStart(p []byte, eof bool, off int64) (int, bool, error) {
	k := len(dataField) + 1
	for k < len(p) && k < len(dataField)+1+maxDoneBlanks && isBlankByte(p[k]) {
		k++
	}
	if k == len(p) && !eof {
		return 0, true, ErrNeedInput
	}
	if k == len(p) || !isBlankByte(p[k]) {
		if n, done, more := isDone(p[k:], eof); more {
			return 0, true, ErrNeedInput
		} else if done {
			f.emitDone(off + int64(k))
			f.state = lnSkip
			return k + n, true, nil
		}
	}
	// Fast path: the line ends with LF or CRLF and a blank line follows, so
	// the line's data is the whole event; the blank line is consumed too.
	if e := f.lf.next(p, k, off); e > k && e+1 < len(p) {
		if next := p[e+1]; next == '\n' || next == '\r' {
			end := e
			if p[end-1] == '\r' {
				end--
			}
			start := k
			for start < end && isBlankByte(p[start]) {
				start++
			}
			if r := f.cr.next(p, start, off); start < end && (r < 0 || r >= end) {
				// The event aliases the input, which stays unchanged until
				// the next step.
				v := trimBlanks(p[start:end])
				if len(v) > f.maxSize {
					err := &EventTooLargeError{Offset: off + int64(start), Limit: f.maxSize}
					return e, true, f.fail(err, true)
				}
				f.emitData(v, off+int64(start))
				return f.endLine(p, e+1), true, nil
			}
		}
	}
	f.state = lnValue
	return k, false, nil
}

// isDone reports whether data starts with the [DONE] marker, followed by
// blanks up to the line end, and how many bytes that is; or whether more
// input is needed to tell.
func isDone(data []byte, eof bool) (n int, done, more bool) {
	if len(data) < len(doneMarker) {
		return 0, false, !eof && doneMarker[:len(data)] == string(data)
	}
	if string(data[:len(doneMarker)]) != doneMarker {
		return 0, false, false
	}
	n = len(doneMarker)
	for n < len(data) && n < len(doneMarker)+maxDoneBlanks && isBlankByte(data[n]) {
		n++
	}
	if n == len(data) {
		return n, eof, !eof
	}
	return n, data[n] == '\n' || data[n] == '\r', false
}

// byteFinder finds the next occurrence of a byte in the stream for the
// fast path, remembering what it searched: each byte of the stream is
// searched at most once, whether the byte is near (the line end of every
// event) or far (a '\r' in a stream whose lines end with '\n' alone).
type byteFinder struct {
	c       byte
	at      int64 // stream offset of the next c found, or -1
	scanned int64 // stream offset up to which the stream was searched
}

// next returns the index in p of the first c at or after p[from], or -1
// if there is none in p. p starts at stream offset off.
func (b *byteFinder) next(p []byte, from int, off int64) int {
	if start := off + int64(from); b.at >= start {
		return int(b.at - off)
	} else if b.at < 0 && b.scanned == off+int64(len(p)) {
		return -1 // p was searched to its end already
	}
	return b.search(p, from, off)
}

func (b *byteFinder) search(p []byte, from int, off int64) int {
	start := off + int64(from)
	rel := from
	if b.scanned > start && b.scanned <= off+int64(len(p)) {
		rel = int(b.scanned - off)
	}
	e := bytes.IndexByte(p[rel:], b.c)
	if e < 0 {
		b.at, b.scanned = -1, off+int64(len(p))
		return -1
	}
	b.at = off + int64(rel+e)
	b.scanned = b.at + 1
	return rel + e
}

// sseData advances over event data on a data or continuation line,
// scanning it as JSON, up to and including the line end.
func (f *framer) sseData(in []byte, i int) (int, bool, error) {
	for i < len(in) {
		switch c := in[i]; {
		case c == '\n' || c == '\r':
			if f.sc.inValue() {
				// The line end is part of the value's text: it ends a
				// top-level number, and is an error inside a string.
				switch _, res := f.sc.scan(in[i : i+1]); res {
				case scanDone:
					f.valDone = true
				case scanError:
					f.badAt, f.badMsg = f.pos+int64(i), f.sc.msg
					f.sc.reset()
				}
			}
			if f.valDone && f.badAt < 0 {
				if f.compact {
					f.emitSSE()
					return f.endLine(in, i), true, nil
				}
				f.hold()
			}
			if len(f.val) > 0 {
				// Lines of data are joined with '\n', kept only if more
				// data follows, so that the size of an event never counts
				// the line end a blank line comes after.
				f.addTail(newline)
			}
			return f.endLine(in, i), false, nil
		case f.badAt >= 0:
			// Keep the rest of the line as is: if a blank line follows, the
			// data is an event in spite of the error.
			j := lineEnd(in[i:])
			if j < 0 {
				j = len(in) - i
			}
			if err := f.appendData(in[i : i+j]); err != nil {
				return i + j, true, err
			}
			i += j
			continue
		case f.valDone:
			if !isBlankByte(c) {
				f.badAt, f.badMsg = f.pos+int64(i), "data continues after a complete JSON value"
				continue
			}
			f.addTail(in[i : i+1])
			i++
			continue
		case len(f.val) == 0:
			if isBlankByte(c) {
				i++
				continue
			}
			f.startVal(f.pos + int64(i))
		}
		k, res := f.sc.scan(in[i:])
		if err := f.appendData(in[i : i+k]); err != nil {
			return i + k, true, err
		}
		i += k
		switch res {
		case scanDone:
			f.valDone = true
		case scanError:
			f.badAt, f.badMsg = f.pos+int64(i), f.sc.msg
			f.sc.reset()
		}
	}
	return i, false, nil
}

// appendData adds bytes of data to the event: what precedes their
// trailing blanks becomes data, together with the tentative bytes before
// it; the trailing blanks are tentative.
func (f *framer) appendData(b []byte) error {
	t := len(b)
	for t > 0 && isBlankByte(b[t-1]) {
		t--
	}
	if t > 0 {
		if f.tailLost || len(f.val)+t > f.maxSize {
			return f.tooLarge()
		}
		f.val = append(f.val, b[:t]...)
		f.tail = 0
	}
	f.addTail(b[t:])
	return nil
}

// addTail adds tentative bytes to the event. Those that would not fit
// within the size limit are not kept: data cannot follow them without
// exceeding it.
func (f *framer) addTail(b []byte) {
	if len(b) == 0 {
		return
	}
	if f.tailLost || len(f.val)+len(b) > f.maxSize {
		f.tailLost = true
		return
	}
	f.val = append(f.val, b...)
	f.tail += len(b)
}

// emitSSE makes the event data, without its tentative tail, the event.
func (f *framer) emitSSE() {
	f.val = f.val[:len(f.val)-f.tail]
	f.emit()
}

// hold keeps the complete value whose line just ended as the pending
// event, remembering its fields: those that follow it in its block apply
// to it if a blank line (or the end of input) ends the block, and to the
// next event if a data line does.
func (f *framer) hold() {
	f.heldType, f.heldID, f.heldRetry, f.heldTyped = f.evType, f.id, f.retry, false
}

// dispatchHeld makes the held event the event, with its fields, when a
// data line follows it: the stream is compact from then on.
func (f *framer) dispatchHeld() {
	next := ""
	if f.heldTyped {
		next = f.evType
	}
	f.evType = f.heldType
	f.emitSSE()
	f.outID, f.outRetry = f.heldID, f.heldRetry
	f.evType = next
	f.compact = true
}

// trimBlanks returns b without trailing spaces and tabs.
func trimBlanks(b []byte) []byte {
	for len(b) > 0 && isBlankByte(b[len(b)-1]) {
		b = b[:len(b)-1]
	}
	return b
}

// sseField handles a line that is not data, blank or a comment. It needs
// the whole line.
func (f *framer) sseField(p []byte, eof bool, off int64) (int, bool, error) {
	if f.resyncing {
		if other, err := f.otherLine(p, eof, lnSkip); other || err != nil {
			return 0, err != nil, err
		}
	}
	// The line may come in many pieces: search each byte only once.
	j := lineEnd(p[f.lineSeen:])
	if j >= 0 {
		j += f.lineSeen
	}
	if j > f.maxSize || j < 0 && len(p) > f.maxSize {
		f.lineSeen = 0
		if f.valDone { // the held event ends before the line
			f.emitSSE()
			return 0, true, nil
		}
		return 0, true, f.fail(&EventTooLargeError{Offset: off, Limit: f.maxSize}, true)
	}
	if j < 0 {
		if !eof {
			f.lineSeen = len(p)
			return 0, true, ErrNeedInput
		}
		j = len(p)
	}
	f.lineSeen = 0
	line := p[:j]
	name, value, colon := bytes.Cut(line, []byte{':'})
	if colon && len(value) > 0 && value[0] == ' ' {
		value = value[1:]
	}
	f.state = lnSkip
	switch string(name) {
	case "event":
		if string(value) != f.lastType {
			f.lastType = string(value)
		}
		f.evType = f.lastType
		if f.valDone {
			f.heldTyped = true
		}
	case "id":
		if bytes.IndexByte(value, 0) < 0 && string(value) != f.id {
			f.id = string(value)
		}
	case "retry":
		if ms, ok := parseRetry(value); ok {
			f.retry = time.Duration(ms) * time.Millisecond
		}
	default:
		if isFieldName(name) || !colon && isBlank(line) {
			return j, false, nil
		}
		if f.valDone { // the held event ends before the line
			f.state = lnStart
			f.emitSSE()
			return 0, true, nil
		}
		err := &SyntaxError{Offset: off, Msg: "unexpected text outside an event: " + excerpt(line)}
		return j, true, f.fail(err, true)
	}
	f.resyncing = false
	return j, false, nil
}

// otherLine reports whether the line p is none of the fields that
// knownField knows, and then makes st the state of the rest of the line.
// It returns ErrNeedInput when p is too short to tell.
func (f *framer) otherLine(p []byte, eof bool, st lineState) (bool, error) {
	known, more := knownField(p, eof)
	switch {
	case more:
		return false, ErrNeedInput
	case known:
		return false, nil
	}
	f.state = st
	return true, nil
}

// knownField reports whether line p starts with the name of a field other
// than data that the framer interprets, or whether more input is needed
// to tell.
func knownField(p []byte, eof bool) (known, more bool) {
	for _, name := range [...]string{"event", "id", "retry"} {
		if len(p) <= len(name) {
			if string(p) == name[:len(p)] && !eof {
				return false, true
			}
			if string(p) == name {
				return true, false
			}
			continue
		}
		if string(p[:len(name)]) == name {
			switch p[len(name)] {
			case ':', '\r', '\n':
				return true, false
			}
		}
	}
	return false, false
}

// parseRetry parses the value of a retry field: ASCII digits only.
func parseRetry(v []byte) (int64, bool) {
	if len(v) == 0 || len(v) > 12 {
		return 0, false
	}
	var ms int64
	for _, c := range v {
		if c < '0' || c > '9' {
			return 0, false
		}
		ms = ms*10 + int64(c-'0')
	}
	return ms, true
}

// isFieldName reports whether name looks like an SSE field name that a
// server could plausibly send, so that an unknown field is ignored as
// WHATWG requires rather than taken for garbage.
func isFieldName(name []byte) bool {
	if len(name) == 0 {
		return false
	}
	for _, c := range name {
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '-' || c == '_' || c == '.') {
			return false
		}
	}
	return true
}

func isBlank(b []byte) bool {
	for _, c := range b {
		if !isBlankByte(c) {
			return false
		}
	}
	return true
}

func isBlankByte(c byte) bool { return c == ' ' || c == '\t' }

// excerpt quotes the start of a line for an error message.
func excerpt(line []byte) string {
	const max = 32
	if len(line) > max {
		return strconv.Quote(string(line[:max])) + "..."
	}
	return strconv.Quote(string(line))
}
