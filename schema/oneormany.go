package schema

import (
	"bytes"
	"encoding/json"
)

// This file holds the decoding of the members that servers send either as
// one value or as an array of values.

// startsWith reports whether the JSON value b starts with c.
func startsWith(b []byte, c byte) bool {
	b = bytes.TrimLeft(b, " \t\r\n")
	return len(b) > 0 && b[0] == c
}

// marshalEither encodes list if it is not nil, else one.
func marshalEither[T, E any](one T, list []E) ([]byte, error) {
	if list != nil {
		return json.Marshal(list)
	}
	return json.Marshal(one)
}

// unmarshalEither decodes b into *list if it is an array (an empty array
// gives an empty list, not nil), else into *one.
func unmarshalEither[T, E any](b []byte, one *T, list *[]E) error {
	if startsWith(b, '[') {
		*list = []E{}
		return json.Unmarshal(b, list)
	}
	return json.Unmarshal(b, one)
}

// unmarshalList decodes b into *list: an array, or a single element (a
// value that starts with first), which gives a list of one.
func unmarshalList[E any](b []byte, first byte, list *[]E) error {
	if !startsWith(b, first) {
		return json.Unmarshal(b, list)
	}
	var one E
	if err := json.Unmarshal(b, &one); err != nil {
		return err
	}
	*list = []E{one}
	return nil
}

// unmarshalConcat decodes b, an object or an array of objects, into
// values of type P, and passes each to add, in order; null, and null
// elements, add nothing.
func unmarshalConcat[P any](b []byte, add func(*P)) error {
	if !startsWith(b, '[') {
		return addDecoded(bytes.TrimLeft(b, " \t\r\n"), add)
	}
	var many []json.RawMessage
	if err := json.Unmarshal(b, &many); err != nil {
		return err
	}
	for _, m := range many {
		if err := addDecoded(m, add); err != nil {
			return err
		}
	}
	return nil
}

// addDecoded decodes b into a value of type P and passes it to add,
// unless b is null.
func addDecoded[P any](b []byte, add func(*P)) error {
	if string(b) == "null" {
		return nil
	}
	var one P
	if err := json.Unmarshal(b, &one); err != nil {
		return err
	}
	add(&one)
	return nil
}
