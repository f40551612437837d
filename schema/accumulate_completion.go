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
	progress progress[*textChoice]
	head     head
	kv       map[string]any // KVTransferParams
	chunk    TextCompletion // decoding buffer, reused
}

type textChoice struct {
	ending
	text     strings.Builder
	logprobs *CompletionLogprobs
	prompt   []map[string]PromptLogprob
}

// AddEvent adds one event of the stream: a chunk, or the [DONE] marker.
// It returns the [*ErrorResponse] of an error payload, decoding errors as
// [Event.Decode] does, and the errors of AddChunk.
func (a *CompletionAccumulator) AddEvent(ev framing.Event) error {
	if ev.Done {
		a.progress.done = true
		return nil
	}
	c := &a.chunk
	if err := decodeChunk(ev, c, &c.Choices, textChunkFields); err != nil {
		return err
	}
	return a.add(c, true)
}

// textChunkFields returns the fields that tell a chunk from an error payload.
func textChunkFields(c *TextCompletion) (object, id string, usage *Usage) {
	return c.Object, c.ID, c.Usage
}

// AddChunk merges one decoded chunk. It keeps no reference to c. It
// returns a [*GenerationError] if a choice of the chunk has finish reason
// "error", and an error matching [ErrTooManyChoices] for a chunk that
// would exceed the limit.
func (a *CompletionAccumulator) AddChunk(c *TextCompletion) error {
	return a.add(c, false)
}

// add merges c; owned says that c is the decoding buffer, whose contents
// the next decoding replaces rather than overwrites, so that they need
// not be copied.
func (a *CompletionAccumulator) add(c *TextCompletion, owned bool) error {
	a.head.merge(head{c.ID, c.Created, c.Model, c.ServiceTier, c.SystemFingerprint, c.Usage})
	if c.KVTransferParams != nil {
		a.kv = c.KVTransferParams
		if !owned {
			a.kv = cloneJSONObject(a.kv)
		}
	}
	failed := -1
	for i := range c.Choices {
		cc := &c.Choices[i]
		ch, err := entry(&a.progress.choices, cc.Index, func(i int) *textChoice { return &textChoice{ending: ending{index: i}} })
		if err != nil {
			return err
		}
		ch.text.WriteString(cc.Text)
		if lp := cc.Logprobs; lp != nil {
			if !owned {
				lp = lp.clone()
			}
			if ch.logprobs == nil {
				ch.logprobs = new(CompletionLogprobs)
			}
			ch.logprobs.append(lp)
		}
		if cc.PromptLogprobs != nil {
			ch.prompt = cc.PromptLogprobs
			if !owned {
				ch.prompt = clonePromptLogprobs(ch.prompt)
			}
		}
		ch.merge(cc.FinishReason, cc.StopReason)
		if cc.FinishReason == finishError && (failed < 0 || cc.Index < failed) {
			failed = cc.Index
		}
	}
	if failed >= 0 {
		return choiceError(failed)
	}
	return nil
}

// Done reports whether the [DONE] marker was added.
func (a *CompletionAccumulator) Done() bool { return a.progress.done }

// Complete reports whether the response ended: [DONE] was added, or
// every choice received its finish reason ("error" included).
func (a *CompletionAccumulator) Complete() bool { return a.progress.complete() }

// Result returns the completion rebuilt so far, choices in index order,
// with an error if it is not a successful result: a [*GenerationError]
// if a choice has finish reason "error" (the first such choice in index
// order), else, if the response is not [CompletionAccumulator.Complete],
// an error matching [ErrIncomplete]. The returned completion shares no
// memory with the accumulator: chunks added later do not change it, and
// changing it does not change later results.
func (a *CompletionAccumulator) Result() (*TextCompletion, error) {
	h := &a.head
	out := TextCompletion{ID: h.id, Object: "text_completion", Created: h.created, Model: h.model,
		ServiceTier: h.tier, SystemFingerprint: h.fingerprint, Usage: cloneUsage(h.usage), KVTransferParams: cloneJSONObject(a.kv)}
	sorted := a.progress.sorted()
	out.Choices = make([]TextChoice, len(sorted))
	for i, c := range sorted {
		ch := &out.Choices[i]
		ch.Index = c.index
		ch.Text = c.text.String()
		ch.FinishReason = c.finish
		ch.StopReason = c.stop
		ch.PromptLogprobs = clonePromptLogprobs(c.prompt)
		ch.Logprobs = c.logprobs.clone()
	}
	return &out, a.progress.err()
}

// Reset forgets the response, ready for the next one.
func (a *CompletionAccumulator) Reset() {
	*a = CompletionAccumulator{chunk: a.chunk}
}
