package bidi

import "slices"

// splitter cuts one Message into the parts Send puts on the wire: a
// message of at most max bytes is one COMPLETE part; a larger one is
// PARTIAL parts of exactly cut bytes (max unless set by withCut) followed
// by one COMPLETE part with the rest.
// An empty message is a single COMPLETE part with no payload. Part.Data
// aliases the message's Data; nothing is copied or allocated.
//
//	s := newSplitter(msg, maxPart)
//	for p, ok := s.next(); ok; p, ok = s.next() { ... }
type splitter struct {
	rest []byte
	typ  DataType
	max  int
	cut  int
	done bool
}

// newSplitter returns a splitter over m. maxPart <= 0 means
// defaultMaxPartSize.
func newSplitter(m Message, maxPart int) splitter {
	if maxPart <= 0 {
		maxPart = defaultMaxPartSize
	}
	return splitter{rest: m.Data, typ: m.Type, max: maxPart, cut: maxPart}
}

// withCut returns s cutting PARTIAL parts of cut bytes (1 ≤ cut ≤ max).
func (s splitter) withCut(cut int) splitter {
	s.cut = min(max(cut, 1), s.max)
	return s
}

// partialCut returns the payload size of the PARTIAL parts of a message
// fragmented at maxPart bytes under padding policy p: maxPart, or
// maxPart-1 when that puts fewer bytes on the wire per payload byte. With
// BucketPadding, a part of exactly a bucket's size (64 KiB, the default)
// needs a bucket more for its one byte of padding, 12.5% of padding, which
// one payload byte less avoids.
func partialCut(maxPart int, p func(payloadLen int) int) int {
	if maxPart < 2 {
		return maxPart
	}
	a, b := maxPart, maxPart-1
	wa, wb := a+padLen(p, a), b+padLen(p, b)
	if wb*a < wa*b {
		return b
	}
	return a
}

// next returns the next part, or ok=false after the COMPLETE part.
func (s *splitter) next() (p Part, ok bool) {
	if s.done {
		return Part{}, false
	}
	if len(s.rest) > s.max {
		p = Part{Data: s.rest[:s.cut:s.cut], Type: s.typ}
		s.rest = s.rest[s.cut:]
		return p, true
	}
	s.done = true
	p = Part{Data: s.rest, Type: s.typ, Complete: true}
	s.rest = nil
	return p, true
}

// reassemblyRetain bounds the capacity of the accumulation buffer a
// reassembler keeps between messages; larger buffers are released once
// their message has been delivered.
const reassemblyRetain = 256 << 10

// reassembler joins received PARTIAL…COMPLETE parts into whole messages.
//
// Rules:
//   - A COMPLETE part with no PARTIAL before it is a whole message.
//   - The first part's DataType is the message's type; a different
//     DataType on a later part of the same message is ignored (WebSocket
//     continuation frames carry no type of their own, so the first frame's
//     type is the message's type).
//   - Part data is copied: a received Part's Data aliases the decoder's
//     buffer and is only valid until the next decode.
//   - A message whose size would exceed max is dropped: add returns a
//     *MessageTooLargeError once, at the part that crosses the bound, then
//     silently discards the message's remaining parts up to and including
//     its COMPLETE part. The accumulated bytes never exceed max.
//   - The returned Message owns its Data.
//
// The accumulation buffer is reused across messages while its capacity
// stays at or below reassemblyRetain. A message's size is known only at
// its COMPLETE part, so a large message starts in a buffer the size of the
// last multi-part message (capped at max): a stream of messages of one
// size is gathered with one allocation and one copy per message, the
// buffer handed to the caller as is. A smaller message than predicted is
// copied out to an exact buffer; a larger one grows the buffer twofold.
// The zero value is not ready; use newReassembler. A reassembler is not
// safe for concurrent use.
type reassembler struct {
	max      int
	alloc    func(n int) []byte // Options.MessageBuffer via newBuffer; nil: make
	buf      []byte
	typ      DataType
	active   bool // a PARTIAL part has started a message
	skipping bool // discarding the rest of an oversized message
	last     int  // size of the last multi-part message delivered
}

