// Command relay serves a web page that streams audio from the browser to a
// SageMaker model through a WebSocket relay (package bidi/relay): the
// browser never holds AWS credentials, the Go server opens and signs the
// model's stream, and the page shows what comes back.
//
// With no flags it needs no AWS account: the model is an in-process
// SageMaker-compatible echo server (package biditest), so every audio
// frame comes back unchanged and the page checks each one.
//
//	go run ./examples/relay
//	# open http://localhost:8080/ and pick an audio file, or the microphone
//
// Against a real endpoint, with the usual AWS credentials chain:
//
//	go run ./examples/relay -endpoint my-endpoint -region us-west-2
//
// The page sends 16 kHz 16-bit mono PCM in 20 ms frames, one WebSocket
// message each, then {"type":"end"}, the relay's end-of-input message:
// the model's last replies are delivered, then the close (1000 for a clean
// end; see relay.CloseFor for the others). /?src=URL&pace=N streams a file
// unattended, at N times real time.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"runtime/debug"
	"strings"
	"time"

	"github.com/sagemaker-bidi/sagemaker-bidi/bidi"
	"github.com/sagemaker-bidi/sagemaker-bidi/bidi/biditest"
	"github.com/sagemaker-bidi/sagemaker-bidi/bidi/relay"
	"github.com/sagemaker-bidi/sagemaker-bidi/examples/internal/cli"
)

func main() {
	ctx, stop := cli.NotifyInterrupt(context.Background())
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr, nil)
	stop()
	os.Exit(code)
}

// options are the command-line flags.
type options struct {
	conn    cli.Flags
	addr    string
	sample  string
	origins string
	token   string
	rotate  time.Duration
	quiet   time.Duration
	queue   int
	memMiB  int64
}

func newFlagSet(out io.Writer) (*flag.FlagSet, *options) {
	fs := cli.NewFlagSet("relay", `usage: relay [flags]

Serves a page that streams browser audio to a model through a WebSocket
relay. With no flags, against an in-process echo model.
Example: relay -addr localhost:8080 -endpoint my-endpoint -region us-west-2

`, out)
	o := &options{}
	o.conn.Register(fs, "; empty runs the local echo model")
	o.conn.RegisterPath(fs)
	o.conn.RegisterQuery(fs)
	fs.StringVar(&o.addr, "addr", "localhost:8080", "`address` to serve the page and the relay on, e.g. -addr :8080")
	fs.StringVar(&o.sample, "sample", "", "audio `file` served as /sample.EXT for /?src=sample.EXT: raw 16 kHz s16le mono PCM if EXT is pcm, else any format the browser decodes, e.g. -sample speech.wav")
	fs.StringVar(&o.origins, "origins", "", "comma-separated `hosts` whose pages may connect besides this one, e.g. -origins app.example.com")
	fs.StringVar(&o.token, "token", "", "a `secret` clients must pass as ?token=, standing in for the application's own authorisation, e.g. -token s3cret")
	fs.IntVar(&o.queue, "queue-bytes", 0, "`bytes` each direction of a call may queue before the oldest audio frames are dropped (0: the relay's defaults, 32 KiB toward the model and 8 KiB toward the client), e.g. -queue-bytes 32768")
	fs.Int64Var(&o.memMiB, "memory-limit", 0, "soft memory limit of the process in `MiB` (runtime/debug.SetMemoryLimit; 0 leaves GOMEMLIMIT's), a little under the server's budget: the garbage collector then works harder instead of letting the heap reach twice what is live, e.g. -memory-limit 60")
	fs.DurationVar(&o.quiet, "finish-quiet", 0, "how long the model must have been quiet before a call that ends is closed toward it (0: the relay's default, 2s); a model that pauses longer between replies needs more, e.g. -finish-quiet 5s")
	fs.DurationVar(&o.rotate, "rotate", 0, "replace the model's stream after this `age` (0: bidi's default, under the 30-minute cap), e.g. -rotate 10m")
	return fs, o
}

