// Command chat holds a multi-turn chat with an OpenAI-compatible model
// over one bidirectional streaming session, printing the answer as it
// streams and rebuilding it with package schema.
//
// Each turn sends the conversation so far as a streamed chat request
// ("stream": true). The model's bytes are read through Session.Reader
// and framed by framing.NewReader, whatever the message and part
// boundaries; a schema.ChatAccumulator rebuilds the full answer, which
// joins the history for the next turn.
//
// With no flags it needs no AWS account: it runs against an in-process
// SageMaker-compatible server with a demo chat model (package biditest).
//
//	go run ./examples/chat
//	go run ./examples/chat "first question" "second question"
//
// The same program talks to a real endpoint serving an OpenAI-compatible
// container (LMI, vLLM), or to the local gateway of examples/gateway:
//
//	go run ./examples/chat -endpoint my-llm -region us-west-2 "What is SageMaker?"
//	go run ./examples/chat -endpoint demo -endpoint-url http://localhost:8081
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/sagemaker-bidi/sagemaker-bidi/bidi/biditest"
	"github.com/sagemaker-bidi/sagemaker-bidi/examples/internal/cli"
)

func main() {
	ctx, stop := cli.NotifyInterrupt(context.Background())
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// defaultPrompts are the turns of the conversation when none are given.
var defaultPrompts = []string{
	"What does a bidirectional stream give a chat app?",
	"Thanks. Can you say that again?",
}

// options are the command-line flags.
type options struct {
	conn      cli.Flags
	maxTokens int
	timeout   time.Duration
	prompts   []string
}

// newFlagSet defines every flag on a new flag set writing to out.
func newFlagSet(out io.Writer) (*flag.FlagSet, *options) {
	o := &options{}
	fs := cli.NewFlagSet("chat", "usage: chat [flags] [prompt ...]\n\nExample: chat -endpoint my-llm -region us-west-2 \"What is SageMaker?\"\n\n", out)
	o.conn.Register(fs, "; empty runs the in-process demo server")
	fs.IntVar(&o.maxTokens, "max-tokens", 256, "upper bound of generated `tokens` per answer, e.g. -max-tokens 1024")
	fs.DurationVar(&o.timeout, "timeout", 2*time.Minute, "bound of the whole conversation, e.g. -timeout 10m")
	return fs, o
}

func parseFlags(args []string, stderr io.Writer) (*options, error) {
	fs, o := newFlagSet(stderr)
	if err := cli.ParseChecked(fs, args, &o.conn); err != nil {
		return nil, err
	}
	o.prompts = fs.Args()
	if len(o.prompts) == 0 {
		o.prompts = defaultPrompts
	}
	return o, nil
}

// run runs the program and returns its exit code.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	o, err := parseFlags(args, stderr)
	if errors.Is(err, flag.ErrHelp) {
		return 0
	} else if err != nil {
		return 2
	}
	ctx, cancel := context.WithTimeout(ctx, o.timeout)
	defer cancel()

	srv := o.conn.LocalServer(biditest.DemoModel(nil))
	if srv != nil {
		defer srv.Close()
		fmt.Fprintf(stdout, "in-process demo server at %s\n", srv.URL)
	}
	client, err := o.conn.Client(ctx, srv)
	if err != nil {
		return cli.Fail(ctx, stderr, "chat", o.conn.Describe(err))
	}
	c := &conversation{out: stdout, maxTokens: o.maxTokens}
	if err := c.run(ctx, client, o.conn.OpenInput("demo-endpoint"), o.prompts); err != nil {
		return cli.Fail(ctx, stderr, "chat", o.conn.Describe(err))
	}
	return 0
}
