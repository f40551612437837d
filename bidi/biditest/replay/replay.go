// Package replay serves a recorded cassette (package cassette) as the
// model behind a biditest.Server: every stream is answered as the
// recorded one was, at the recorded speed or scaled, and a client that
// sends something else, or leaves recorded replies unread, fails the test.
//
// A cassette may come from biditest's Server.Record, the local gateway's
// -record, bidicat -record or cassette.Record against a real endpoint:
// record once against the real model, replay in CI for every commit.
//
//	c, err := cassette.Load(f)
//	srv, _ := replay.NewServer(t, c, nil) // fails t if a reply is left unread
//	client := srv.Client()
package replay

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/sagemaker-bidi/sagemaker-bidi/bidi"
	"github.com/sagemaker-bidi/sagemaker-bidi/bidi/biditest"
	"github.com/sagemaker-bidi/sagemaker-bidi/bidi/cassette"
)

// Options configure [New]. The zero value replays strictly at
// the recorded speed.
type Options struct {
	// Loose matches only the number of parts the client sends, not their
	// type, completion or bytes.
	Loose bool

	// TimeScale multiplies the recorded delays of the model's replies: 1
	// (or 0) replays at the recorded speed, 0.5 twice as fast, 2 half as
	// fast; a negative value sends each reply as soon as its turn comes.
	TimeScale float64
}

// ErrMismatch is matched by the [*Error] of a client that
// did not send what the cassette recorded.
var ErrMismatch = errors.New("replay: client diverged from the cassette")

// ErrUndelivered is matched by the [*Error] of a stream
// that ended before every recorded reply was delivered: the client
// closed it, went away or stopped reading.
var ErrUndelivered = errors.New("replay: recorded replies not delivered")

// Error reports a stream whose replay did not go as recorded.
type Error struct {
	Stream int    // the stream's number, from 1, in arrival order
	Event  int    // the index of the cassette event at fault (0 is the first after the header)
	Detail string // what differed; never payload bytes
	Err    error  // ErrMismatch or ErrUndelivered
}

// Error describes the failure.
func (e *Error) Error() string {
	return fmt.Sprintf("replay: stream %d, cassette event %d: %v: %s", e.Stream, e.Event, e.Err, e.Detail)
}

// Unwrap returns Err.
func (e *Error) Unwrap() error { return e.Err }

// MismatchErrorCode is the :error-code of the error message a replaying
// server sends a client that diverged from the cassette, before it ends
// the stream.
const MismatchErrorCode = "ReplayMismatch"

// A Replayer is a [biditest.Handler] that serves a cassette as the model: every
// stream is answered as the recorded one was. It answers with the
// recorded response head (an HTTP error included), then walks the
// cassette's events in order: for the parts the client sent in the
// recording it receives the client's and compares the messages they make
// (type and bytes; a redacted message's size only; with
// Options.Loose only their number), for the client's end of input
// it expects the end frame, and it sends each of the model's parts, exceptions and error
// messages at its recorded time: as long after the stream's start as in
// the recording, and no sooner after the client's preceding event than
// in the recording (both scaled by Options.TimeScale). The response
// head waits for its recorded time too. The stream then ends as recorded:
// cleanly, with a reset, or, for a recording the client closed, when the
// client goes away.
//
// Messages are compared, not parts, so a client may cut its messages
// into parts differently from the recorded one. A client that diverges
// gets an error message with code MismatchErrorCode and the stream ends. A
// stream that ends before every recorded reply was sent (the client
// closed it, or stopped reading until the test ended) is a failure too:
// [Replayer.Err] reports both, and [NewServer] fails the test with
// them. A reply written to the connection counts as delivered, even if
// the client never read it, and so does one whose write failed because
// the client went away at that moment.
//
// A Replayer is safe for concurrent use by any number of streams.
type Replayer struct {
	c    *cassette.Cassette
	opts Options

	mu      sync.Mutex // guards the fields below
	streams int
	errs    []error
}

// New returns a Replayer of c. nil opts means the defaults.
func New(c *cassette.Cassette, opts *Options) *Replayer {
	r := &Replayer{c: c}
	if opts != nil {
		r.opts = *opts
	}
	if r.opts.TimeScale == 0 {
		r.opts.TimeScale = 1
	}
	return r
}

