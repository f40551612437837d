package schema

import (
	"cmp"
	"fmt"
	"maps"
	"slices"
	"strconv"

	"github.com/sagemaker-bidi/sagemaker-bidi/schema/framing"
)

// This file holds what the accumulators share.

// maxEntries bounds the distinct choices of a response, and the distinct
// tool calls of a choice, that an accumulator tracks.
const maxEntries = 1024

// indexed is an entry an accumulator keeps per index (choice, tool call).
type indexed interface{ key() int }

// entry returns the entry of list with the given index, adding a new one
// made by create if there is none. Streams have a handful of entries, so
// a linear search beats a map.
func entry[T indexed](list *[]T, index int, create func(int) T) (T, error) {
	for _, e := range *list {
		if e.key() == index {
			return e, nil
		}
	}
	if len(*list) >= maxEntries {
		var zero T
		return zero, fmt.Errorf("schema: index %d: %w", index, ErrTooManyChoices)
	}
	e := create(index)
	*list = append(*list, e)
	return e, nil
}

// sortedByIndex returns a copy of list in index order.
func sortedByIndex[T indexed](list []T) []T {
	return slices.SortedFunc(slices.Values(list), func(x, y T) int { return x.key() - y.key() })
}

// ending is the state of a chat or text choice that tells how it ended:
// its index, and the finish and stop reasons of its last chunks.
type ending struct {
	index  int
	finish string
	stop   StringOrNumber
}

func (e *ending) key() int { return e.index }

// finished reports whether the choice received its finish reason.
func (e *ending) finished() bool { return e.finish != "" }

// failed reports whether the choice ended with finish reason "error".
func (e *ending) failed() bool { return e.finish == finishError }

// merge takes the finish and stop reasons of a chunk's choice, those it
// carries replacing earlier ones.
func (e *ending) merge(finish string, stop StringOrNumber) {
	e.finish = cmp.Or(finish, e.finish)
	e.stop = cmp.Or(stop, e.stop)
}

// choice is a choice a chat or text accumulator keeps (*chatChoice,
// *textChoice), which embeds an ending.
type choice interface {
	indexed
	finished() bool
	failed() bool
}

// progress is what a chat or text accumulator knows of how far the
// response got: its choices, in the order they appeared, and whether
// [DONE] was added.
type progress[T choice] struct {
	choices []T
	done    bool
}

// complete reports whether the response ended properly: [DONE] was
// added, or every choice received its finish reason.
func (p *progress[T]) complete() bool {
	return p.done || len(p.choices) > 0 && p.unfinished() < 0
}

// unfinished returns the index of a choice without a finish reason, or -1.
func (p *progress[T]) unfinished() int {
	for _, c := range p.choices {
		if !c.finished() {
			return c.key()
		}
	}
	return -1
}

// sorted returns the choices in index order.
func (p *progress[T]) sorted() []T { return sortedByIndex(p.choices) }

// err returns the error a Result reports: a [*GenerationError] if a
// choice failed; else nil if the response is complete; else an error
// matching [ErrIncomplete] that tells what is missing.
func (p *progress[T]) err() error {
	if err := p.failed(); err != nil {
		return err
	}
	switch {
	case p.complete():
		return nil
	case len(p.choices) == 0:
		return incomplete("no choices and no [DONE]")
	}
	return incomplete("no [DONE] and choice " + strconv.Itoa(p.unfinished()) + " has no finish reason")
}

// head is what the chunks of a chat or text completion tell of the
// whole response.
type head struct {
	id          string
	created     int64
	model       string
	tier        string
	fingerprint string
	usage       *Usage
}

// merge adds what a chunk tells: the id, creation time and model of the
// first chunk that has them, the service tier and system fingerprint of
// the last, and a copy of the usage of the last chunk that carries one.
func (h *head) merge(c head) {
	h.id = cmp.Or(h.id, c.id)
	h.created = cmp.Or(h.created, c.created)
	h.model = cmp.Or(h.model, c.model)
	h.tier = cmp.Or(c.tier, h.tier)
	h.fingerprint = cmp.Or(c.fingerprint, h.fingerprint)
	if c.usage != nil {
		h.usage = cloneUsage(c.usage)
	}
}

// failed returns a [*GenerationError] for the first choice, in index
// order, whose finish reason is "error", or nil.
func (p *progress[T]) failed() error {
	bad := -1
	for _, c := range p.choices {
		if c.failed() && (bad < 0 || c.key() < bad) {
			bad = c.key()
		}
	}
	if bad < 0 {
		return nil
	}
	return choiceError(bad)
}

// choiceError reports the failure of the choice with the given index of
// a chat or text completion.
func choiceError(index int) *GenerationError {
	return &GenerationError{Details: Details{FinishReason: finishError}, Choice: index}
}

