package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/sagemaker-bidi/sagemaker-bidi/bidi/biditest"
	"github.com/sagemaker-bidi/sagemaker-bidi/examples/internal/cli"
	"github.com/sagemaker-bidi/sagemaker-bidi/examples/internal/clitest"
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
		"carrying 1 message of history",
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
	errOut.Reset()
	if code := run(ctx, []string{"-bogus"}, &out, &errOut); code != 2 {
		t.Errorf("bad flag exit code %d, want 2", code)
	}
	// The error and a pointer to -h, not the whole help.
	if want := "chat: usage: flag provided but not defined: -bogus\nRun 'chat -h' for the flags.\n"; errOut.String() != want {
		t.Errorf("bad flag: stderr %q, want %q", errOut.String(), want)
	}
	errOut.Reset()
	if code := run(ctx, []string{"-endpoint", "arn:aws:sagemaker:us-west-2:1:endpoint/my-llm"}, &out, &errOut); code != 2 ||
		!strings.Contains(errOut.String(), "pass the endpoint name, e.g. -endpoint my-llm") {
		t.Errorf("endpoint ARN: exit %d, stderr %q", code, errOut.String())
	}
}

// TestManyPrompts holds 20-turn conversations, and 1-turn ones, with demo
// models that cut their answers differently: the tail of one answer (the
// rest of the message carrying [DONE], or its blank line in a message of
// its own) never leaks into the next turn or the end of the stream.
func TestManyPrompts(t *testing.T) {
	for seed := uint64(1); seed <= 3; seed++ {
		t.Run(fmt.Sprint("seed", seed), func(t *testing.T) {
			t.Parallel() // each seed has its own server and client
			// Bounded by progress (a turn's answer is written as it
			// arrives), not by a deadline for all 21 sessions: under -race
			// on a loaded machine they take minutes.
			ctx, watch := clitest.Progress(t, time.Minute)
			srv := biditest.NewServer(biditest.DemoModel(&biditest.DemoOptions{Seed: seed, MaxCut: int(4 + 20*(seed-1))}))
			defer srv.Close()
			client := srv.Client()
			prompts := clitest.RandomPrompts(seed, 20)
			runs := [][]string{prompts}
			for _, p := range prompts {
				runs = append(runs, []string{p})
			}
			for _, run := range runs {
				var out bytes.Buffer
				c := &conversation{out: watch.Writer(&out), maxTokens: 64}
				if err := c.run(ctx, client, (&cli.Flags{}).OpenInput("e"), run); err != nil {
					t.Fatalf("%v (%v)\nprompts %q\n%s", err, context.Cause(ctx), run, out.String())
				}
				got := out.String()
				for _, p := range run {
					if !strings.Contains(got, "\nmodel> You said: "+p+"\n") {
						t.Errorf("no answer to %q:\n%s", p, got)
					}
				}
				want := fmt.Sprintf("session closed cleanly after %d turns\n", len(run))
				if len(run) == 1 {
					want = "session closed cleanly after 1 turn\n"
				}
				if !strings.Contains(got, want) {
					t.Errorf("output lacks %q:\n%s", want, got)
				}
			}
		})
	}
}

// TestInterrupted runs the program with a context cancelled as Ctrl-C
// cancels it: exit code 130 and "chat: interrupted".
func TestInterrupted(t *testing.T) {
	ctx, cancel := context.WithCancelCause(context.Background())
	cancel(cli.ErrInterrupted)
	var out, errOut bytes.Buffer
	if code := run(ctx, []string{"hi"}, &out, &errOut); code != cli.ExitInterrupted || errOut.String() != "chat: interrupted\n" {
		t.Errorf("exit code %d, stderr %q; want 130, \"chat: interrupted\"", code, errOut.String())
	}
}

// TestEveryFlagHasAnExample checks that -h shows every flag in use.
func TestEveryFlagHasAnExample(t *testing.T) {
	fs, _ := newFlagSet(io.Discard)
	if missing := cli.FlagsWithoutExample(fs); len(missing) > 0 {
		t.Errorf("flags without an example in -h: %q", missing)
	}
}
