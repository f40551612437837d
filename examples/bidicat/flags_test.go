package main

import (
	"flag"
	"io"
	"strings"
	"testing"
)

// TestEveryFlagHasAnExample checks that -h documents every flag with an
// example.
func TestEveryFlagHasAnExample(t *testing.T) {
	var o options
	var dataType string
	fs := newFlagSet(&o, &dataType, io.Discard)
	fs.VisitAll(func(f *flag.Flag) {
		if !strings.Contains(f.Usage, "e.g. ") || !strings.Contains(f.Usage[strings.Index(f.Usage, "e.g. "):], "-"+f.Name) {
			t.Errorf("-%s: usage %q has no example", f.Name, f.Usage)
		}
	})
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