func parseFlags(args []string, stderr io.Writer) (*options, error) {
	fs, o := newFlagSet(stderr)
	if err := cli.ParseChecked(fs, args, &o.conn); err != nil {
		return nil, err
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "relay: unexpected argument %q\n", fs.Arg(0))
		return nil, errors.New("unexpected argument")
	}
	if o.quiet < 0 {
		fmt.Fprintf(stderr, "relay: -finish-quiet %v: want 0 (the default) or more\n", o.quiet)
		return nil, errors.New("bad -finish-quiet")
	}
	if o.memMiB < 0 || o.memMiB > 1<<40 {
		fmt.Fprintf(stderr, "relay: -memory-limit %d: want 0 (none) or a positive number of MiB\n", o.memMiB)
		return nil, errors.New("bad -memory-limit")
	}
	return o, nil
}

// run serves until ctx ends. ready, if set, receives the listening
// address once the server accepts connections.
func run(ctx context.Context, args []string, stdout, stderr io.Writer, ready chan<- string) int {
	o, err := parseFlags(args, stderr)
	if errors.Is(err, flag.ErrHelp) {
		return 0
	} else if err != nil {
		return 2
	}
	if o.memMiB > 0 {
		debug.SetMemoryLimit(o.memMiB << 20)
	}
	var sample []byte
	if o.sample != "" {
		if sample, err = os.ReadFile(o.sample); err != nil {
			return cli.Fail(ctx, stderr, "relay", err.Error())
		}
	}
	srv := o.conn.LocalServer(biditest.Echo())
	if srv != nil {
		defer srv.Close()
		fmt.Fprintln(stdout, "model: local SageMaker-compatible echo server (package biditest); no AWS account needed")
	}
	// The relay gives each reply's buffer back to its pools once the
	// reply is on its way to the browser: replies make no garbage.
	client, err := o.conn.Client(ctx, srv, func(bo *bidi.Options) { bo.MessageBuffer = relay.MessageBuffer })
	if err != nil {
		return cli.Fail(ctx, stderr, "relay", "loading AWS config: "+o.conn.Describe(err))
	}
	endpoint := o.conn.Endpoint
	if endpoint == "" {
		endpoint = "local-echo"
	}
	a, err := newApp(client, appConfig{
		input: bidi.OpenInput{
			EndpointName:        endpoint,
			TargetVariant:       o.conn.TargetVariant,
			ModelInvocationPath: o.conn.Path,
			ModelQueryString:    o.conn.Query,
		},
		sample:    sample,
		sampleExt: filepath.Ext(o.sample),
		origins:   splitList(o.origins),
		token:     o.token,
		rotation:  &bidi.Rotation{After: o.rotate},
		tune: func(ro *relay.Options) {
			ro.ToModelQueueBytes, ro.ToClientQueueBytes = o.queue, o.queue
			ro.FinishQuiet = o.quiet
		},
	})
	if err != nil {
		return cli.Fail(ctx, stderr, "relay", err.Error())
	}
	ln, err := net.Listen("tcp", o.addr)
	if err != nil {
		return cli.Fail(ctx, stderr, "relay", err.Error())
	}
	hs := newHTTPServer(a)
	errc := make(chan error, 1)
	go func() { errc <- hs.Serve(ln) }()
	fmt.Fprintf(stdout, "open http://%s/ in a browser (Ctrl-C stops)\n", ln.Addr())
	if ready != nil {
		ready <- ln.Addr().String()
	}
	select {
	case <-ctx.Done():
	case err := <-errc:
		return cli.Fail(ctx, stderr, "relay", err.Error())
	}
	sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_ = a.relay.Shutdown(sctx) // calls end gracefully: 1001 after their last replies
	_ = hs.Shutdown(sctx)
	if cli.Interrupted(ctx) {
		fmt.Fprintln(stderr, "relay: interrupted")
		return cli.ExitInterrupted
	}
	return 0
}

// newHTTPServer bounds what happens before a handler runs: the relay's
// connections are hijacked, so only these protect the upgrade itself from
// slow or endless headers.
func newHTTPServer(h http.Handler) *http.Server {
	return &http.Server{
		Handler:           h,
		ReadHeaderTimeout: 5 * time.Second,
		MaxHeaderBytes:    16 << 10,
		IdleTimeout:       time.Minute,
	}
}

func splitList(s string) []string {
	var out []string
	for p := range strings.SplitSeq(s, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}
