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
	"crypto/tls"
	"crypto/x509"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"os/signal"
	"sync/atomic"
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

// options are the command-line flags.
type options struct {
	endpoint, region, profile, endpointURL, variant, query string

	sessions, messages, size int
	timeout                  time.Duration
}

func parseFlags(args []string, stderr io.Writer) (*options, error) {
	o := &options{}
	fs := flag.NewFlagSet("concurrent", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&o.endpoint, "endpoint", "", "SageMaker endpoint `name` of an echo model; empty runs the in-process server")
	fs.StringVar(&o.region, "region", "", "AWS `region` (default from the AWS config)")
	fs.StringVar(&o.profile, "profile", "", "shared config `profile`")
	fs.StringVar(&o.endpointURL, "endpoint-url", "", "custom endpoint `URL`, e.g. the local gateway")
	fs.StringVar(&o.variant, "target-variant", "", "production `variant` to invoke")
	fs.StringVar(&o.query, "query", "", "model query `string` for the container, e.g. mode=echo")
	fs.IntVar(&o.sessions, "sessions", 50, "concurrent sessions")
	fs.IntVar(&o.messages, "messages", 20, "messages per session")
	fs.IntVar(&o.size, "size", 256, "message size in `bytes`")
	fs.DurationVar(&o.timeout, "timeout", 2*time.Minute, "bound of the whole run")
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "usage: concurrent [flags]\n\nExample: concurrent -sessions 100 -messages 10 -endpoint my-echo -query mode=echo\n\n")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	if o.sessions < 1 || o.messages < 1 || o.size < 32 || o.size > bidi.DefaultMaxMessageSize {
		return nil, errors.New("-sessions and -messages must be positive, -size 32 bytes to 16 MiB")
	}
	return o, nil
}

// run runs the program and returns its exit code.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	o, err := parseFlags(args, stderr)
	if errors.Is(err, flag.ErrHelp) {
		return 0
	} else if err != nil {
		fmt.Fprintln(stderr, "concurrent:", err)
		return 2
	}
	ctx, cancel := context.WithTimeout(ctx, o.timeout)
	defer cancel()

	var dials atomic.Int64
	client, endpoint, srv, err := newClient(ctx, o, &dials)
	if err != nil {
		fmt.Fprintln(stderr, "concurrent:", err)
		return 1
	}
	if srv != nil {
		defer srv.Close()
		fmt.Fprintf(stdout, "in-process server at %s (at most %d streams per connection)\n", srv.URL, biditest.DefaultMaxConcurrentStreams)
	}
	in := bidi.OpenInput{EndpointName: endpoint, TargetVariant: o.variant, ModelQueryString: o.query}
	rep, err := load(ctx, client, &in, o)
	if err != nil {
		fmt.Fprintln(stderr, "concurrent:", err)
		return 1
	}
	rep.connections = dials.Load()
	if srv != nil {
		rep.clientAddrs = distinctAddrs(srv)
	}
	rep.print(stdout, o)
	return 0
}

// newClient returns one client for every session. Its HTTP client is
// bidi's default transport with a dialer that counts TCP connections.
// Without -endpoint it also starts the in-process server.
func newClient(ctx context.Context, o *options, dials *atomic.Int64) (*bidi.Client, string, *biditest.Server, error) {
	var tlsConfig *tls.Config
	var srv *biditest.Server
	if o.endpoint == "" {
		srv = biditest.NewServer(biditest.DemoModel(nil)) // echoes text
		roots := x509.NewCertPool()
		roots.AddCert(srv.Certificate())
		tlsConfig = &tls.Config{RootCAs: roots, MinVersion: tls.VersionTLS12}
	}
	dialer := &net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second}
	hc := bidi.NewHTTPClient(func(h *bidi.HTTPClientOptions) {
		h.TLSConfig = tlsConfig
		h.DialContext = func(ctx context.Context, network, addr string) (net.Conn, error) {
			dials.Add(1)
			return dialer.DialContext(ctx, network, addr)
		}
	})
	useHC := func(opt *bidi.Options) { opt.HTTPClient = hc }
	if srv != nil {
		return srv.Client(useHC), "demo-endpoint", srv, nil
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
	client := bidi.NewFromConfig(cfg, useHC, func(opt *bidi.Options) {
		if o.endpointURL != "" {
			opt.BaseEndpoint = &o.endpointURL
		}
	})
	return client, o.endpoint, nil, nil
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
