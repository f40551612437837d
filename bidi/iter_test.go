package bidi

import (
	"context"
	"errors"
	"io"
	"testing"
)

// TestSeqOf checks the one receive iterator: values in order, the clean
// end not yielded, any other error yielded once with its value and then
// the end, and no receive after the loop breaks.
func TestSeqOf(t *testing.T) {
	boom := errors.New("boom")
	script := func(steps ...error) (func(context.Context) (int, error), *int) {
		calls := 0
		return func(context.Context) (int, error) {
			i := calls
			calls++
			if i >= len(steps) {
				t.Fatalf("receive %d after the end", i)
			}
			if steps[i] != nil {
				return -i, steps[i]
			}
			return i, nil
		}, &calls
	}
	type yielded struct {
		v   int
		err error
	}
	collect := func(recv func(context.Context) (int, error), stopAt int) []yielded {
		var got []yielded
		for v, err := range seqOf(context.Background(), recv) {
			got = append(got, yielded{v, err})
			if len(got) == stopAt {
				break
			}
		}
		return got
	}

	recv, calls := script(nil, nil, io.EOF)
	if got := collect(recv, -1); len(got) != 2 || got[0] != (yielded{0, nil}) || got[1] != (yielded{1, nil}) || *calls != 3 {
		t.Fatalf("clean end: yielded %v after %d receives, want 0 and 1 after 3", got, *calls)
	}
	recv, calls = script(nil, boom, nil)
	if got := collect(recv, -1); len(got) != 2 || got[1] != (yielded{-1, boom}) || *calls != 2 {
		t.Fatalf("error: yielded %v after %d receives, want 0 then (-1, boom) after 2", got, *calls)
	}
	recv, calls = script(nil, nil, nil)
	if got := collect(recv, 1); len(got) != 1 || *calls != 1 {
		t.Fatalf("break: yielded %v after %d receives, want one after 1", got, *calls)
	}
}
