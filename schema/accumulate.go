package schema

import (
	"errors"
	"fmt"
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
