package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/sagemaker-bidi/sagemaker-bidi/bidi"
	"github.com/sagemaker-bidi/sagemaker-bidi/bidi/biditest"
	"github.com/sagemaker-bidi/sagemaker-bidi/examples/internal/cli"
	"github.com/sagemaker-bidi/sagemaker-bidi/examples/internal/clitest"
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
		// The client's default part size, as the README says (issue 11:
		// the demo said 16384 bytes).
		"160000 bytes of binary audio: Send splits it into 3 PARTIAL…COMPLETE parts of at most 65536 bytes (Options.MaxPartSize, 64 KiB by default)",
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
	errOut.Reset()
	if code := run(ctx, []string{"-no-such-flag"}, strings.NewReader(""), &out, &errOut); code != 2 {
		t.Errorf("bad flag exit code %d, want 2", code)
	}
	// The error and a pointer to -h, not the whole help.
	if want := "quickstart: usage: flag provided but not defined: -no-such-flag\nRun 'quickstart -h' for the flags.\n"; errOut.String() != want {
		t.Errorf("bad flag: stderr %q, want %q", errOut.String(), want)
	}
	errOut.Reset()
	if code := run(ctx, []string{"-endpoint", "my_endpoint"}, strings.NewReader(""), &out, &errOut); code != 2 || !strings.Contains(errOut.String(), "the character '_' at offset 2") {
		t.Errorf("bad endpoint: exit %d, stderr %q", code, errOut.String())
	}
}

// stallBound ends a long run that has written nothing for that long: a
// hang, since every prompt's answer is written as it arrives.
const stallBound = time.Minute

// TestManyPrompts runs the demo for 20 prompts against demo models that
// cut their answers differently, each prompt in a session of its own
// followed by the audio echo and the end of the stream: the end of an
// answer ("data: [DONE]" and its blank line) may share a message with
// later parts, or have its blank line in a message of its own, and must
// never be mistaken for the audio echo or the end of the stream. A last
// session asks all 20 on one session.
func TestManyPrompts(t *testing.T) {
	for seed := uint64(1); seed <= 3; seed++ {
		t.Run(fmt.Sprint("seed", seed), func(t *testing.T) {
			t.Parallel() // each seed has its own server and client
			// Bounded by progress, not by a deadline for all 21 sessions:
			// under -race on a loaded machine they take minutes.
			ctx, watch := clitest.Progress(t, stallBound)
			srv := biditest.NewServer(biditest.DemoModel(&biditest.DemoOptions{Seed: seed, MaxCut: int(4 + 20*(seed-1))}))
			defer srv.Close()
			client := srv.Client(func(o *bidi.Options) { o.MaxPartSize = 4096 })
			prompts := clitest.RandomPrompts(seed, 20)
			for i, p := range append(prompts, "") {
				o := &options{prompts: []string{p}, audioBytes: 5000, maxPart: 4096}
				if p == "" {
					o.prompts = prompts
				}
				var out bytes.Buffer
				d := &demo{out: watch.Writer(&out), client: client}
				if err := d.run(ctx, o, strings.NewReader("")); err != nil {
					t.Fatalf("session %d: %v (%v)\nprompts %q\n%s", i+1, err, context.Cause(ctx), o.prompts, out.String())
				}
				got := out.String()
				for _, p := range o.prompts {
					if !strings.Contains(got, "\n< You said: "+p+"\n") {
						t.Errorf("no answer to %q:\n%s", p, got)
					}
				}
				if !strings.Contains(got, "fragments: identical") || !strings.Contains(got, "the stream ended cleanly") {
					t.Errorf("audio echo or clean end missing:\n%s", got)
				}
			}
			if v := srv.Violations(); len(v) > 0 {
				t.Errorf("protocol violations: %v", v)
			}
		})
	}
}

// TestShortPrompt runs the reviewer's commands: -prompt a, and -prompt
// hi without the audio step.
func TestShortPrompt(t *testing.T) {
	for _, args := range [][]string{{"-prompt", "a"}, {"-prompt", "hi", "-audio-bytes", "0"}} {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		var out, errOut bytes.Buffer
		if code := run(ctx, args, strings.NewReader(""), &out, &errOut); code != 0 {
			t.Errorf("%q: exit code %d, stderr: %s\nstdout:\n%s", args, code, errOut.String(), out.String())
		}
		cancel()
	}
}

