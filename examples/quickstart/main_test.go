package main

import (
	"bytes"
	"context"
	"regexp"
	"strings"
	"testing"
	"time"
)

// TestDemoRunsWithoutAWS runs the program as the README's first command
// does: no flags, no terminal, no AWS account.
func TestDemoRunsWithoutAWS(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var out, errOut bytes.Buffer
	if code := run(ctx, nil, strings.NewReader(""), &out, &errOut); code != 0 {
		t.Fatalf("exit code %d, stderr: %s\nstdout:\n%s", code, errOut.String(), out.String())
	}
	got := out.String()
	for _, want := range []string{
		`invoked variant "AllTraffic"`,
		"< You said: Hello from Go! What can bidirectional streaming do?",
		"< You said: Thanks, that helps.",
		"Send splits it into 3 PARTIAL…COMPLETE parts",
		"reassembled by Recv from the model's fragments: identical",
		"the stream ended cleanly",
		"0 protocol violations",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("output lacks %q:\n%s", want, got)
		}
	}
	if strings.Contains(got, "type a prompt") {
		t.Error("went interactive without a terminal")
	}
	// Every part is padded to a bucket.
	pad := regexp.MustCompile(`payload +(\d+) B \+ padding +(\d+) B = +(\d+) B`)
	rows := pad.FindAllStringSubmatch(got, -1)
	if len(rows) != 5 {
		t.Fatalf("%d part rows in the report, want 5:\n%s", len(rows), got)
	}
	for _, r := range rows {
		if r[2] == "0" {
			t.Errorf("part without padding: %s", r[0])
		}
	}
}

func TestFlags(t *testing.T) {
	ctx := context.Background()
	var out, errOut bytes.Buffer
	if code := run(ctx, []string{"-h"}, strings.NewReader(""), &out, &errOut); code != 0 {
		t.Errorf("-h exit code %d", code)
	}
	if !strings.Contains(errOut.String(), "-endpoint") || !strings.Contains(errOut.String(), "Example:") {
		t.Errorf("-h output lacks the flags and an example:\n%s", errOut.String())
	}
	if code := run(ctx, []string{"-no-such-flag"}, strings.NewReader(""), &out, &errOut); code != 2 {
		t.Errorf("bad flag exit code %d, want 2", code)
	}
}
