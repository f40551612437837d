package main

import (
	"io"
	"testing"
	"time"

	"github.com/sagemaker-bidi/sagemaker-bidi/examples/internal/cli"
)

// TestEveryFlagHasAnExample checks that -h documents every flag with an
// example.
func TestEveryFlagHasAnExample(t *testing.T) {
	var o options
	var dataType string
	fs := newFlagSet(&o, &dataType, io.Discard)
	if missing := cli.FlagsWithoutExample(fs); len(missing) > 0 {
		t.Errorf("flags without an example in -h: %q", missing)
	}
}

// TestTerminalDefaults checks the defaults that depend on the terminals:
// -linger 1s unless the input is typed (or -local), -nl when raw output
// goes to a terminal, and neither when the flag is given.
func TestTerminalDefaults(t *testing.T) {
	for _, tc := range []struct {
		args              []string
		typing, stdoutTTY bool
		linger            time.Duration
		nl                bool
	}{
		{[]string{"-endpoint", "e"}, false, false, time.Second, false},
		{[]string{"-endpoint", "e"}, true, true, 0, true},
		{[]string{"-endpoint", "e", "-linger", "0", "-nl=false"}, false, true, 0, false},
		{[]string{"-endpoint", "e", "-linger", "3s", "-json"}, true, true, 3 * time.Second, false},
		{[]string{"-local", "-o", "answer"}, false, true, 0, false},
	} {
		o, err := parseFlags(tc.args, io.Discard, io.Discard)
		if err != nil {
			t.Fatalf("%q: %v", tc.args, err)
		}
		o.applyDefaults(tc.typing, tc.stdoutTTY)
		if o.linger != tc.linger || o.newline != tc.nl {
			t.Errorf("%q (typing %v, stdout a terminal %v): -linger %v -nl %v, want %v %v", tc.args, tc.typing, tc.stdoutTTY, o.linger, o.newline, tc.linger, tc.nl)
		}
	}
}

func TestProgressBarAndSizes(t *testing.T) {
	for _, tc := range []struct {
		done, total int64
		want        string
	}{
		{0, 10, "[----------]   0%"},
		{5, 10, "[#####-----]  50%"},
		{12, 10, "[##########] 100%"},
	} {
		if got := progressBar(tc.done, tc.total); got != tc.want {
			t.Errorf("progressBar(%d, %d) = %q, want %q", tc.done, tc.total, got, tc.want)
		}
	}
	if got := count(1, 2048); got != "1 part 2.0 KiB" {
		t.Errorf("count = %q", got)
	}
	if got := size(3 << 20); got != "3.0 MiB" {
		t.Errorf("size = %q", got)
	}
}
