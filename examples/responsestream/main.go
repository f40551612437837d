// Command responsestream calls the older one-way streaming API,
// InvokeEndpointWithResponseStream, through the official AWS SDK client
// (github.com/aws/aws-sdk-go-v2/service/sagemakerruntime), and decodes
// the model's output with package schema: the same decoders as on a
// bidirectional session, fed with the bytes of each PayloadPart event.
//
// The request is an OpenAI chat request (-api chat, for LMI or vLLM
// containers with the OpenAI-compatible schema) or an LMI request (-api
// lmi); the answer, SSE or JSON Lines cut anywhere by the container, is
// printed as it streams and rebuilt by an accumulator.
//
// With no flags it needs no AWS account: it starts a small local HTTP
// server on loopback that answers the operation as SageMaker does (an
// application/vnd.amazon.eventstream body of PayloadPart events), and
// points the official client at it with BaseEndpoint and static
// credentials.
//
//	go run ./examples/responsestream
//	go run ./examples/responsestream -api lmi "Tell me about Go"
//
// Against a real endpoint:
//
//	go run ./examples/responsestream -endpoint my-llm -region us-west-2 "What is SageMaker?"
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/sagemakerruntime"

	"github.com/sagemaker-bidi/sagemaker-bidi/examples/internal/cli"
)

func main() {
	ctx, stop := cli.NotifyInterrupt(context.Background())
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// options are the command-line flags.
type options struct {
	conn cli.Flags

	api       string
	maxTokens int
	timeout   time.Duration
	prompt    string
}

// newFlagSet defines every flag on a new flag set writing to out.
func newFlagSet(out io.Writer) (*flag.FlagSet, *options) {
	o := &options{}
	fs := cli.NewFlagSet("responsestream", "usage: responsestream [flags] [prompt]\n\nExample: responsestream -endpoint my-llm -region us-west-2 \"What is SageMaker?\"\n\n", out)
	o.conn.Register(fs, "; empty runs a local server")
	// The local gateway of examples/gateway serves only the bidirectional
	// operation: no hint of it here.
	fs.Lookup("endpoint-url").Usage = "custom endpoint `URL`, e.g. -endpoint-url https://vpce-0123-abcd.runtime.sagemaker.us-west-2.vpce.amazonaws.com (an interface VPC endpoint)"
	fs.StringVar(&o.api, "api", "chat", "request `schema`: chat (OpenAI chat completions) or lmi (LMI inputs/parameters), e.g. -api lmi")
	fs.IntVar(&o.maxTokens, "max-tokens", 256, "upper bound of generated `tokens`, e.g. -max-tokens 1024")
	fs.DurationVar(&o.timeout, "timeout", 2*time.Minute, "bound of the call, e.g. -timeout 30s")
	return fs, o
}

func parseFlags(args []string, stderr io.Writer) (*options, error) {
	fs, o := newFlagSet(stderr)
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	if o.api != "chat" && o.api != "lmi" {
		return nil, fmt.Errorf("-api %q: want chat or lmi", o.api)
	}
	o.prompt = strings.Join(fs.Args(), " ")
	if o.prompt == "" {
		o.prompt = "What changed with bidirectional streaming?"
	}
	return o, nil
}

// run runs the program and returns its exit code.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	o, err := parseFlags(args, stderr)
	if errors.Is(err, flag.ErrHelp) {
		return 0
	} else if err != nil {
		fmt.Fprintln(stderr, "responsestream:", err)
		return 2
	}
	ctx, cancel := context.WithTimeout(ctx, o.timeout)
	defer cancel()

	client, endpoint, cleanup, err := newClient(ctx, o, stdout)
	if err != nil {
		return cli.Fail(ctx, stderr, "responsestream", o.conn.Describe(err))
	}
	defer cleanup()
	if err := invoke(ctx, client, endpoint, o, stdout); err != nil {
		msg := describe(err)
		if h := o.conn.Hint(err); h != "" {
			msg += "; " + h
		}
		return cli.Fail(ctx, stderr, "responsestream", msg)
	}
	return 0
}

// newClient returns the official client: pointed at a local server with
// static credentials when no endpoint is given, else configured from the
// AWS configuration, with -endpoint-url as its BaseEndpoint when given.
func newClient(ctx context.Context, o *options, stdout io.Writer) (*sagemakerruntime.Client, string, func(), error) {
	endpoint, endpointURL, cleanup := o.conn.Endpoint, o.conn.EndpointURL, func() {}
	var cfg aws.Config
	if endpoint == "" {
		srv := newLocalServer()
		fmt.Fprintf(stdout, "local InvokeEndpointWithResponseStream server at %s\n", srv.URL)
		cfg = aws.Config{
			Region:      "us-west-2",
			Credentials: credentials.NewStaticCredentialsProvider("AKIDLOCAL", "local-secret", ""),
		}
		endpoint, endpointURL, cleanup = "local-endpoint", srv.URL, srv.Close
	} else {
		var err error
		if cfg, err = o.conn.LoadConfig(ctx); err != nil {
			return nil, "", nil, err
		}
	}
	client := sagemakerruntime.NewFromConfig(cfg, withReadOnlyRequestBodies, func(opt *sagemakerruntime.Options) {
		if endpointURL != "" {
			opt.BaseEndpoint = aws.String(endpointURL)
		}
	})
	return client, endpoint, cleanup, nil
}