// newReassembler returns a reassembler bounded to maxMessage bytes
// (<= 0: defaultMaxMessageSize).
func newReassembler(maxMessage int) *reassembler {
	if maxMessage <= 0 {
		maxMessage = defaultMaxMessageSize
	}
	return &reassembler{max: maxMessage}
}

// add feeds one part. When p completes a message, add returns it with
// done=true. err is non-nil only for an oversized message.
func (r *reassembler) add(p Part) (m Message, done bool, err error) {
	if r.skipping {
		if p.Complete {
			r.skipping = false
		}
		return Message{}, false, nil
	}
	if !r.active {
		if p.Complete {
			// Fast path: a single-part message.
			if len(p.Data) > r.max {
				return Message{}, false, r.tooLarge()
			}
			data := ownedCopy(r.alloc, p.Data)
			if data == nil {
				data = []byte{}
			}
			return Message{Data: data, Type: p.Type}, true, nil
		}
		r.active = true
		r.typ = p.Type
		r.buf = r.buf[:0]
		if r.last > cap(r.buf) && len(p.Data) <= r.max {
			// Expect a message of the last one's size.
			if n := min(r.last, r.max); n > reassemblyRetain {
				r.buf = newBuffer(r.alloc, n)[:0]
			} else {
				r.buf = make([]byte, 0, n)
			}
		}
	}
	if len(p.Data) > r.max-len(r.buf) {
		r.active = false
		r.skipping = !p.Complete
		r.release()
		return Message{}, false, r.tooLarge()
	}
	r.grow(len(p.Data))
	r.buf = append(r.buf, p.Data...)
	if !p.Complete {
		return Message{}, false, nil
	}
	r.active = false
	n := len(r.buf)
	r.last = n
	var data []byte
	switch {
	case cap(r.buf) > reassemblyRetain && r.alloc != nil:
		// Large, and the caller's (see grow): hand it over whole.
		data = r.buf[:n]
		r.buf = nil
	case cap(r.buf) > reassemblyRetain && cap(r.buf)-n <= n/4:
		// Large and nearly full: hand the buffer over instead of copying.
		data = r.buf[:n:n]
		r.buf = nil
	default:
		data = ownedCopy(r.alloc, r.buf)
		r.release()
	}
	return Message{Data: data, Type: r.typ}, true, nil
}

// partial reports whether a message has started but not completed (or an
// oversized one is being discarded). A stream that ends in this state was
// cut off mid-message.
func (r *reassembler) partial() bool { return r.active || r.skipping }

// buffered returns the number of bytes of the message in progress.
func (r *reassembler) buffered() int { return len(r.buf) }

// reset abandons any message in progress and releases a large buffer.
func (r *reassembler) reset() {
	r.active, r.skipping = false, false
	r.release()
}

// release empties the buffer, keeping it only if it is small.
func (r *reassembler) release() {
	if cap(r.buf) > reassemblyRetain {
		r.buf = nil
	} else {
		r.buf = r.buf[:0]
	}
}

// grow makes room for n more bytes, at least doubling the capacity, never
// beyond max. The bytes already gathered are copied once; unlike make, the
// new buffer is zeroed only past them.
func (r *reassembler) grow(n int) {
	need := len(r.buf) + n
	if need <= cap(r.buf) {
		return
	}
	c := min(max(2*cap(r.buf), need, 4096), r.max)
	if r.alloc != nil && c > reassemblyRetain {
		// A buffer that will be handed over is the caller's.
		nb := newBuffer(r.alloc, c)
		r.buf = nb[:copy(nb, r.buf)]
		return
	}
	r.buf = slices.Grow(r.buf, c-len(r.buf))[:len(r.buf):c]
}

func (r *reassembler) tooLarge() error {
	return &MessageTooLargeError{Limit: int64(r.max)}
}
