package schema

import (
	"cmp"
	"fmt"
	"slices"
	"strconv"

	"github.com/sagemaker-bidi/sagemaker-bidi/schema/framing"
)

// This file holds what the accumulators share: the generic core of the
// chat and text accumulators, and the bookkeeping of indexed entries.

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

// chunk is what the accumulator core needs of a chunk type
// (*ChatCompletionChunk, *TextCompletion), used as its decoding buffer.
type chunk interface {
	// clear empties the chunk, keeping the storage of its choices.
	clear()
	// decodeFast decodes data with d, reporting false if d cannot (see
	// chunkDecoder): the chunk must then be cleared and decoded with
	// encoding/json.
	decodeFast(d *chunkDecoder, data []byte) bool
	// head returns what the chunk tells of the whole response.
	head() head
	// bare reports whether the chunk may be an error payload, which
	// decodes into a chunk without error, leaving it bare: its object is
	// "error", or it has no id, choices or usage.
	bare() bool
}

// chunkOf is the pointer type of a chunk type C.
type chunkOf[C any] interface {
	*C
	chunk
}

// choice is a choice the core keeps (*chatChoice, *textChoice): a new one
// is made by init, and it embeds an ending.
type choice[T any] interface {
	*T
	indexed
	init(index int)
	end() *ending
}

// core is the state the chat and text accumulators share, and what they
// do alike: decoding events into chunks (C, through PC), the choices by
// index (T, through PT) in the order they appeared, what the chunks tell
// of the whole response, and whether [DONE] was added. The accumulators
// merge what is specific to their choices.
type core[C any, PC chunkOf[C], T any, PT choice[T]] struct {
	head    head
	choices []PT
	done    bool
	failed  int // index of the failed choice of the chunk being added, or -1
	chunk   C   // decoding buffer, reused
	dec     chunkDecoder
}

// decode decodes an event into the decoding buffer and returns it; nil,
// with a nil error, for [DONE], which it records. It returns the
// [*ErrorResponse] of an error payload, and decoding errors as
// [framing.Event.Decode] does.
func (c *core[C, PC, T, PT]) decode(ev framing.Event) (PC, error) {
	if ev.Done {
		c.done = true
		return nil, nil
	}
	p := PC(&c.chunk)
	p.clear()
	if !p.decodeFast(&c.dec, ev.Data) {
		p.clear()
		if err := ev.Decode(p); err != nil {
			return nil, err
		}
	}
	if p.bare() {
		if err := payloadError(ev); err != nil {
			return nil, err
		}
	}
	return p, nil
}

// addEvent adds one event of the stream (see ChatAccumulator.AddEvent):
// a chunk, which it decodes and adds, or the [DONE] marker.
func (c *core[C, PC, T, PT]) addEvent(ev framing.Event, merge func(chunk PC, owned bool) error) error {
	chunk, err := c.decode(ev)
	if chunk == nil {
		return err
	}
	return c.add(chunk, true, merge)
}

// add adds a chunk: what it tells of the response, then its choices,
// which merge merges into the core's (calling choice and endChoice for
// each). owned says that chunk is the decoding buffer, whose contents the
// next decoding replaces rather than overwrites, so that merge need not
// copy them. It returns merge's error, else a [*GenerationError] for the
// first choice, in index order, whose finish reason in the chunk is
// "error".
func (c *core[C, PC, T, PT]) add(chunk PC, owned bool, merge func(chunk PC, owned bool) error) error {
	c.head.merge(chunk.head())
	c.failed = -1
	if err := merge(chunk, owned); err != nil {
		return err
	}
	if c.failed >= 0 {
		return choiceError(c.failed)
	}
	return nil
}

// choice returns the choice with the given index, adding it if new.
func (c *core[C, PC, T, PT]) choice(index int) (PT, error) {
	return entry(&c.choices, index, func(i int) PT {
		p := PT(new(T))
		p.init(i)
		return p
	})
}

// endChoice merges a chunk's finish and stop reasons into ch, noting a
// failure.
func (c *core[C, PC, T, PT]) endChoice(ch PT, finish string, stop StringOrNumber) {
	e := ch.end()
	e.merge(finish, stop)
	if finish == finishError && (c.failed < 0 || e.index < c.failed) {
		c.failed = e.index
	}
}

// complete reports whether the response ended properly: [DONE] was
// added, or every choice received its finish reason.
func (c *core[C, PC, T, PT]) complete() bool {
	return c.done || len(c.choices) > 0 && c.unfinished() < 0
}

