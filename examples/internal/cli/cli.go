// Package cli is shared by the example programs: the connection flags
// they all take (-endpoint, -region, -profile, -endpoint-url,
// -target-variant, and in some -path and -query), the client those flags
// describe (an in-process biditest server when no endpoint is given, else
// the AWS configuration), error messages with hints, the handling of
// Ctrl-C (exit code 130), terminal detection, and the printer of streamed
// answers.
package cli

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/smithy-go/logging"

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

	// Debug keeps the AWS SDK's default logger when loading the AWS
	// configuration (a program's -debug). Without it LoadConfig is
	// silent: the SDK would otherwise print lines such as "SDK … WARN
	// falling back to IMDSv1" on stderr while it looks for credentials.
	Debug bool
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
// with -region and -profile, when given, and without the SDK's log lines
// unless f.Debug is set.
func (f *Flags) LoadConfig(ctx context.Context) (aws.Config, error) {
	var load []func(*config.LoadOptions) error
	if !f.Debug {
		load = append(load, config.WithLogger(logging.Nop{}))
	}
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

// Describe returns the message of err for people: err's text, the log
// stream ARN of a ModelError (which Error() leaves out), and a hint for the
// usual mistakes (see Hint). Fields already in the text are not repeated.
func (f *Flags) Describe(err error) string {
	msg := err.Error()
	var me *bidi.ModelError
	if errors.As(err, &me) && me.LogStreamArn != "" && !strings.Contains(msg, me.LogStreamArn) {
		msg += " (log stream " + me.LogStreamArn + ")"
	}
	if h := f.Hint(err); h != "" {
		msg += "; " + h
	}
	return msg
}

// Hint returns advice for the errors whose cause users most often miss,
// or "":
//   - a missing region: set -region or AWS_REGION;
//   - a certificate of unknown authority from an -endpoint-url, usually
//     the local gateway's, which makes a new certificate at each start:
//     trust the one it wrote with -cert-out again;
//   - an http:// -endpoint-url whose server did not speak HTTP/2 in the
//     clear: it most likely expects TLS (the gateway's default), so use
//     https:// (unless the error already says so);
//   - an https:// -endpoint-url whose server answered the TLS handshake
//     with something else than TLS: it most likely speaks HTTP/2 in the
//     clear (the gateway started with -h2c), so use http://;
//   - an -endpoint-url where nothing listens: start the gateway, or
//     check the URL.
func (f *Flags) Hint(err error) string {
	msg := err.Error()
	var unknownCA x509.UnknownAuthorityError
	var record tls.RecordHeaderError
	switch {
	case errors.Is(err, bidi.ErrInvalidConfig) && (strings.Contains(msg, "no region") || strings.Contains(msg, "Missing Region")):
		return "set -region or AWS_REGION"
	case f.EndpointURL != "" && (errors.As(err, &unknownCA) || strings.Contains(msg, "certificate signed by unknown authority")):
		return "the local gateway makes a new certificate at each start: re-trust the certificate written with -cert-out " +
			"(AWS_CA_BUNDLE=FILE, or bidicat -ca-cert FILE)"
	case errors.Is(err, bidi.ErrNotHTTP2) && strings.HasPrefix(strings.ToLower(f.EndpointURL), "http://") && !strings.Contains(msg, "https://"):
		return "the server at -endpoint-url does not speak HTTP/2 without TLS: use https:// (the gateway serves TLS unless started with -h2c)"
	case strings.HasPrefix(strings.ToLower(f.EndpointURL), "https://") && (errors.As(err, &record) || strings.Contains(msg, "does not look like a TLS handshake")):
		return "the server at -endpoint-url does not speak TLS: use http:// (a gateway started with -h2c serves HTTP/2 without TLS)"
	case f.EndpointURL != "" && errors.Is(err, syscall.ECONNREFUSED):
		return "nothing listens at -endpoint-url " + f.EndpointURL + ": is the gateway running (go run ./examples/gateway)?"
	}
	return ""
}

// ExitInterrupted is the exit code of a program stopped by Ctrl-C (128 +
// SIGINT, as shells report it).
const ExitInterrupted = 130

// ErrInterrupted is the cause of the context of NotifyInterrupt once a
// signal arrived.
var ErrInterrupted = errors.New("interrupted")

// NotifyInterrupt returns a copy of parent that is cancelled, with cause
// ErrInterrupted, on the first SIGINT (Ctrl-C) or SIGTERM. A second
// signal kills the program as usual, so a stuck program still stops.
// stop releases the signals and cancels the context.
func NotifyInterrupt(parent context.Context) (ctx context.Context, stop func()) {
	ctx, cancel := context.WithCancelCause(parent)
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, os.Interrupt, syscall.SIGTERM)
	go func() {
		select {
		case <-sig:
			signal.Stop(sig)
			cancel(ErrInterrupted)
		case <-ctx.Done():
		}
	}()
	return ctx, func() {
		signal.Stop(sig)
		cancel(context.Canceled)
	}
}

// Interrupted reports whether ctx, or a context it derives from, was
// cancelled by NotifyInterrupt's signal (or with cause ErrInterrupted).
func Interrupted(ctx context.Context) bool {
	return ctx.Err() != nil && errors.Is(context.Cause(ctx), ErrInterrupted)
}

// Fail reports on stderr that prog failed and returns its exit code:
// "prog: interrupted" and ExitInterrupted when ctx was interrupted (the
// error is then only the echo of the cancellation), else "prog: msg" and 1.
func Fail(ctx context.Context, stderr io.Writer, prog, msg string) int {
	if Interrupted(ctx) {
		fmt.Fprintf(stderr, "%s: interrupted\n", prog)
		return ExitInterrupted
	}
	fmt.Fprintf(stderr, "%s: %s\n", prog, msg)
	return 1
}

// FlagsWithoutExample returns the names of the flags of fs whose usage
// text has no example of the flag in use ("e.g. -name …"): every flag of
// the example programs shows one in -h.
func FlagsWithoutExample(fs *flag.FlagSet) []string {
	var missing []string
	fs.VisitAll(func(fl *flag.Flag) {
		i := strings.Index(fl.Usage, "e.g. ")
		if i < 0 || !strings.Contains(fl.Usage[i:], "-"+fl.Name) {
			missing = append(missing, fl.Name)
		}
	})
	return missing
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
