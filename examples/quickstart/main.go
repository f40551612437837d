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
	"os/signal"
	"time"

	"github.com/sagemaker-bidi/sagemaker-bidi/bidi"
	"github.com/sagemaker-bidi/sagemaker-bidi/bidi/biditest"
	"github.com/sagemaker-bidi/sagemaker-bidi/examples/internal/cli"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	os.Exit(run(ctx, os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}

// options are the command-line flags.
type options struct {
	conn                cli.Flags
	prompts             []string
	audioBytes, maxPart int
	interactive         bool
}

func parseFlags(args []string, stderr io.Writer) (*options, error) {
	fs := cli.NewFlagSet("quickstart", "usage: quickstart [flags]\n\nWith no flags, runs a demo session against an in-process server.\nExample: quickstart -endpoint my-endpoint -region us-west-2\n\n", stderr)
	o := &options{}
	o.conn.Register(fs, "; empty runs the local demo server")
	fs.IntVar(&o.audioBytes, "audio-bytes", 40000, "size of the binary message sent in the demo (0 skips it)")
	fs.IntVar(&o.maxPart, "max-part", 16<<10, "largest part `size` in bytes; larger messages are fragmented")
	prompt := fs.String("prompt", "Hello from Go! What can bidirectional streaming do?", "first chat `prompt`")
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	o.prompts = []string{*prompt, "Thanks, that helps."}
	return o, nil
}

func run(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	o, err := parseFlags(args, stderr)
	if errors.Is(err, flag.ErrHelp) {
		return 0
	} else if err != nil {
		return 2
	}
	o.interactive = cli.IsTerminal(stdin)

	srv := o.conn.LocalServer(biditest.DemoModel(nil))
	if srv != nil {
		defer srv.Close()
		fmt.Fprintf(stdout, "local SageMaker-compatible server at %s (it verifies the SigV4 request and every chunk signature)\n", srv.URL)
	}
	client, err := o.conn.Client(ctx, srv, func(opt *bidi.Options) { opt.MaxPartSize = o.maxPart })
	if err != nil {
		fmt.Fprintln(stderr, "quickstart: loading AWS config:", err)
		return 1
	}

	d := &demo{out: stdout, client: client, server: srv}
	if err := d.run(ctx, o, stdin); err != nil {
		fmt.Fprintln(stderr, "quickstart:", describe(err))
		return 1
	}
	return 0
}

// describe formats an error with the typed fields a user would look at.
func describe(err error) string {
	var me *bidi.ModelError
	var re *bidi.ResponseError
	switch {
	case errors.As(err, &me):
		return fmt.Sprintf("%v (original status %d, log stream %s)", err, me.OriginalStatusCode, me.LogStreamArn)
	case errors.As(err, &re):
		return fmt.Sprintf("%v (HTTP %d, request id %s)", err, re.StatusCode, re.RequestID)
	}
	return err.Error()
}

// readPrompts returns a function that yields the non-empty lines of r.
func readPrompts(r io.Reader) func() (string, bool) {
	sc := bufio.NewScanner(r)
	return func() (string, bool) {
		for sc.Scan() {
			if line := sc.Text(); line != "" {
				return line, true
			}
		}
		return "", false
	}
}

// since formats the time since start for the transcript.
func since(start time.Time) string { return time.Since(start).Round(10 * time.Microsecond).String() }
