// Package cli is shared by the example programs: the connection flags
// they all take (-endpoint, -region, -profile, -endpoint-url,
// -target-variant, and in some -path and -query), the client those flags
// describe (an in-process biditest server when no endpoint is given, else
// the AWS configuration), terminal detection, and the printer of streamed
// answers.
package cli

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/config"

	"github.com/sagemaker-bidi/sagemaker-bidi/bidi"
	"github.com/sagemaker-bidi/sagemaker-bidi/bidi/biditest"
)

// Flags are the connection flags: where to connect and which model to
// invoke there.
type Flags struct {
	Endpoint      string // -endpoint: the SageMaker endpoint name
	Region        string // -region: the AWS Region (default from the AWS config)
	Profile       string // -profile: the shared config profile
	EndpointURL   string // -endpoint-url: a custom endpoint URL, such as the local gateway's
	TargetVariant string // -target-variant: the production variant to invoke
	Path          string // -path (RegisterPath): the model invocation path
	Query         string // -query (RegisterQuery): the model query string
}

// Register defines -endpoint, -region, -profile, -endpoint-url and
// -target-variant on fs, each with an example in its help. endpointNote
// follows "SageMaker endpoint name" in the help of -endpoint: what the
// program does without one, e.g. "; empty runs the in-process demo
// server".
func (f *Flags) Register(fs *flag.FlagSet, endpointNote string) {
	fs.StringVar(&f.Endpoint, "endpoint", "", "SageMaker endpoint `name`"+endpointNote+", e.g. -endpoint my-endpoint")
	fs.StringVar(&f.Region, "region", "", "AWS `region` (default from the AWS config), e.g. -region us-west-2")
	fs.StringVar(&f.Profile, "profile", "", "shared config `profile` for credentials and region, e.g. -profile dev")
	fs.StringVar(&f.EndpointURL, "endpoint-url", "", "custom endpoint `URL`, e.g. -endpoint-url https://localhost:8443 for the local gateway")
	fs.StringVar(&f.TargetVariant, "target-variant", "", "production `variant` to invoke, e.g. -target-variant Blue")
}

// RegisterPath defines -path on fs.
func (f *Flags) RegisterPath(fs *flag.FlagSet) {
	fs.StringVar(&f.Path, "path", "", "model invocation `path` on the container, e.g. -path v1/chat")
}

// RegisterQuery defines -query on fs.
func (f *Flags) RegisterQuery(fs *flag.FlagSet) {
	fs.StringVar(&f.Query, "query", "", "model query `string` for the container, e.g. -query 'mode=echo&lang=en'")
}

// NewFlagSet returns a flag set named name that reports errors (and
// -h, as flag.ErrHelp) instead of exiting, writes to out, and whose
// usage prints head, then the flags.
func NewFlagSet(name, head string, out io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(out)
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), head)
		fs.PrintDefaults()
	}
	return fs
}

// OpenInput returns the input that opens a session with the endpoint,
// variant, path and query of the flags; localName is the endpoint name
// when -endpoint is empty (an in-process server takes any valid name).
func (f *Flags) OpenInput(localName string) *bidi.OpenInput {
	name := f.Endpoint
	if name == "" {
		name = localName
	}
	return &bidi.OpenInput{
		EndpointName:        name,
		TargetVariant:       f.TargetVariant,
		ModelInvocationPath: f.Path,
		ModelQueryString:    f.Query,
	}
}

// LocalServer starts an in-process SageMaker-compatible server running h
// when no -endpoint is given, for the program to run without an AWS
// account; the caller closes it. With -endpoint it returns nil.
func (f *Flags) LocalServer(h biditest.Handler) *biditest.Server {
	if f.Endpoint != "" {
		return nil
	}
	return biditest.NewServer(h)
}

// LoadConfig loads the AWS configuration (credentials chain, region)
// with -region and -profile, when given.
func (f *Flags) LoadConfig(ctx context.Context) (aws.Config, error) {
	var load []func(*config.LoadOptions) error
	if f.Region != "" {
		load = append(load, config.WithRegion(f.Region))
	}
	if f.Profile != "" {
		load = append(load, config.WithSharedConfigProfile(f.Profile))
	}
	return config.LoadDefaultConfig(ctx, load...)
}

// NewClient returns a client configured from cfg, adjusted by optFns,
// with -endpoint-url, when given, as its BaseEndpoint.
func (f *Flags) NewClient(cfg aws.Config, optFns ...func(*bidi.Options)) *bidi.Client {
	fns := append(optFns[:len(optFns):len(optFns)], func(opt *bidi.Options) {
		if f.EndpointURL != "" {
			u := f.EndpointURL
			opt.BaseEndpoint = &u
		}
	})
	return bidi.NewFromConfig(cfg, fns...)
}

// Client returns a client for the in-process server srv when it is not
// nil (see LocalServer), else one from the AWS configuration (LoadConfig,
// NewClient); optFns adjust it either way. The error is LoadConfig's.
func (f *Flags) Client(ctx context.Context, srv *biditest.Server, optFns ...func(*bidi.Options)) (*bidi.Client, error) {
	if srv != nil {
		return srv.Client(optFns...), nil
	}
	cfg, err := f.LoadConfig(ctx)
	if err != nil {
		return nil, err
	}
	return f.NewClient(cfg, optFns...), nil
}

// IsTerminal reports whether v is a terminal: an *os.File that is a
// character device other than the null device (which is one too). It
// uses the standard library only.
func IsTerminal(v any) bool {
	f, ok := v.(*os.File)
	if !ok || f == nil {
		return false
	}
	st, err := f.Stat()
	if err != nil || st.Mode()&os.ModeCharDevice == 0 {
		return false
	}
	null, err := os.Stat(os.DevNull)
	return err != nil || !os.SameFile(st, null)
}

// Printer prints streamed text as it arrives, on one line per run of the
// same label: "model> …", then "model (thinking)> …" when the label
// changes. The zero value with Out set is ready to use.
type Printer struct {
	Out   io.Writer
	label string
}

// Print prints text under label; empty text prints nothing.
func (p *Printer) Print(label, text string) {
	if text == "" {
		return
	}
	if p.label != label {
		if p.label != "" {
			fmt.Fprintln(p.Out)
		}
		fmt.Fprintf(p.Out, "%s> ", label)
		p.label = label
	}
	io.WriteString(p.Out, text)
}

// End ends the line being printed, if any.
func (p *Printer) End() {
	if p.label != "" {
		fmt.Fprintln(p.Out)
		p.label = ""
	}
}
