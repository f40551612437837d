package schema

import (
	"strings"

	"github.com/sagemaker-bidi/sagemaker-bidi/schema/framing"
)

// CompletionAccumulator rebuilds, from the chunks of a streamed text
// completion, the [TextCompletion] a non-streaming call returns: per
// choice index the text concatenated, the finish and stop reasons, the
// log probabilities concatenated and the prompt log probabilities; and
// the usage of the chunk that carries it.
//
// A choice whose finish_reason is "error" is a failure, not a result:
// AddChunk and AddEvent return a [*GenerationError] naming it, after
// merging the chunk, and so does Result, together with what was rebuilt.
//
// The zero value is ready to use. Feed it every event of one response,
// [DONE] included, then call Result; call Reset before the next response.
// A CompletionAccumulator is not safe for concurrent use.
type CompletionAccumulator struct {
	core core[TextCompletion, *TextCompletion, textChoice, *textChoice]
	kv   map[string]any // KVTransferParams
}

type textChoice struct {
	ending
	text     strings.Builder
	logprobs *CompletionLogprobs
	prompt   []map[string]PromptLogprob
}

// AddEvent adds one event of the stream: a chunk, or the [DONE] marker.
// It returns the [*ErrorResponse] of an error payload, decoding errors as
// [framing.Event.Decode] does, and the errors of AddChunk.
func (a *CompletionAccumulator) AddEvent(ev framing.Event) error {
	return a.core.addEvent(ev, a.merge)
}

// AddChunk merges one decoded chunk. It keeps no reference to c. It
// returns a [*GenerationError] if a choice of the chunk has finish reason
// "error", and an error matching [ErrTooManyChoices] for a chunk that
// would exceed the limit.
func (a *CompletionAccumulator) AddChunk(c *TextCompletion) error {
	return a.core.add(c, false, a.merge)
}

// merge merges the choices of c, and its KV transfer parameters (see
// core.add).
func (a *CompletionAccumulator) merge(c *TextCompletion, owned bool) error {
	if c.KVTransferParams != nil {
		a.kv = c.KVTransferParams
		if !owned {
			a.kv = cloneJSONObject(a.kv)
		}
	}
	for i := range c.Choices {
		cc := &c.Choices[i]
		ch, err := a.core.choice(cc.Index)
		if err != nil {
			return err
		}
		ch.text.WriteString(cc.Text)
		mergeLogprobs(&ch.logprobs, cc.Logprobs, owned)
		if cc.PromptLogprobs != nil {
			ch.prompt = cc.PromptLogprobs
			if !owned {
				ch.prompt = clonePromptLogprobs(ch.prompt)
			}
		}
		a.core.endChoice(ch, cc.FinishReason, cc.StopReason)
	}
	return nil
}

// Done reports whether the [DONE] marker was added.
func (a *CompletionAccumulator) Done() bool { return a.core.done }

// Complete reports whether the response ended: [DONE] was added, or
// every choice received its finish reason ("error" included).
func (a *CompletionAccumulator) Complete() bool { return a.core.complete() }

// Result returns the completion rebuilt so far, choices in index order,
// with an error if it is not a successful result: a [*GenerationError]
// if a choice has finish reason "error" (the first such choice in index
// order), else, if the response is not [CompletionAccumulator.Complete],
// an error matching [ErrIncomplete]. The returned completion shares no
// memory with the accumulator: chunks added later do not change it, and
// changing it does not change later results.
func (a *CompletionAccumulator) Result() (*TextCompletion, error) {
	out := TextCompletion{Object: "text_completion", KVTransferParams: cloneJSONObject(a.kv)}
	a.core.head.fill(chunkHead{&out.ID, &out.Object, &out.Model, &out.ServiceTier, &out.SystemFingerprint, &out.Created, &out.Usage})
	out.Choices = results(&a.core, func(c *textChoice, ch *TextChoice) {
		ch.Index = c.index
		ch.Text = c.text.String()
		ch.FinishReason = c.finish
		ch.StopReason = c.stop
		ch.PromptLogprobs = clonePromptLogprobs(c.prompt)
		ch.Logprobs = c.logprobs.clone()
	})
	return &out, a.core.err()
}

// Reset forgets the response, ready for the next one.
func (a *CompletionAccumulator) Reset() {
	a.core.reset()
	a.kv = nil
}

// The methods of TextCompletion as the core's decoding buffer.

func (c *TextCompletion) clear() { clearChunk(c, &c.Choices) }

func (c *TextCompletion) decodeFast(d *chunkDecoder, data []byte) bool { return d.decodeText(data, c) }

func (c *TextCompletion) head() head {
	return head{c.ID, c.Created, c.Model, c.ServiceTier, c.SystemFingerprint, c.Usage}
}

func (c *TextCompletion) bare() bool {
	return c.Object == "error" || c.ID == "" && len(c.Choices) == 0 && c.Usage == nil
}
