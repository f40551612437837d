package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"unicode/utf8"

	"github.com/sagemaker-bidi/sagemaker-bidi/bidi"
	"github.com/sagemaker-bidi/sagemaker-bidi/schema/framing"
)

// maxJSONMessage bounds a message reassembled for -json output (16 MiB,
// bidi's default Options.MaxMessageSize); past it use -parts.
const maxJSONMessage = 16 << 20

// maxHead bounds the bytes kept to check that the model's output is an
// event stream (see output.checkLive).
const maxHead = 4 << 10

// errUndecodable is matched by the error run returns when some of the
// model's output could not be decoded or rebuilt (-o events, -o answer).
var errUndecodable = errors.New("some of the model's output could not be decoded")

// output prints what the model sends, in the mode the flags ask for. It
// is used by the receiving goroutine only, then by run once that is done.
type output struct {
	o      *options
	stdout io.Writer
	st     *status
	enc    *json.Encoder
	buf    bytes.Buffer // the JSON line being encoded

	// A message being reassembled for -json, or a binary one in the
	// events and answer modes.
	msg     []byte
	msgLen  int
	msgType bidi.DataType
	inMsg   bool

	dec    *framing.Decoder // events and answer modes
	closed bool             // dec is closed
	ans    answerer
	failed bool // some output could not be decoded

	// What the decoder was given and made of it, to tell when the model's
	// text framed nothing to print.
	decoded     int64 // bytes written to dec
	significant bool  // some of them were not whitespace
	events      int   // events framed
	answers     int   // answers printed

	// The first bytes written to dec, kept until it frames an event, to
	// tell at the end of each message whether they can start an event
	// stream at all (see checkLive), and how much of it was reported
	// live.
	head     []byte
	headFull bool  // more than maxHead bytes came before the first event
	probed   int   // len(head) at the last check
	reported int64 // the bytes reported live as not an event stream

	// The end of what -o raw printed without -json, to end UTF8 text
	// with a line end.
	rawLast     byte
	rawLastType bidi.DataType
}

func newOutput(o *options, stdout io.Writer, st *status) *output {
	out := &output{o: o, stdout: stdout, st: st}
	out.enc = json.NewEncoder(&out.buf)
	out.enc.SetEscapeHTML(false)
	out.dec = framing.NewDecoder(func(so *framing.Options) { so.Resync = true })
	out.ans.out = out
	return out
}

// write prints b on stdout.
func (out *output) write(b []byte) error {
	return local(out.st.write(out.stdout, b))
}

// emit prints v as one JSON line on stdout.
func (out *output) emit(v any) error {
	out.buf.Reset()
	if err := out.enc.Encode(v); err != nil {
		return local(err)
	}
	return out.write(out.buf.Bytes())
}

// response reports the response headers.
func (out *output) response(r *bidi.Response) error {
	if !out.o.json {
		return nil
	}
	return out.emit(jsonResponse{Type: "response", Status: r.StatusCode, Variant: r.InvokedProductionVariant, RequestID: r.RequestID})
}

// part handles one received part.
func (out *output) part(p bidi.Part) error {
	switch {
	case out.o.mode == modeRaw && !out.o.json:
		if err := out.write(p.Data); err != nil {
			return err
		}
		if len(p.Data) > 0 {
			out.rawLast, out.rawLastType = p.Data[len(p.Data)-1], p.Type
		}
		if p.Complete && out.o.newline {
			out.rawLast = '\n'
			return out.write([]byte("\n"))
		}
		return nil
	case out.o.mode == modeRaw && out.o.parts:
		return out.emit(newJSONPart(p))
	case out.o.mode == modeRaw, p.Type == bidi.DataTypeBinary:
		return out.collect(p)
	}
	out.dec.Write(p.Data)
	out.keepHead(p.Data)
	out.decoded += int64(len(p.Data))
	out.significant = out.significant || len(bytes.TrimSpace(p.Data)) > 0
	if err := out.drain(); err != nil {
		return err
	}
	if p.Complete {
		return out.checkLive()
	}
	return nil
}

