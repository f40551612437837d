package framing

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"time"
)

// Event is one framed payload: a JSON value, or the [DONE] marker that ends
// one response.
type Event struct {
	// Data is the event's data without surrounding whitespace: in a
	// well-formed stream, one JSON value. The framer checks JSON syntax
	// wherever it has to find where a value ends: always in JSON Lines,
	// and in SSE unless a blank line ends the data. Malformed SSE data
	// that a blank line ends is delivered as is, as WHATWG prescribes,
	// and its error surfaces when it is decoded (see [Event.Decode]).
	// Data is nil when Done is true.
	//
	// Data aliases the decoder's internal buffers: it is valid only until
	// the next call to Next or Reset on the [Reader] that returned it, or
	// to Next, Write or Reset on the [Decoder] that returned it. Copy it
	// (or unmarshal it) to keep it longer.
	Data json.RawMessage

	// Done reports the SSE end marker "data: [DONE]". It ends one
	// response, not the stream: a session carries many turns, and events
	// of the next response may follow.
	Done bool

	// Type is the SSE "event" field of this event's block (the last one,
	// if several), or "" if none was given (the WHATWG default type is
	// "message"). Always "" in JSON Lines.
	Type string

	// ID is the SSE last event ID: the value of the most recent "id"
	// field, which persists across events, as of the end of this event's
	// block. Always "" in JSON Lines.
	ID string

	// Retry is the reconnection time of the most recent SSE "retry" field,
	// as of the end of this event's block, or 0 if none was given.
	Retry time.Duration

	// Offset is the stream position of the first byte of the value (or of
	// "[DONE]"), counted in bytes from the start of the stream.
	Offset int64
}

// errNoData is returned by Decode for the [DONE] marker.
var errNoData = errors.New("framing: the [DONE] marker carries no data")

// Decode unmarshals the event's data into v with encoding/json. A syntax
// error in the data is returned as a [*SyntaxError]; other errors, such
// as a type mismatch, are returned wrapped with the event's offset.
//
// The offset of a syntax error is exact, the stream position of the
// offending byte, when that byte is in the first line of Data, which is
// always the case for single-line data. Data spanning lines is not a
// contiguous piece of the stream (it lacks the "data:" prefixes, comment
// and field lines, and the '\r' of "\r\n" line ends), so for an error
// on a later line the offset is the event's Offset, its start, and the
// message tells the line of Data, counted from 1.
func (ev Event) Decode(v any) error {
	if ev.Done {
		return errNoData
	}
	err := json.Unmarshal(ev.Data, v)
	if err == nil {
		return nil
	}
	var syn *json.SyntaxError
	if errors.As(err, &syn) {
		at := min(max(syn.Offset-1, 0), int64(len(ev.Data)))
		msg := syn.Error()
		off := ev.Offset + at
		if n := bytes.Count(ev.Data[:at], newline); n > 0 {
			off = ev.Offset
			msg += " (line " + strconv.Itoa(n+1) + " of the event's data)"
		}
		return &SyntaxError{Offset: off, Msg: msg, Err: err}
	}
	return fmt.Errorf("framing: event at offset %d: %w", ev.Offset, err)
}
