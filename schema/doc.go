// Package schema decodes what models on SageMaker stream back, and
// rebuilds the final answer from the stream.
//
// The bidirectional API never looks inside payload bytes: a model's
// output is the container's own format. This package covers the formats
// SageMaker containers use: LMI token lines and dynamic-batch outputs,
// OpenAI-compatible chat and text completion chunks (LMI, vLLM), and
// TGI-compatible SSE, framed as Server-Sent Events or JSON Lines. It is
// transport-independent: the same decoders work on a bidirectional
// session and on InvokeEndpointWithResponseStream payload parts.
//
// # Framing
//
// A [Reader] pulls from an [io.Reader]; a [Decoder] is pushed whole
// messages, as a receive loop gets them. Both return one [Event] per JSON
// value, whatever the fragmentation of the input: a stream split inside
// "data:", a JSON string, a multi-byte character or a "\r\n" gives the
// same events as the whole stream.
//
//	r := schema.NewReader(body)
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
// The format is detected from the first byte, or chosen with
// [Options.Format]. SSE follows the WHATWG rules plus what LMI containers
// emit: "data:" with or without a space, a value that continues over
// lines without "data:", and streams without blank lines. Fields and
// comments may stand anywhere in an event's block: before its data,
// between its data lines, or after its data (up to the blank line that
// ends it). In a stream without blank lines, a data line after a
// complete value starts the next event, and the fields in between belong
// to the next event; until such a stream shows it (at its second event),
// an event is returned when the line after it arrives. Events are
// bounded by [Options.MaxEventSize]; malformed input gives a
// [*SyntaxError] naming its byte offset, and [Options.Resync] lets the
// decoder continue at the next event.
//
// # Payloads
//
// Typed payloads cover every field of the LMI and OpenAI-compatible
// schemas: [LMIRequest], [LMIResponse], [LMIStreamLine],
// [DynamicBatchOutput], [ChatCompletionRequest], [ChatCompletion],
// [ChatCompletionChunk], [TextCompletion] and [ErrorResponse]. They use
// encoding/json, tolerate the quirks real servers show (logprobs as an
// array, numbers where strings are documented, "finish reason" with a
// space) and ignore unknown fields. [Event.Decode] unmarshals an event
// and reports errors at their stream offset. [DetectKind] tells what a
// payload is, for callers that do not know what the endpoint runs.
//
// # Accumulators
//
// [ChatAccumulator], [CompletionAccumulator] and [LMIAccumulator] rebuild
// the non-streaming result from a stream's events. Their Result reports
// [ErrIncomplete] when the response was cut off, that is, ended without
// [DONE] and without a final chunk. A generation that failed mid-stream
// (an LMI line, or a chat or text completion choice, with finish_reason
// "error") is a [*GenerationError]. A result shares no memory with its
// accumulator.
package schema
