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

	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/sagemaker-bidi/sagemaker-bidi/bidi"
	"github.com/sagemaker-bidi/sagemaker-bidi/bidi/biditest"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	os.Exit(run(ctx, os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}

// options are the command-line flags.
type options struct {
	endpoint, region, profile, endpointURL, variant string
	prompts                                         []string
	audioBytes, maxPart                             int
	interactive                                     bool
}

func parseFlags(args []string, stderr io.Writer) (*options, error) {
	fs := flag.NewFlagSet("quickstart", flag.ContinueOnError)
	fs.SetOutput(stderr)
	o := &options{}
	fs.StringVar(&o.endpoint, "endpoint", "", "SageMaker endpoint `name`; empty runs the local demo server")
	fs.StringVar(&o.region, "region", "", "AWS `region` of the endpoint (default from the AWS config)")
	fs.StringVar(&o.profile, "profile", "", "shared config `profile` to use")
	fs.StringVar(&o.endpointURL, "endpoint-url", "", "custom endpoint `URL`, e.g. https://localhost:8443 for the local gateway")
	fs.StringVar(&o.variant, "target-variant", "", "production `variant` to invoke")
	fs.IntVar(&o.audioBytes, "audio-bytes", 40000, "size of the binary message sent in the demo (0 skips it)")
	fs.IntVar(&o.maxPart, "max-part", 16<<10, "largest part `size` in bytes; larger messages are fragmented")
	prompt := fs.String("prompt", "Hello from Go! What can bidirectional streaming do?", "first chat `prompt`")
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "usage: quickstart [flags]\n\nWith no flags, runs a demo session against an in-process server.\nExample: quickstart -endpoint my-endpoint -region us-west-2\n\n")
		fs.PrintDefaults()
	}
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
	o.interactive = isTerminal(stdin)

	var (
		client *bidi.Client
		srv    *biditest.Server
	)
	setParts := func(opt *bidi.Options) { opt.MaxPartSize = o.maxPart }
	if o.endpoint == "" {
		srv = biditest.NewServer(biditest.DemoModel(nil))
		defer srv.Close()
		fmt.Fprintf(stdout, "local SageMaker-compatible server at %s (it verifies the SigV4 request and every chunk signature)\n", srv.URL)
		client = srv.Client(setParts)
		o.endpoint = "demo-endpoint"
	} else {
		var loadOpts []func(*config.LoadOptions) error
		if o.region != "" {
			loadOpts = append(loadOpts, config.WithRegion(o.region))
		}
		if o.profile != "" {
			loadOpts = append(loadOpts, config.WithSharedConfigProfile(o.profile))
		}
		cfg, err := config.LoadDefaultConfig(ctx, loadOpts...)
		if err != nil {
			fmt.Fprintln(stderr, "quickstart: loading AWS config:", err)
			return 1
		}
		client = bidi.NewFromConfig(cfg, setParts, func(opt *bidi.Options) {
			if o.endpointURL != "" {
				opt.BaseEndpoint = &o.endpointURL
			}
		})
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

// isTerminal reports whether r is a terminal: a character device other
// than the null device (which is one too).
func isTerminal(r io.Reader) bool {
	f, ok := r.(*os.File)
	if !ok {
		return false
	}
	st, err := f.Stat()
	if err != nil || st.Mode()&os.ModeCharDevice == 0 {
		return false
	}
	null, err := os.Stat(os.DevNull)
	return err != nil || !os.SameFile(st, null)
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
