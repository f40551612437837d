package schema

import "strings"

// CompletionAccumulator rebuilds, from the chunks of a streamed text
// completion, the [TextCompletion] a non-streaming call returns: per
// choice index the text concatenated, the finish and stop reasons, the
// log probabilities concatenated and the prompt log probabilities; and
// the usage of the chunk that carries it.
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
// It returns the [*ErrorResponse] of an error payload, and decoding errors
// as [Event.Decode] does.
func (a *CompletionAccumulator) AddEvent(ev Event) error {
	if ev.Done {
		a.progress.done = true
		return nil
	}
	c := &a.chunk
	if err := decodeChunk(ev, c, &c.Choices, textChunkFields); err != nil {
		return err
	}
	return a.AddChunk(c)
}

// textChunkFields returns the fields that tell a chunk from an error payload.
func textChunkFields(c *TextCompletion) (object, id string, usage *Usage) {
	return c.Object, c.ID, c.Usage
}

// AddChunk merges one decoded chunk. It keeps no reference to c.
func (a *CompletionAccumulator) AddChunk(c *TextCompletion) error {
	a.head.merge(head{c.ID, c.Created, c.Model, c.ServiceTier, c.SystemFingerprint, c.Usage})
	if c.KVTransferParams != nil {
		a.kv = c.KVTransferParams
	}
	for i := range c.Choices {
		cc := &c.Choices[i]
		ch, err := entry(&a.progress.choices, cc.Index, func(i int) *textChoice { return &textChoice{ending: ending{index: i}} })
		if err != nil {
			return err
		}
		ch.text.WriteString(cc.Text)
		if cc.Logprobs != nil {
			if ch.logprobs == nil {
				ch.logprobs = new(CompletionLogprobs)
			}
			ch.logprobs.append(cc.Logprobs)
		}
		if cc.PromptLogprobs != nil {
			ch.prompt = cc.PromptLogprobs
		}
		ch.merge(cc.FinishReason, cc.StopReason)
	}
	return nil
}

// Done reports whether the [DONE] marker was added.
func (a *CompletionAccumulator) Done() bool { return a.progress.done }

// Complete reports whether the response ended properly: [DONE] was
// added, or every choice received its finish reason.
func (a *CompletionAccumulator) Complete() bool { return a.progress.complete() }

// Result returns the completion rebuilt so far, choices in index order.
// If the response is not [CompletionAccumulator.Complete], it also returns
// an error matching [ErrIncomplete]. Chunks added later do not change a
// returned completion.
func (a *CompletionAccumulator) Result() (*TextCompletion, error) {
	h := &a.head
	out := TextCompletion{ID: h.id, Object: "text_completion", Created: h.created, Model: h.model,
		ServiceTier: h.tier, SystemFingerprint: h.fingerprint, Usage: cloneUsage(h.usage), KVTransferParams: a.kv}
	sorted := a.progress.sorted()
	out.Choices = make([]TextChoice, len(sorted))
	for i, c := range sorted {
		ch := &out.Choices[i]
		ch.Index = c.index
		ch.Text = c.text.String()
		ch.FinishReason = c.finish
		ch.StopReason = c.stop
		ch.PromptLogprobs = c.prompt
		if c.logprobs != nil {
			lp := *c.logprobs
			ch.Logprobs = &lp
		}
	}
	return &out, a.progress.err()
}

// Reset forgets the response, ready for the next one.
func (a *CompletionAccumulator) Reset() {
	*a = CompletionAccumulator{chunk: a.chunk}
}
