// Command quickstart shows a bidirectional streaming session end to end.
//
// With no flags it needs no AWS account: it starts an in-process
// SageMaker-compatible server (package biditest) that verifies the SigV4
// request and every chunk signature, runs a small demo chat model behind
// it, and walks through a session: a streamed chat answer rebuilt with
// package schema, a binary "audio" message fragmented into parts and
// echoed back in fragments, padding of every part, and a clean close.
//
//	go run ./examples/quickstart
//
// With -endpoint it talks to a real SageMaker endpoint instead, using the
// usual AWS credentials chain:
//
//	go run ./examples/quickstart -endpoint my-endpoint -region us-west-2
//
// On a terminal, after the scripted demo it reads prompts from standard
// input until end of input; otherwise it exits when the demo is done.
package main

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/sagemaker-bidi/sagemaker-bidi/bidi"
	"github.com/sagemaker-bidi/sagemaker-bidi/bidi/biditest"
	"github.com/sagemaker-bidi/sagemaker-bidi/examples/internal/cli"
)

func main() {
	ctx, stop := cli.NotifyInterrupt(context.Background())
	code := run(ctx, os.Args[1:], os.Stdin, os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// options are the command-line flags.
type options struct {
	conn                cli.Flags
	prompts             []string
	audioBytes, maxPart int
	interactive         bool
}

// newFlagSet defines every flag on a new flag set writing to out; the
// first prompt lands in *prompt.
func newFlagSet(out io.Writer) (*flag.FlagSet, *options) {
	fs := cli.NewFlagSet("quickstart", `usage: quickstart [flags]

With no flags, runs a demo session against an in-process server. On a
terminal, after the demo, it reads more prompts until Ctrl-D.
Example: quickstart -endpoint my-endpoint -region us-west-2

`, out)
	o := &options{prompts: []string{"Hello from Go! What can bidirectional streaming do?", "Thanks, that helps."}}
	o.conn.Register(fs, "; empty runs the local demo server")
	// The defaults show fragmentation as the client does it by default:
	// 5 s of 16 kHz 16-bit mono audio (160000 bytes) in parts of at most
	// 64 KiB, the Options.MaxPartSize default.
	fs.IntVar(&o.audioBytes, "audio-bytes", 160000, "`size` of the binary message sent in the demo (0 skips it), e.g. -audio-bytes 32000")
	fs.IntVar(&o.maxPart, "max-part", 64<<10, "largest part `size` in bytes (Options.MaxPartSize); larger messages are fragmented, e.g. -max-part 4096")
	fs.StringVar(&o.prompts[0], "prompt", o.prompts[0], "first chat `prompt`, e.g. -prompt 'What is SageMaker?'")
	return fs, o
}

func parseFlags(args []string, stderr io.Writer) (*options, error) {
	fs, o := newFlagSet(stderr)
	if err := cli.ParseChecked(fs, args, &o.conn); err != nil {
		return nil, err
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "quickstart: unexpected argument %q (use -prompt, or type prompts on a terminal)\n", fs.Arg(0))
		return nil, errors.New("unexpected argument")
	}
	if o.maxPart <= 0 || o.audioBytes < 0 {
		fmt.Fprintln(stderr, "quickstart: -max-part must be positive and -audio-bytes at least 0")
		return nil, errors.New("bad flag value")
	}
	return o, nil
}

// isTerminal reports whether standard input is a terminal; tests replace
// it to type prompts.
var isTerminal = cli.IsTerminal

func run(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	o, err := parseFlags(args, stderr)
	if errors.Is(err, flag.ErrHelp) {
		return 0
	} else if err != nil {
		return 2
	}
	o.interactive = isTerminal(stdin)

	srv := o.conn.LocalServer(biditest.DemoModel(nil))
	if srv != nil {
		defer srv.Close()
		fmt.Fprintf(stdout, "local SageMaker-compatible server at %s (it verifies the SigV4 request and every chunk signature)\n", srv.URL)
	}
	client, err := o.conn.Client(ctx, srv, func(opt *bidi.Options) { opt.MaxPartSize = o.maxPart })
	if err != nil {
		return cli.Fail(ctx, stderr, "quickstart", "loading AWS config: "+o.conn.Describe(err))
	}

	d := &demo{out: stdout, client: client, server: srv}
	if err := d.run(ctx, o, stdin); err != nil {
		return cli.Fail(ctx, stderr, "quickstart", o.conn.Describe(err))
	}
	return 0
}

// readPrompts returns a function that yields the non-empty lines of r,
// and false at the end of r or once ctx is done. The lines are read by a
// goroutine, so that Ctrl-C stops a program waiting for a line; it stays
// blocked on r until the next line or the program's exit.
func readPrompts(ctx context.Context, r io.Reader) func() (string, bool) {
	lines := make(chan string)
	go func() {
		defer close(lines)
		sc := bufio.NewScanner(r)
		for sc.Scan() {
			if line := sc.Text(); line != "" {
				select {
				case lines <- line:
				case <-ctx.Done():
					return
				}
			}
		}
	}()
	return func() (string, bool) {
		select {
		case line, ok := <-lines:
			return line, ok
		case <-ctx.Done():
			return "", false
		}
	}
}

// since formats the time since start for the transcript.
func since(start time.Time) string { return time.Since(start).Round(10 * time.Microsecond).String() }