// The clone functions below return deep copies, so that what an
// accumulator keeps and what its Result returns share no memory: a
// caller may change a result, or a chunk it added, without changing the
// next result. nil stays nil and empty stays empty.

func cloneUsage(u *Usage) *Usage {
	if u == nil {
		return nil
	}
	c := *u
	if d := u.PromptTokensDetails; d != nil {
		dc := *d
		c.PromptTokensDetails = &dc
	}
	return &c
}

// cloneJSONObject copies an object decoded into a map by encoding/json,
// with the objects and arrays it contains. Values of other types are
// immutable when encoding/json produced them, and copied as they are.
func cloneJSONObject(m map[string]any) map[string]any {
	if m == nil {
		return nil
	}
	c := make(map[string]any, len(m))
	for k, v := range m {
		c[k] = cloneJSON(v)
	}
	return c
}

func cloneJSON(v any) any {
	switch v := v.(type) {
	case map[string]any:
		return cloneJSONObject(v)
	case []any:
		if v == nil {
			return v
		}
		c := make([]any, len(v))
		for i, e := range v {
			c[i] = cloneJSON(e)
		}
		return c
	}
	return v
}

func clonePromptLogprobs(p []map[string]PromptLogprob) []map[string]PromptLogprob {
	if p == nil {
		return nil
	}
	c := make([]map[string]PromptLogprob, len(p))
	for i, m := range p {
		c[i] = maps.Clone(m)
	}
	return c
}

func (l *Logprobs) clone() *Logprobs {
	if l == nil {
		return nil
	}
	return &Logprobs{Content: cloneTokenLogprobs(l.Content), Refusal: cloneTokenLogprobs(l.Refusal)}
}

func cloneTokenLogprobs(s []TokenLogprob) []TokenLogprob {
	s = slices.Clone(s)
	for i := range s {
		t := &s[i]
		t.Bytes = slices.Clone(t.Bytes)
		t.TopLogprobs = slices.Clone(t.TopLogprobs)
		for j := range t.TopLogprobs {
			t.TopLogprobs[j].Bytes = slices.Clone(t.TopLogprobs[j].Bytes)
		}
	}
	return s
}

func (l *CompletionLogprobs) clone() *CompletionLogprobs {
	if l == nil {
		return nil
	}
	c := &CompletionLogprobs{
		TextOffset:    slices.Clone(l.TextOffset),
		TokenLogprobs: slices.Clone(l.TokenLogprobs),
		Tokens:        slices.Clone(l.Tokens),
		TopLogprobs:   slices.Clone(l.TopLogprobs),
	}
	for i, m := range c.TopLogprobs {
		c.TopLogprobs[i] = maps.Clone(m)
	}
	return c
}

func (d *Details) clone() *Details {
	if d == nil {
		return nil
	}
	c := *d
	c.Tokens = slices.Clone(d.Tokens)
	c.Prefill = slices.Clone(d.Prefill)
	c.BestOfSequences = slices.Clone(d.BestOfSequences)
	for i := range c.BestOfSequences {
		c.BestOfSequences[i].Tokens = slices.Clone(c.BestOfSequences[i].Tokens)
	}
	return &c
}

// decodeChunk is how AddEvent starts for a chat or text chunk. It empties
// *c, the decoding buffer reused from event to event, but keeps the
// storage of choices, the Choices field of *c: encoding/json does not
// zero reused slice elements, so they are cleared. Then it decodes ev
// into *c as [decodeEvent] does; fields returns the fields of *c that tell
// a chunk from an error payload, whose object is "error" or which has no
// id, choices or usage.
func decodeChunk[C, E any](ev framing.Event, c *C, choices *[]E, fields func(*C) (object, id string, usage *Usage)) error {
	kept := (*choices)[:cap(*choices)]
	clear(kept)
	*c = *new(C)
	*choices = kept[:0]
	return decodeEvent(ev, c, func(c *C) bool {
		object, id, usage := fields(c)
		return object == "error" || id == "" && len(*choices) == 0 && usage == nil
	})
}

// decodeEvent decodes ev into v, returning decoding errors as
// [Event.Decode] does, and then, if bare reports that v may be an error
// payload (which decodes into a chunk or line without error, leaving it
// bare), the [*ErrorResponse] of the payload if it is one.
func decodeEvent[V any](ev framing.Event, v *V, bare func(*V) bool) error {
	if err := ev.Decode(v); err != nil {
		return err
	}
	if bare(v) {
		return payloadError(ev)
	}
	return nil
}

// payloadError returns the error a payload carries, if it is an error
// payload, or nil.
func payloadError(ev framing.Event) error {
	var e ErrorResponse
	if ev.Decode(&e) != nil || e.empty() {
		return nil
	}
	return &e
}

// incomplete reports a response that was cut off.
func incomplete(why string) error {
	return fmt.Errorf("%w: %s", ErrIncomplete, why)
}
