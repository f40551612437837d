package schema

import (
	"cmp"
	"errors"
	"fmt"
	"slices"
	"strconv"
)

// This file holds what the accumulators share.

// maxEntries bounds the distinct choices of a response, and the distinct
// tool calls of a choice, that an accumulator tracks.
const maxEntries = 1024

// ErrTooManyChoices is returned by an accumulator for a stream with more
// than 1024 distinct choices, or tool calls in one choice.
var ErrTooManyChoices = errors.New("schema: too many choices or tool calls")

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

// err returns nil if the response is complete, else an error matching
// [ErrIncomplete] that tells what is missing.
func (p *progress[T]) err() error {
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

// cloneUsage returns a copy of u, or nil for nil, so that a usage kept or
// returned by an accumulator is not shared.
func cloneUsage(u *Usage) *Usage {
	if u == nil {
		return nil
	}
	c := *u
	return &c
}

// decodeChunk is how AddEvent starts for a chat or text chunk. It empties
// *c, the decoding buffer reused from event to event, but keeps the
// storage of choices, the Choices field of *c: encoding/json does not
// zero reused slice elements, so they are cleared. Then it decodes ev
// into *c as [decodeEvent] does; fields returns the fields of *c that tell
// a chunk from an error payload, whose object is "error" or which has no
// id, choices or usage.
func decodeChunk[C, E any](ev Event, c *C, choices *[]E, fields func(*C) (object, id string, usage *Usage)) error {
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
func decodeEvent[V any](ev Event, v *V, bare func(*V) bool) error {
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
func payloadError(ev Event) error {
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
