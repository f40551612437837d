package schema

import (
	"cmp"
	"slices"
	"strconv"
	"strings"
)

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
	head    TextCompletion
	choices []*textChoice
	done    bool
	chunk   TextCompletion // decoding buffer, reused
}

type textChoice struct {
	index    int
	text     strings.Builder
	logprobs *CompletionLogprobs
	prompt   []map[string]PromptLogprob
	finish   string
	stop     StringOrNumber
}

func (c *textChoice) key() int { return c.index }

// AddEvent adds one event of the stream: a chunk, or the [DONE] marker.
// It returns the [*ErrorResponse] of an error payload, and decoding errors
// as [Event.Decode] does.
func (a *CompletionAccumulator) AddEvent(ev Event) error {
	if ev.Done {
		a.done = true
		return nil
	}
	c := &a.chunk
	choices := c.Choices[:cap(c.Choices)]
	clear(choices)
	*c = TextCompletion{Choices: choices[:0]}
	if err := ev.Decode(c); err != nil {
		return err
	}
	if c.Object == "error" || c.ID == "" && len(c.Choices) == 0 && c.Usage == nil {
		if err := payloadError(ev); err != nil {
			return err
		}
	}
	return a.AddChunk(c)
}

// AddChunk merges one decoded chunk. It keeps no reference to c.
func (a *CompletionAccumulator) AddChunk(c *TextCompletion) error {
	h := &a.head
	h.ID = cmp.Or(h.ID, c.ID)
	h.Created = cmp.Or(h.Created, c.Created)
	h.Model = cmp.Or(h.Model, c.Model)
	h.ServiceTier = cmp.Or(c.ServiceTier, h.ServiceTier)
	h.SystemFingerprint = cmp.Or(c.SystemFingerprint, h.SystemFingerprint)
	if c.Usage != nil {
		u := *c.Usage
		h.Usage = &u
	}
	if c.KVTransferParams != nil {
		h.KVTransferParams = c.KVTransferParams
	}
	for i := range c.Choices {
		cc := &c.Choices[i]
		ch, err := entry(&a.choices, cc.Index, func(i int) *textChoice { return &textChoice{index: i} })
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
		ch.finish = cmp.Or(cc.FinishReason, ch.finish)
		ch.stop = cmp.Or(cc.StopReason, ch.stop)
	}
	return nil
}

// Done reports whether the [DONE] marker was added.
func (a *CompletionAccumulator) Done() bool { return a.done }

// Complete reports whether the response ended properly: [DONE] was
// added, or every choice received its finish reason.
func (a *CompletionAccumulator) Complete() bool {
	return a.done || len(a.choices) > 0 && a.unfinished() < 0
}

func (a *CompletionAccumulator) unfinished() int {
	for _, c := range a.choices {
		if c.finish == "" {
			return c.index
		}
	}
	return -1
}

// Result returns the completion rebuilt so far, choices in index order.
// If the response is not [CompletionAccumulator.Complete], it also returns
// an error matching [ErrIncomplete]. Chunks added later do not change a
// returned completion.
func (a *CompletionAccumulator) Result() (*TextCompletion, error) {
	out := a.head
	out.Object = "text_completion"
	if out.Usage != nil {
		u := *out.Usage
		out.Usage = &u
	}
	sorted := slices.SortedFunc(slices.Values(a.choices), func(x, y *textChoice) int { return x.index - y.index })
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
	if !a.Complete() {
		if len(a.choices) == 0 {
			return &out, incomplete("no choices and no [DONE]")
		}
		return &out, incomplete("no [DONE] and choice " + strconv.Itoa(a.unfinished()) + " has no finish reason")
	}
	return &out, nil
}

// Reset forgets the response, ready for the next one.
func (a *CompletionAccumulator) Reset() {
	*a = CompletionAccumulator{chunk: a.chunk}
}