// onTerminal makes run treat every input as a terminal for the test.
func onTerminal(t *testing.T) {
	t.Helper()
	was := isTerminal
	isTerminal = func(any) bool { return true }
	t.Cleanup(func() { isTerminal = was })
}

// TestInteractive types prompts as on a terminal, after the scripted
// demo: blank lines are skipped, every prompt is answered on the same
// session, which then ends cleanly.
func TestInteractive(t *testing.T) {
	onTerminal(t)
	ctx, watch := clitest.Progress(t, stallBound)
	prompts := clitest.RandomPrompts(42, 20)
	in := strings.Join(prompts, "\n\n") + "\n"
	var out, errOut bytes.Buffer
	if code := run(ctx, []string{"-prompt", "x"}, strings.NewReader(in), watch.Writer(&out), &errOut); code != 0 {
		t.Fatalf("exit code %d (%v), stderr: %s\nstdout:\n%s", code, context.Cause(ctx), errOut.String(), out.String())
	}
	got := out.String()
	if !strings.Contains(got, "type a prompt and press Enter") {
		t.Errorf("not interactive:\n%s", got)
	}
	for _, p := range append([]string{"x"}, prompts...) {
		if !strings.Contains(got, "\n> "+p+"\n< (reasoning)") {
			t.Errorf("prompt %q not sent or not answered:\n%s", p, got)
		}
	}
	if !strings.Contains(got, "the stream ended cleanly") {
		t.Errorf("no clean end:\n%s", got)
	}
}

// TestInterruptWhileTyping interrupts the program while it waits for a
// prompt on the terminal: it exits at once with 130 and "interrupted".
func TestInterruptWhileTyping(t *testing.T) {
	onTerminal(t)
	ctx, cancel := context.WithCancelCause(context.Background())
	defer cancel(nil)
	stdin, typing := io.Pipe() // a terminal nobody types on
	defer typing.Close()
	var out, errOut clitest.SyncBuffer
	code := make(chan int, 1)
	go func() { code <- run(ctx, []string{"-audio-bytes", "0"}, stdin, &out, &errOut) }()
	deadline := time.Now().Add(30 * time.Second)
	for !strings.Contains(out.String(), "type a prompt") {
		if time.Now().After(deadline) {
			t.Fatalf("never asked for a prompt:\n%s", out.String())
		}
		time.Sleep(10 * time.Millisecond)
	}
	cancel(cli.ErrInterrupted) // what Ctrl-C does to the context
	select {
	case c := <-code:
		if c != cli.ExitInterrupted || errOut.String() != "quickstart: interrupted\n" {
			t.Errorf("exit code %d, stderr %q; want 130, \"quickstart: interrupted\"", c, errOut.String())
		}
	case <-time.After(10 * time.Second):
		t.Fatal("still waiting for the terminal after Ctrl-C")
	}
}

// TestHTTPErrorOnce checks that an HTTP error names its request id once:
// Error() has it already.
func TestHTTPErrorOnce(t *testing.T) {
	srv := biditest.NewServer(biditest.HandlerFunc(func(st *biditest.Stream) {
		st.Fail(403, "AccessDeniedException", map[string]any{"message": "not allowed"})
	}))
	defer srv.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var out, errOut bytes.Buffer
	d := &demo{out: &out, client: srv.Client()}
	err := d.run(ctx, &options{prompts: []string{"hi"}}, strings.NewReader(""))
	if err == nil {
		t.Fatal("no error")
	}
	if code := cli.Fail(ctx, &errOut, "quickstart", (&cli.Flags{}).Describe(err)); code != 1 {
		t.Errorf("exit code %d", code)
	}
	reqID := srv.Streams()[0].RequestID
	// The status is counted outside the request id, which is random and
	// may contain "403".
	if got := errOut.String(); strings.Count(got, reqID) != 1 || strings.Count(strings.ReplaceAll(got, reqID, ""), "403") != 1 {
		t.Errorf("stderr %q: want the request id %s and the status once", got, reqID)
	}
}

// TestEveryFlagHasAnExample checks that -h shows every flag in use.
func TestEveryFlagHasAnExample(t *testing.T) {
	fs, _ := newFlagSet(io.Discard)
	if missing := cli.FlagsWithoutExample(fs); len(missing) > 0 {
		t.Errorf("flags without an example in -h: %q", missing)
	}
}