// NewServer starts a biditest.Server replaying c, as
// biditest.NewServer(New(c, opts)) does, and registers a cleanup with t that closes it and fails
// the test with [Replayer.Err].
func NewServer(t testing.TB, c *cassette.Cassette, opts *Options) (*biditest.Server, *Replayer) {
	t.Helper()
	r := New(c, opts)
	srv := biditest.NewServer(r)
	t.Cleanup(func() {
		srv.Close()
		if err := r.Err(); err != nil {
			t.Errorf("%v", err)
		}
	})
	return srv, r
}

// Err returns the failures of the streams replayed so far, joined, or
// nil if every one went as recorded.
func (r *Replayer) Err() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	return errors.Join(r.errs...)
}

// Streams returns the number of streams served so far.
func (r *Replayer) Streams() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.streams
}

func (r *Replayer) fail(e *Error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.errs = append(r.errs, e)
}

// ServeBidi replays the cassette on st.
func (r *Replayer) ServeBidi(st *biditest.Stream) {
	r.mu.Lock()
	r.streams++
	n := r.streams
	r.mu.Unlock()
	rp := &streamReplay{r: r, st: st, n: n, events: r.c.Events, start: time.Now()}
	rp.run()
}

// streamReplay is the state of one stream's replay; owned by its
// handler.
type streamReplay struct {
	r      *Replayer
	st     *biditest.Stream
	n      int
	events []cassette.Event
	start  time.Time

	// The anchor of the next reply's time: the recorded time of the
	// last client event, and when it happened in this replay.
	recAnchor time.Duration
	anchor    time.Time

	msg message
}

func (rp *streamReplay) run() {
	rp.anchor = rp.start
	if !rp.respond() {
		return
	}
	for i := range rp.events {
		e := &rp.events[i]
		switch e.Kind {
		case cassette.KindSend:
			if !rp.expectPart(i, e) {
				return
			}
		case cassette.KindSendEnd:
			if !rp.expectEnd(i) {
				return
			}
		case cassette.KindRecv, cassette.KindException, cassette.KindError:
			if !rp.reply(i, e) {
				return
			}
		case cassette.KindEnd:
			rp.end(e)
			return
		}
	}
}

// respond answers with the recorded response head; false when that was
// an HTTP error (the replay is over).
func (rp *streamReplay) respond() bool {
	for i := range rp.events {
		e := &rp.events[i]
		if e.Kind != cassette.KindResponse {
			continue
		}
		if !rp.wait(e.T) {
			rp.undelivered(0, "the client went away before the response")
			return false
		}
		if e.Status == http.StatusOK {
			if e.Variant != "" {
				rp.st.SetInvokedVariant(e.Variant)
			}
			break
		}
		var fields map[string]any
		if json.Unmarshal([]byte(e.Body), &fields) != nil {
			fields = map[string]any{"Message": e.Body}
		}
		rp.st.Fail(e.Status, e.ErrorType, fields)
		return false
	}
	if err := rp.st.Accept(); err != nil {
		rp.undelivered(0, "the client went away before the response")
		return false
	}
	return true
}

// expectPart receives what the client sent of the message e belongs to
// and compares it with the recording. Messages are compared, not parts,
// so a client may cut them differently: at a recorded PARTIAL part it
// receives parts until it has at least as many bytes as the recording
// (or the client's message is complete), at the recorded COMPLETE part
// until the client's message is complete.
func (rp *streamReplay) expectPart(i int, e *cassette.Event) bool {
	m := &rp.msg
	if !m.open {
		*m = message{open: true, typ: e.Type, want: m.want[:0], got: m.got[:0]}
	}
	m.want = append(m.want, e.Data...)
	m.wantLen += e.Size
	m.redacted = m.redacted || e.Redacted
	loose := rp.r.opts.Loose
	for !m.done && (e.Complete || (!loose && len(m.got) < m.wantLen)) {
		p, err := rp.st.RecvPart()
		if err == io.EOF {
			rp.mismatch(i, "the client ended its input where the recording has a message")
			return false
		}
		if err != nil {
			rp.undelivered(i, fmt.Sprintf("the client went away (%v)", err))
			return false
		}
		if !m.started {
			m.started, m.gotType = true, p.Type
		}
		if !loose {
			m.got = append(m.got, p.Data...)
		}
		m.done = p.Complete
		rp.recAnchor, rp.anchor = e.T, time.Now()
	}
	if e.Complete {
		m.open = false
	}
	if loose {
		return true
	}
	var diff string
	n := min(len(m.got), m.wantLen)
	switch {
	case m.gotType != m.typ:
		diff = fmt.Sprintf("a message of type %v, recorded %v", m.gotType, m.typ)
	case !m.redacted && !bytes.Equal(m.got[:n], m.want[:n]):
		diff = fmt.Sprintf("a message differing from byte %d", firstDiff(m.got[:n], m.want[:n]))
	case e.Complete && len(m.got) != m.wantLen:
		diff = fmt.Sprintf("a message of %d bytes, recorded %d", len(m.got), m.wantLen)
	case !e.Complete && m.done && len(m.got) <= m.wantLen:
		diff = fmt.Sprintf("a message of %d bytes, recorded more", len(m.got))
	}
	if diff != "" {
		rp.mismatch(i, "the client sent "+diff)
		return false
	}
	return true
}

