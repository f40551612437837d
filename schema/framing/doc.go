// Package framing splits a byte stream of JSON values into events: the
// Server-Sent Events and JSON Lines framings that model containers on
// SageMaker stream their output in. It knows nothing of what the values
// mean; package schema decodes them.
//
// A [Reader] pulls from an [io.Reader]; a [Decoder] is pushed whole
// messages, as a receive loop gets them. Both return one [Event] per JSON
// value, whatever the fragmentation of the input: a stream split inside
// "data:", a JSON string, a multi-byte character or a "\r\n" gives the
// same events as the whole stream.
//
//	r := framing.NewReader(body)
//	for {
//		ev, err := r.Next()
//		if err == io.EOF {
//			break // the stream ended cleanly between values
//		}
//		if err != nil {
//			return err // *SyntaxError, io.ErrUnexpectedEOF (wrapped), ...
//		}
//		if ev.Done {
//			continue // "data: [DONE]": one response ended, more may follow
//		}
//		use(ev.Data) // valid until the next call to Next
//	}
//
// # Formats
//
// The format is detected from the first byte, or chosen with
// [Options.Format]. SSE follows the WHATWG rules plus what LMI containers
// emit: "data:" with or without a space, a value that continues over
// lines without "data:", and streams without blank lines. Fields and
// comments may stand anywhere in an event's block: before its data,
// between its data lines, or after its data (up to the blank line that
// ends it). In a stream without blank lines, a data line after a
// complete value starts the next event, and the fields in between belong
// to the next event; until such a stream shows it (at its second event),
// an event is returned when the line after it arrives. JSON Lines is any
// sequence of JSON values, pretty-printed or not.
//
// # Limits and errors
//
// Events are bounded by [Options.MaxEventSize] ([*EventTooLargeError],
// matching [ErrEventTooLarge]); malformed input gives a [*SyntaxError]
// naming its byte offset, and input that stops inside a value one that
// matches [io.ErrUnexpectedEOF]. Such errors are final, unless
// [Options.Resync] lets the framer continue at the next event.
//
// # Buffers
//
// An event's Data aliases the framer's buffers and is valid until the
// next call; a Reader or Decoder holds one read buffer and one event
// buffer, neither growing beyond about [Options.MaxEventSize]. JSON is
// scanned (validated) only where the framing needs to find where a value
// ends; SSE data that a blank line ends is delivered without scanning.
package framing
