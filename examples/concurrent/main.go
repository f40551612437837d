// Command concurrent runs many bidirectional sessions at once from one
// bidi.Client and reports throughput and latency percentiles.
//
// Every session sends -messages messages of -size bytes, one at a time,
// and waits for each echo before the next, so each round trip is one
// latency sample. The sessions are HTTP/2 streams: they share the
// client's connections, and the program counts the TCP connections it
// dialed to show it (one, unless the server's concurrent-stream limit is
// reached).
//
// With no flags it needs no AWS account: it runs 50 sessions of 20
// messages against an in-process SageMaker-compatible server.
//
//	go run ./examples/concurrent
//	go run ./examples/concurrent -sessions 200 -messages 50 -size 4096
//
// Against a real endpoint it needs a model that echoes text messages,
// such as the sample container in echo mode (examples/container):
//
//	go run ./examples/concurrent -endpoint my-echo -region us-west-2 -query mode=echo
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"sync/atomic"
	"time"

	"github.com/sagemaker-bidi/sagemaker-bidi/bidi"
	"github.com/sagemaker-bidi/sagemaker-bidi/bidi/biditest"
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

	sessions, messages, size int
	timeout                  time.Duration
}

// newFlagSet defines every flag on a new flag set writing to out.
func newFlagSet(out io.Writer) (*flag.FlagSet, *options) {
	o := &options{}
	fs := cli.NewFlagSet("concurrent", "usage: concurrent [flags]\n\nExample: concurrent -sessions 100 -messages 10 -endpoint my-echo -query mode=echo\n\n", out)
	o.conn.Register(fs, " of an echo model; empty runs the in-process server")
	o.conn.RegisterQuery(fs)
	fs.IntVar(&o.sessions, "sessions", 50, "concurrent `sessions`, e.g. -sessions 200")
	fs.IntVar(&o.messages, "messages", 20, "`messages` per session, e.g. -messages 100")
	fs.IntVar(&o.size, "size", 256, "message size in `bytes` (32 to 16 MiB), e.g. -size 4096")
	fs.DurationVar(&o.timeout, "timeout", 2*time.Minute, "bound of the whole run, e.g. -timeout 5m")
	return fs, o
}

func parseFlags(args []string, stderr io.Writer) (*options, error) {
	fs, o := newFlagSet(stderr)
	if err := cli.Parse(fs, args); err != nil {
		return nil, errPrinted{err}
	}
	if fs.NArg() > 0 {
		return nil, fmt.Errorf("unexpected argument %q", fs.Arg(0))
	}
	if err := o.conn.Check(); err != nil {
		return nil, err
	}
	if o.sessions < 1 || o.messages < 1 || o.size < 32 || o.size > 16<<20 { // bidi's default Options.MaxMessageSize
		return nil, errors.New("-sessions and -messages must be positive, -size 32 bytes to 16 MiB")
	}
	return o, nil
}

// errPrinted is a command-line error cli.Parse printed already.
type errPrinted struct{ error }

func (e errPrinted) Unwrap() error { return e.error }

// run runs the program and returns its exit code.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	o, err := parseFlags(args, stderr)
	var printed errPrinted
	switch {
	case errors.Is(err, flag.ErrHelp):
		return 0
	case errors.As(err, &printed):
		return 2
	case err != nil:
		fmt.Fprintf(stderr, "concurrent: usage: %v\nRun 'concurrent -h' for the flags.\n", err)
		return 2
	}
	ctx, cancel := context.WithTimeout(ctx, o.timeout)
	defer cancel()

	var dials atomic.Int64
	srv := o.conn.LocalServer(biditest.DemoModel(nil)) // echoes text
	if srv != nil {
		defer srv.Close()
		fmt.Fprintf(stdout, "in-process server at %s (at most %d streams per connection)\n", srv.URL, srv.MaxConcurrentStreams)
	}
	client, err := newClient(ctx, o, srv, &dials)
	if err != nil {
		return cli.Fail(ctx, stderr, "concurrent", o.conn.Describe(err))
	}
	rep, err := load(ctx, client, o.conn.OpenInput("demo-endpoint"), o)
	if err != nil {
		return cli.Fail(ctx, stderr, "concurrent", o.conn.Describe(err))
	}
	rep.connections = dials.Load()
	if srv != nil {
		rep.clientAddrs = distinctAddrs(srv)
	}
	rep.print(stdout, o)
	return 0
}

// newClient returns one client for every session, for the in-process
// server srv or, when it is nil, from the AWS configuration. It runs on
// bidi's own HTTP/2 engine, which trusts what the AWS SDK's clients
// would (srv's certificate, or the system roots plus a custom CA bundle
// of the AWS configuration: AWS_CA_BUNDLE, or ca_bundle in the shared
// config file), with a dialer that counts TCP connections in dials.
func newClient(ctx context.Context, o *options, srv *biditest.Server, dials *atomic.Int64) (*bidi.Client, error) {
	if srv != nil {
		return srv.Client(countDials(dials)), nil
	}
	cfg, err := o.conn.LoadConfig(ctx)
	if err != nil {
		return nil, err
	}
	return o.conn.NewClient(cfg, countDials(dials)), nil
}

// countDials returns the option that counts the TCP connections the
// client's engine dials (Options.DialContext).
func countDials(dials *atomic.Int64) func(*bidi.Options) {
	dialer := &net.Dialer{KeepAlive: 30 * time.Second}
	return func(opt *bidi.Options) {
		opt.DialContext = func(ctx context.Context, network, addr string) (net.Conn, error) {
			dials.Add(1)
			return dialer.DialContext(ctx, network, addr)
		}
	}
}

// distinctAddrs counts the client addresses the server saw: streams
// sharing a connection share an address.
func distinctAddrs(srv *biditest.Server) int {
	seen := map[string]bool{}
	for _, st := range srv.Streams() {
		seen[st.RemoteAddr] = true
	}
	return len(seen)
}