// message is the client message being compared with the recording.
type message struct {
	open     bool // a recorded message is in progress
	typ      bidi.DataType
	want     []byte // the recorded bytes so far
	wantLen  int    // their count, redacted ones included
	redacted bool

	started bool // the client's message began
	gotType bidi.DataType
	got     []byte // the client's bytes so far (strict mode)
	done    bool   // the client's message is complete
}

func firstDiff(a, b []byte) int {
	for i := range min(len(a), len(b)) {
		if a[i] != b[i] {
			return i
		}
	}
	return min(len(a), len(b))
}

// expectEnd receives the client's end of input.
func (rp *streamReplay) expectEnd(i int) bool {
	extra := 0
	for {
		_, err := rp.st.RecvPart()
		if err == io.EOF {
			break
		}
		if err != nil {
			rp.undelivered(i, fmt.Sprintf("the client went away (%v)", err))
			return false
		}
		if !rp.r.opts.Loose {
			rp.mismatch(i, "the client sent a part where the recording has the end of its input")
			return false
		}
		extra++
	}
	if extra > 0 {
		rp.mismatch(i, fmt.Sprintf("the client sent %d parts more than recorded", extra))
		return false
	}
	rp.recAnchor, rp.anchor = rp.events[i].T, time.Now()
	return true
}

// reply sends the model's event e at its time.
func (rp *streamReplay) reply(i int, e *cassette.Event) bool {
	if !rp.wait(e.T) {
		rp.undelivered(i, "the client went away before this reply")
		return false
	}
	var err error
	switch e.Kind {
	case cassette.KindRecv:
		err = rp.st.SendPart(e.Part())
	case cassette.KindException:
		err = rp.st.SendException(e.ExceptionType, []byte(e.Body))
	case cassette.KindError:
		err = rp.st.SendError(e.Code, e.Message)
	}
	if err != nil {
		// The client may have read this reply before it went away (a
		// write fails when the stream is reset before it is flushed),
		// so only the later ones count as undelivered.
		rp.undelivered(i+1, fmt.Sprintf("the client went away after reply %d (%v)", i, err))
		return false
	}
	return true
}

// wait waits until the time of an event recorded at t: t after the
// stream's start, and no sooner after the client's last event than in
// the recording (scaled by TimeScale). It returns false if the client
// went away meanwhile.
func (rp *streamReplay) wait(t time.Duration) bool {
	scale := rp.r.opts.TimeScale
	if scale <= 0 {
		return true
	}
	at := rp.start.Add(time.Duration(float64(t) * scale))
	if after := rp.anchor.Add(time.Duration(float64(t-rp.recAnchor) * scale)); after.After(at) {
		at = after
	}
	d := time.Until(at)
	if d <= 0 {
		return true
	}
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case <-timer.C:
		return true
	case <-rp.st.Context().Done():
		return false
	}
}

// end ends the stream as the recording did.
func (rp *streamReplay) end(e *cassette.Event) {
	switch e.Reason {
	case cassette.EndReset:
		rp.st.Reset()
	case cassette.EndClosed:
		<-rp.st.Context().Done() // the client closed it: wait for that
	}
}

func (rp *streamReplay) mismatch(i int, detail string) {
	rp.r.fail(&Error{Stream: rp.n, Event: i, Detail: detail, Err: ErrMismatch})
	rp.st.SendError(MismatchErrorCode, fmt.Sprintf("replay: cassette event %d: %s", i, detail))
}

// undelivered reports the replies from event i on that the stream ended
// before, if there are any.
func (rp *streamReplay) undelivered(i int, why string) {
	left := 0
	for _, e := range rp.events[i:] {
		switch e.Kind {
		case cassette.KindRecv, cassette.KindException, cassette.KindError:
			left++
		}
	}
	if left == 0 {
		return
	}
	rp.r.fail(&Error{Stream: rp.n, Event: i, Err: ErrUndelivered,
		Detail: fmt.Sprintf("%s; %d recorded replies left", why, left)})
}
