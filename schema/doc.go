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
// Package [github.com/sagemaker-bidi/sagemaker-bidi/schema/framing] splits
// a byte stream, SSE or JSON Lines, into events; this package decodes and
// accumulates them:
//
//	r := framing.NewReader(body)
//	var acc schema.ChatAccumulator
//	for !acc.Done() {
//		ev, err := r.Next()
//		if err != nil {
//			return err // io.EOF here: the stream ended before [DONE]
//		}
//		if err := acc.AddEvent(ev); err != nil {
//			return err // *ErrorResponse, *GenerationError, ...
//		}
//	}
//	answer, err := acc.Result()
//
// # Payloads
//
// Typed payloads cover every field of the LMI and OpenAI-compatible
// schemas: [LMIRequest], [LMIResponse], [LMIStreamLine],
// [DynamicBatchOutput], [ChatCompletionRequest], [ChatCompletion],
// [ChatCompletionChunk], [TextCompletion] and [ErrorResponse]. They use
// encoding/json, tolerate the quirks real servers show (logprobs as an
// array, numbers where strings are documented, "finish reason" with a
// space) and ignore unknown fields. [framing.Event.Decode] unmarshals an
// event and reports errors at their stream offset. [DetectKind] tells what a
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
//
// The chat and text accumulators decode each chunk exactly as
// encoding/json decodes it into [ChatCompletionChunk] or
// [TextCompletion], quirks included, but read the common chunks without
// encoding/json: adding a chunk to a [ChatAccumulator] costs about one
// allocation (the text of its delta).
package schema