// unfinished returns the index of a choice without a finish reason, or -1.
func (c *core[C, PC, T, PT]) unfinished() int {
	for _, ch := range c.choices {
		if !ch.end().finished() {
			return ch.key()
		}
	}
	return -1
}

// results returns what Result reports of the choices of the core, in
// index order: one E per choice, which build fills.
func results[C any, PC chunkOf[C], T any, PT choice[T], E any](c *core[C, PC, T, PT], build func(from PT, to *E)) []E {
	sorted := sortedByIndex(c.choices)
	out := make([]E, len(sorted))
	for i, ch := range sorted {
		build(ch, &out[i])
	}
	return out
}

// err returns the error a Result reports: a [*GenerationError] if a
// choice failed (the first in index order); else nil if the response is
// complete; else an error matching [ErrIncomplete] that tells what is
// missing.
func (c *core[C, PC, T, PT]) err() error {
	bad := -1
	for _, ch := range c.choices {
		if ch.end().failed() && (bad < 0 || ch.key() < bad) {
			bad = ch.key()
		}
	}
	switch {
	case bad >= 0:
		return choiceError(bad)
	case c.complete():
		return nil
	case len(c.choices) == 0:
		return incomplete("no choices and no [DONE]")
	}
	return incomplete("no [DONE] and choice " + strconv.Itoa(c.unfinished()) + " has no finish reason")
}

// reset forgets the response, keeping the decoding buffers.
func (c *core[C, PC, T, PT]) reset() {
	*c = core[C, PC, T, PT]{chunk: c.chunk, dec: c.dec}
}

// ending is the state of a chat or text choice that tells how it ended:
// its index, and the finish and stop reasons of its last chunks.
type ending struct {
	index  int
	finish string
	stop   StringOrNumber
}

func (e *ending) key() int       { return e.index }
func (e *ending) init(index int) { e.index = index }
func (e *ending) end() *ending   { return e }

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

// fill sets the fields of a result that h tells, through the pointers of
// to (whose object it leaves), with a copy of the usage.
func (h *head) fill(to chunkHead) {
	*to.id, *to.created, *to.model = h.id, h.created, h.model
	*to.tier, *to.fingerprint, *to.usage = h.tier, h.fingerprint, cloneUsage(h.usage)
}

// merge adds what a chunk tells: the id, creation time and model of the
// first chunk that has them, the service tier and system fingerprint of
// the last, and a copy of the usage of the last chunk that carries one
// (into the storage of the previous copy: a result clones it).
func (h *head) merge(c head) {
	h.id = cmp.Or(h.id, c.id)
	h.created = cmp.Or(h.created, c.created)
	h.model = cmp.Or(h.model, c.model)
	h.tier = cmp.Or(c.tier, h.tier)
	h.fingerprint = cmp.Or(c.fingerprint, h.fingerprint)
	if c.usage == nil {
		return
	}
	if h.usage == nil {
		h.usage = new(Usage)
	}
	details := h.usage.PromptTokensDetails
	*h.usage = *c.usage
	if d := c.usage.PromptTokensDetails; d != nil {
		if details == nil {
			details = new(PromptTokensDetails)
		}
		*details = *d
		h.usage.PromptTokensDetails = details
	}
}

// logprobsOf is the pointer type of a log probabilities type L
// (Logprobs, CompletionLogprobs).
type logprobsOf[L any] interface {
	*L
	clone() *L
	append(*L)
}

// mergeLogprobs appends the log probabilities of a chunk's choice, lp
// (nil if it has none), to those of the choice, *dst, which it creates if
// needed, copying them unless owned (see core.add).
func mergeLogprobs[L any, PL logprobsOf[L]](dst *PL, lp PL, owned bool) {
	if lp == nil {
		return
	}
	if !owned {
		lp = lp.clone()
	}
	if *dst == nil {
		*dst = new(L)
	}
	(*dst).append(lp)
}

// clearChunk empties the chunk *c, keeping the storage of its choices,
// the field *choices of *c. encoding/json does not zero the elements it
// reuses, so they are zeroed here.
func clearChunk[C, E any](c *C, choices *[]E) {
	kept := (*choices)[:cap(*choices)]
	clear(kept)
	*c = *new(C)
	*choices = kept[:0]
}

// choiceError reports the failure of the choice with the given index of
// a chat or text completion.
func choiceError(index int) *GenerationError {
	return &GenerationError{Details: Details{FinishReason: finishError}, Choice: index}
}

// decodeEvent decodes ev into v, returning decoding errors as
// [framing.Event.Decode] does, and then, if bare reports that v may be an
// error payload (which decodes into a chunk or line without error,
// leaving it bare), the [*ErrorResponse] of the payload if it is one.
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
