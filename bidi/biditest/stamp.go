package biditest

import (
	"encoding/binary"
	"errors"
	"io"
	"net/url"
	"time"

	"github.com/sagemaker-bidi/sagemaker-bidi/bidi"
)

// StampedEcho returns a Handler that models what tests of long calls
// need: a model with a clock of its own per stream, whose replies depend
// on what the stream received before. It accepts the stream, and answers
// every message delay after it arrived, in order: a UTF-8 message with
// itself, a binary one with a [Stamp] of it (see [ParseStamp]). Like a
// container behind SageMaker, whose connection closes when the client's
// input ends, it drops the replies not yet sent when the input ends (the
// end frame): a client that wants them all must keep its input open
// until the model is quiet ([bidi.Session.Finish]). A stream whose
// ModelQueryString has drain=true models a container that finishes
// answering before it closes instead: when the input ends, it sends the
// replies still queued, each when due, and then ends its response.
//
// reset, if not nil, is called in the handler after each message arrives
// with the stream's Stream and the message's number on it (from 0); when
// it returns true the stream is reset ([Stream.Reset]) before the
// message is answered, and the replies not yet sent are lost.
func StampedEcho(delay time.Duration, reset func(st *Stream, seq int) bool) Handler {
	return HandlerFunc(func(st *Stream) {
		if st.Accept() != nil {
			return
		}
		start := time.Now()
		q, _ := url.ParseQuery(st.ModelQueryString)
		drain := q.Get("drain") == "true"
		type reply struct {
			due  time.Time
			m    bidi.Message
			last bool // no reply: the input ended, with drain=true
		}
		queue := make(chan reply, 4096) // full: the reader waits, and so does the client
		stop, done := make(chan struct{}), make(chan struct{})
		go func() {
			defer close(done)
			for {
				var r reply
				select {
				case r = <-queue:
				case <-stop:
					return
				}
				if r.last {
					return
				}
				t := time.NewTimer(time.Until(r.due))
				select {
				case <-t.C:
				case <-stop:
					t.Stop()
					return
				}
				if st.Send(r.m) != nil {
					return
				}
			}
		}()
		defer func() {
			close(stop)
			<-done
		}()
		var off int64
		for seq := 0; ; seq++ {
			m, err := st.Recv()
			if err != nil && drain && errors.Is(err, io.EOF) {
				// The input ended: the replies queued are sent before
				// the response ends.
				select {
				case queue <- reply{last: true}:
					<-done
				case <-done:
				}
				return
			}
			if err != nil {
				return // the input ended (or the stream failed): what was not sent is dropped
			}
			at := time.Now()
			if reset != nil && reset(st, seq) {
				st.Reset()
			}
			out := m
			if m.Type == bidi.DataTypeBinary {
				out = bidi.Binary(Stamp{Clock: at.Sub(start), Seq: seq, Offset: off, Data: m.Data}.append(nil))
				off += int64(len(m.Data))
			}
			select {
			case queue <- reply{due: at.Add(delay), m: out}:
			case <-st.Context().Done():
				return
			}
		}
	})
}

// A Stamp is StampedEcho's reply to a binary message.
type Stamp struct {
	// Clock is the stream's clock when the message arrived: the time
	// since the stream's handler started.
	Clock time.Duration
	// Seq is the message's number on the stream, from 0, counting every
	// message (UTF-8 ones included).
	Seq int
	// Offset is the binary data the stream received before the message,
	// in bytes: an audio model's position in the stream.
	Offset int64
	// Data is the message's data.
	Data []byte
}

// stampHeader is the size of a stamp before its Data: three 64-bit
// big-endian integers.
const stampHeader = 24

// append appends the stamp's wire form to b.
func (s Stamp) append(b []byte) []byte {
	b = binary.BigEndian.AppendUint64(b, uint64(s.Clock))
	b = binary.BigEndian.AppendUint64(b, uint64(s.Seq))
	b = binary.BigEndian.AppendUint64(b, uint64(s.Offset))
	return append(b, s.Data...)
}

// errNotStamp is returned by ParseStamp for data that is not a stamp.
var errNotStamp = errors.New("biditest: not a stamp")

// ParseStamp parses the data of a reply of [StampedEcho] to a binary
// message. Stamp.Data aliases b.
func ParseStamp(b []byte) (Stamp, error) {
	if len(b) < stampHeader {
		return Stamp{}, errNotStamp
	}
	s := Stamp{
		Clock:  time.Duration(binary.BigEndian.Uint64(b)),
		Seq:    int(binary.BigEndian.Uint64(b[8:])),
		Offset: int64(binary.BigEndian.Uint64(b[16:])),
		Data:   b[stampHeader:],
	}
	if s.Clock < 0 || s.Seq < 0 || s.Offset < 0 {
		return Stamp{}, errNotStamp
	}
	return s, nil
}
