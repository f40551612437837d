package bidi

import "time"

// A replayWindow keeps copies of the messages last sent by a
// RotatingSession, for a successor after an early end: those sent within
// maxAge (if > 0) and, newest first, within maxBytes of Data. Owned by
// the holder of the session's send turn.
type replayWindow struct {
	maxAge   time.Duration // 0: by size only
	maxBytes int
	kept     []retained // oldest first; kept[:head] are dropped
	head     int
	bytes    int          // Data in kept[head:]
	done     map[int]bool // generations that ended cleanly, whose messages may still be kept behind an older one's
}

// A retained message: its copy, its sequence number, the bytes sent
// before it, when it was sent and the generation that received it last.
type retained struct {
	m   Message
	seq int64
	off int64
	at  time.Time
	gen int
}

// newReplayWindow returns the window Rotation's fields ask for, or nil
// for none.
func newReplayWindow(maxAge time.Duration, maxBytes int) *replayWindow {
	if maxAge <= 0 && maxBytes <= 0 {
		return nil
	}
	if maxBytes <= 0 {
		maxBytes = defaultReplayBytes
	}
	return &replayWindow{maxAge: max(maxAge, 0), maxBytes: maxBytes}
}

// add keeps a copy of data sent at at, and drops what falls out of the
// window.
func (w *replayWindow) add(seq, off int64, at time.Time, gen int, m Message) {
	if len(m.Data) > w.maxBytes {
		w.clear()
		return
	}
	w.kept = append(w.kept, retained{m: Message{Type: m.Type, Data: append([]byte(nil), m.Data...)}, seq: seq, off: off, at: at, gen: gen})
	w.bytes += len(m.Data)
	for w.bytes > w.maxBytes || w.maxAge > 0 && at.Sub(w.kept[w.head].at) > w.maxAge {
		w.drop()
	}
	if w.head > len(w.kept)/2 && w.head >= 64 {
		n := copy(w.kept, w.kept[w.head:])
		clear(w.kept[n:])
		w.kept, w.head = w.kept[:n], 0
	}
}

// drop forgets the oldest message.
func (w *replayWindow) drop() {
	w.bytes -= len(w.kept[w.head].m.Data)
	w.kept[w.head] = retained{}
	w.head++
}

// since returns the messages sent within maxAge before end, oldest
// first; valid until the next add or clear.
func (w *replayWindow) since(end time.Time) []retained {
	k := w.kept[w.head:]
	if w.maxAge <= 0 {
		return k
	}
	for len(k) > 0 && end.Sub(k[0].at) > w.maxAge {
		k = k[1:]
	}
	return k
}

// answered records that generation gen ended cleanly, so that its model
// answered the messages it received last, and forgets them once no older
// generation's still unanswered messages come before them.
func (w *replayWindow) answered(gen int) {
	if w.done == nil {
		w.done = make(map[int]bool)
	}
	w.done[gen] = true
	for w.head < len(w.kept) && w.done[w.kept[w.head].gen] {
		w.drop()
	}
	if w.head == len(w.kept) {
		clear(w.done)
		return
	}
	for g := range w.done {
		if g < w.kept[w.head].gen {
			delete(w.done, g) // nothing of it is kept
		}
	}
}

// clear forgets every message.
func (w *replayWindow) clear() {
	clear(w.kept)
	w.kept, w.head, w.bytes = w.kept[:0], 0, 0
}
