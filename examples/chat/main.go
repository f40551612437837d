// Command chat holds a multi-turn chat with an OpenAI-compatible model
// over one bidirectional streaming session, printing the answer as it
// streams and rebuilding it with package schema.
//
// Each turn sends the conversation so far as a streamed chat request
// ("stream": true). The model's bytes are read through Session.Reader
// and framed by schema.NewReader, whatever the message and part
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
	"os/signal"
	"time"

	"github.com/aws/aws-sdk-go-v2/config"

	"github.com/sagemaker-bidi/sagemaker-bidi/bidi"
	"github.com/sagemaker-bidi/sagemaker-bidi/bidi/biditest"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
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
	endpoint, region, profile, endpointURL, variant string
	maxTokens                                       int
	timeout                                         time.Duration
	prompts                                         []string
}

func parseFlags(args []string, stderr io.Writer) (*options, error) {
	o := &options{}
	fs := flag.NewFlagSet("chat", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&o.endpoint, "endpoint", "", "SageMaker endpoint `name`; empty runs the in-process demo server")
	fs.StringVar(&o.region, "region", "", "AWS `region` (default from the AWS config)")
	fs.StringVar(&o.profile, "profile", "", "shared config `profile`")
	fs.StringVar(&o.endpointURL, "endpoint-url", "", "custom endpoint `URL`, e.g. the local gateway")
	fs.StringVar(&o.variant, "target-variant", "", "production `variant` to invoke")
	fs.IntVar(&o.maxTokens, "max-tokens", 256, "upper bound of generated `tokens` per answer")
	fs.DurationVar(&o.timeout, "timeout", 2*time.Minute, "bound of the whole conversation")
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "usage: chat [flags] [prompt ...]\n\nExample: chat -endpoint my-llm -region us-west-2 \"What is SageMaker?\"\n\n")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
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

	client, endpoint, cleanup, err := newClient(ctx, o, stdout)
	if err != nil {
		fmt.Fprintln(stderr, "chat:", err)
		return 1
	}
	defer cleanup()
	c := &conversation{out: stdout, maxTokens: o.maxTokens}
	in := &bidi.OpenInput{EndpointName: endpoint, TargetVariant: o.variant}
	if err := c.run(ctx, client, in, o.prompts); err != nil {
		fmt.Fprintln(stderr, "chat:", err)
		return 1
	}
	return 0
}

// newClient returns a client for the in-process demo server when no
// endpoint is given, else one from the AWS configuration.
func newClient(ctx context.Context, o *options, stdout io.Writer) (*bidi.Client, string, func(), error) {
	if o.endpoint == "" {
		srv := biditest.NewServer(biditest.DemoModel(nil))
		fmt.Fprintf(stdout, "in-process demo server at %s\n", srv.URL)
		return srv.Client(), "demo-endpoint", srv.Close, nil
	}
	var load []func(*config.LoadOptions) error
	if o.region != "" {
		load = append(load, config.WithRegion(o.region))
	}
	if o.profile != "" {
		load = append(load, config.WithSharedConfigProfile(o.profile))
	}
	cfg, err := config.LoadDefaultConfig(ctx, load...)
	if err != nil {
		return nil, "", nil, err
	}
	client := bidi.NewFromConfig(cfg, func(opt *bidi.Options) {
		if o.endpointURL != "" {
			opt.BaseEndpoint = &o.endpointURL
		}
	})
	return client, o.endpoint, func() {}, nil
}
