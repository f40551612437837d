package main

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"
)

func TestChatWithoutAWS(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var out, errOut bytes.Buffer
	if code := run(ctx, []string{"hello there", "and once more"}, &out, &errOut); code != 0 {
		t.Fatalf("exit code %d, stderr: %s\nstdout:\n%s", code, errOut.String(), out.String())
	}
	got := out.String()
	for _, want := range []string{
		`session open: invoked variant "AllTraffic"`,
		"you> hello there\n",
		"carrying 1 messages of history",
		"model (thinking)> Okay, the user wrote \"hello there\"",
		"model> You said: hello there\n",
		"you> and once more\n",
		"carrying 3 messages of history", // the first answer joined the history
		"model> You said: and once more\n",
		`finish_reason "stop"`,
		"session closed cleanly after 2 turns",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("output lacks %q:\n%s", want, got)
		}
	}
	if strings.Count(got, "[rebuilt by schema:") != 2 {
		t.Errorf("want two rebuilt answers:\n%s", got)
	}
}

func TestChatDefaultPromptsAndFlags(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var out, errOut bytes.Buffer
	if code := run(ctx, nil, &out, &errOut); code != 0 {
		t.Fatalf("exit code %d, stderr: %s", code, errOut.String())
	}
	if !strings.Contains(out.String(), "model> You said: "+defaultPrompts[1]) {
		t.Errorf("default prompts not answered:\n%s", out.String())
	}
	if code := run(ctx, []string{"-h"}, &out, &errOut); code != 0 {
		t.Errorf("-h exit code %d", code)
	}
	if code := run(ctx, []string{"-bogus"}, &out, &errOut); code != 2 {
		t.Errorf("bad flag exit code %d, want 2", code)
	}
}
