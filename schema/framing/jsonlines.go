package framing

// jsonLinesStep advances over JSON Lines input starting at in[i]: a
// sequence of JSON values separated by optional whitespace, which may span
// lines and share lines. Every byte is scanned; a value is an event as
// soon as its last byte is seen. stop says whether run must return err
// (nil for an event).
func (f *framer) jsonLinesStep(in []byte, i int) (int, bool, error) {
	if f.state == lnStart {
		// While resynchronising, the next value is taken to start at a line
		// that begins with '{' or '[' in its first column.
		if c := in[i]; f.resyncing && !f.sc.inValue() {
			if c != '{' && c != '[' {
				f.state = lnSkip
				return i, false, nil
			}
			f.resyncing = false
		}
		f.state = lnValue
	}
	if !f.sc.inValue() {
		for ; i < len(in); i++ {
			switch in[i] {
			case ' ', '\t':
				continue
			case '\n', '\r':
				return f.endLine(in, i), false, nil
			}
			break
		}
		if i == len(in) {
			return i, false, nil
		}
		f.startVal(f.pos + int64(i))
	}
	k, res := f.sc.scan(in[i:])
	if err := f.appendVal(in[i : i+k]); err != nil {
		return i + k, true, err
	}
	i += k
	switch res {
	case scanDone:
		f.emit()
		return i, true, nil
	case scanLineEnd:
		if err := f.appendVal(newline); err != nil {
			return i, true, err
		}
		return f.endLine(in, i), false, nil
	case scanError:
		err := &SyntaxError{Offset: f.pos + int64(i), Msg: f.sc.msg}
		return i, true, f.fail(err, true)
	}
	return i, false, nil
}

var newline = []byte{'\n'}