// keepHead keeps the first maxHead bytes of the model's output until an
// event is framed.
func (out *output) keepHead(b []byte) {
	if out.events > 0 || out.headFull {
		return
	}
	if len(out.head)+len(b) > maxHead {
		out.headFull, out.head = true, nil
		return
	}
	out.head = append(out.head, b...)
}

// checkLive is called at the end of each message of the model while no
// event has been framed yet. The decoder holds text until a line ends, so
// a model that answers in plain text (an echo of typed lines, say) would
// otherwise be reported only when the stream ends: it reports now, once,
// when what came so far, taken as a whole stream, is not one: a syntax
// error, or text without an event, a colon or an unfinished value. Once
// a problem is reported (by the decoder itself, say), it checks no more.
func (out *output) checkLive() error {
	if out.events > 0 || out.failed || out.headFull || !out.significant || len(out.head) == out.probed {
		return nil
	}
	out.probed = len(out.head)
	probe := framing.NewDecoder(func(so *framing.Options) { so.Resync = true })
	probe.Write(out.head)
	probe.Close()
	var syn *framing.SyntaxError
	for {
		_, err := probe.Next()
		switch {
		case err == nil, errors.Is(err, io.ErrUnexpectedEOF):
			return nil // an event, or one on its way
		case errors.As(err, &syn):
			out.reported = int64(len(out.head))
			return out.problem("decode", fmt.Errorf("%w; try -o raw", syn))
		case err == io.EOF && !bytes.Contains(out.head, []byte(":")):
			out.reported = int64(len(out.head))
			return out.problem("decode", fmt.Errorf("received %d bytes that framed no SSE or JSON Lines event; try -o raw", len(out.head)))
		case err != nil:
			return nil
		}
	}
}

// collect reassembles a message for -json, or counts a binary one in the
// events and answer modes, and prints it when complete.
func (out *output) collect(p bidi.Part) error {
	if !out.inMsg {
		out.inMsg, out.msgType, out.msg, out.msgLen = true, p.Type, out.msg[:0], 0
	}
	out.msgLen += len(p.Data)
	if out.o.json {
		if out.msgLen > maxJSONMessage {
			return local(fmt.Errorf("a message exceeds %d bytes: use -parts to print it part by part", maxJSONMessage))
		}
		out.msg = append(out.msg, p.Data...)
	}
	if !p.Complete {
		return nil
	}
	out.inMsg = false
	if out.o.json {
		return out.emit(newJSONMessage(out.msgType, out.msg))
	}
	return out.write(fmt.Appendf(nil, "(%s message: %d bytes)\n", out.msgType, out.msgLen))
}

// drain handles the events the decoder has framed so far.
func (out *output) drain() error {
	for {
		ev, err := out.dec.Next()
		switch {
		case errors.Is(err, framing.ErrNeedInput), err == io.EOF:
			return nil
		case err != nil:
			// An error in the bytes checkLive reported was told already.
			var syn *framing.SyntaxError
			if !errors.As(err, &syn) || syn.Offset >= out.reported {
				if err := out.problem("decode", err); err != nil {
					return err
				}
			}
			if out.closed {
				return nil
			}
			continue
		}
		out.events++
		out.head = nil
		if out.o.mode == modeEvents {
			err = out.event(ev)
		} else {
			err = out.ans.add(ev, out.dec.Format())
		}
		if err != nil {
			return err
		}
	}
}

// event prints one decoded event.
func (out *output) event(ev framing.Event) error {
	if out.o.json {
		j := jsonEvent{Type: "event", Done: ev.Done, SSEType: ev.Type, ID: ev.ID, Offset: ev.Offset}
		if !ev.Done {
			if json.Valid(ev.Data) {
				j.Data = ev.Data
			} else {
				j.Raw = string(ev.Data)
			}
		}
		return out.emit(j)
	}
	if ev.Done {
		return out.write([]byte("[DONE]\n"))
	}
	var b bytes.Buffer
	if json.Compact(&b, ev.Data) != nil {
		b.Reset()
		b.Write(ev.Data)
	}
	b.WriteByte('\n')
	return out.write(b.Bytes())
}

// problem reports output of the model that could not be decoded; it is
// not fatal, but makes the exit code 1.
func (out *output) problem(kind string, err error) error {
	out.failed = true
	if out.o.json {
		return out.emit(jsonProblem{Type: kind + "_error", Error: err.Error()})
	}
	return local(out.st.write(out.st.stderr, fmt.Appendf(nil, "bidicat: %s: %v\n", kind, err)))
}

// endText ends raw UTF8 output with a line end, unless it has one or
// -nl=false asks for the bytes exactly as sent: text piped to a file or
// another program then ends as text files do. Binary output is left as
// it is.
func (out *output) endText() error {
	if out.o.mode != modeRaw || out.o.json || out.rawLast == 0 || out.rawLast == '\n' ||
		out.rawLastType != bidi.DataTypeUTF8 || (out.o.newlineSet && !out.o.newline) {
		return nil
	}
	out.rawLast = '\n'
	return out.write([]byte("\n"))
}

// abort is called when the stream failed or was interrupted (why says
// which): it ends raw text with a line end and prints the answer in
// progress as far as it got, marked incomplete, before the error is
// reported. Events not yet complete are dropped.
func (out *output) abort(why string) {
	if out.o.mode == modeRaw {
		out.endText()
		return
	}
	if out.o.mode == modeAnswer {
		out.ans.finish(why)
	}
}

// end is called when the stream ended cleanly: it flushes the decoder and
// the answer being rebuilt.
func (out *output) end() error {
	if out.o.mode == modeRaw {
		return out.endText()
	}
	out.dec.Close()
	out.closed = true
	if err := out.drain(); err != nil {
		return err
	}
	if err := out.ans.finish("the stream ended before the answer did"); err != nil {
		return err
	}
	if err := out.checkPrinted(); err != nil {
		return err
	}
	if out.failed {
		return errUndecodable
	}
	return nil
}

// checkPrinted reports text from the model that printed nothing in the
// events and answer modes: bytes that framed no event (plain text, which
// SSE ignores as unknown fields), or events that rebuilt no answer.
func (out *output) checkPrinted() error {
	switch {
	case out.failed || !out.significant:
		return nil
	case out.events == 0:
		return out.problem("decode", fmt.Errorf("received %d bytes that framed no SSE or JSON Lines event; try -o raw", out.decoded))
	case out.o.mode == modeAnswer && out.answers == 0:
		return out.problem("answer", fmt.Errorf("received %d bytes in %s but rebuilt no answer; try -o events", out.decoded, plural(out.events, "event")))
	}
	return nil
}

// plural returns "1 event", "2 events".
func plural(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}

// JSON lines of -json.
type (
	jsonResponse struct {
		Type      string `json:"type"`
		Status    int    `json:"status"`
		Variant   string `json:"invoked_production_variant"`
		RequestID string `json:"request_id,omitempty"`
	}
	jsonMessage struct {
		Type     string  `json:"type"`
		DataType string  `json:"data_type"`
		Complete *bool   `json:"complete,omitempty"`
		Bytes    []byte  `json:"bytes"`
		Text     *string `json:"text,omitempty"`
	}
	jsonEvent struct {
		Type    string          `json:"type"`
		Data    json.RawMessage `json:"data,omitempty"`
		Raw     string          `json:"raw,omitempty"`
		Done    bool            `json:"done,omitempty"`
		SSEType string          `json:"sse_type,omitempty"`
		ID      string          `json:"id,omitempty"`
		Offset  int64           `json:"offset"`
	}
	jsonProblem struct {
		Type  string `json:"type"`
		Error string `json:"error"`
	}
)

// newJSONMessage describes a whole message: its bytes in base64 and, for
// valid UTF8 text, the text too.
func newJSONMessage(t bidi.DataType, data []byte) jsonMessage {
	j := jsonMessage{Type: "message", DataType: t.String(), Bytes: data}
	if j.Bytes == nil {
		j.Bytes = []byte{}
	}
	if t == bidi.DataTypeUTF8 && utf8.Valid(data) {
		s := string(data)
		j.Text = &s
	}
	return j
}

// newJSONPart describes one part. A part's text is given only when it is
// valid UTF-8 on its own: parts may cut characters.
func newJSONPart(p bidi.Part) jsonMessage {
	j := newJSONMessage(p.Type, p.Data)
	j.Type = "part"
	j.Complete = &p.Complete
	return j
}
