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
	"net/http"
	"os"
	"sync/atomic"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"

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
	srv := o.conn.LocalServer(biditest.DemoModel(nil)) // echoes text
	if srv != nil {
		defer srv.Close()
		fmt.Fprintf(stdout, "in-process server at %s (at most %d streams per connection)\n", srv.URL, biditest.DefaultMaxConcurrentStreams)
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
// server srv or, when it is nil, from the AWS configuration. Its HTTP
// client is bidi's default transport with a dialer that counts TCP
// connections, trusting what bidi's own would: srv's certificate, or the
// system roots plus a custom CA bundle of the AWS configuration
// (AWS_CA_BUNDLE, or ca_bundle in the shared config file).
func newClient(ctx context.Context, o *options, srv *biditest.Server, dials *atomic.Int64) (*bidi.Client, error) {
	if srv != nil {
		roots := x509.NewCertPool()
		roots.AddCert(srv.Certificate())
		return srv.Client(countingHTTPClient(roots, dials)), nil
	}
	cfg, err := o.conn.LoadConfig(ctx)
	if err != nil {
		return nil, err
	}
	return o.conn.NewClient(cfg, countingHTTPClient(caBundle(cfg), dials)), nil
}

// countingHTTPClient returns the option that sets bidi's default HTTP
// client, trusting roots (nil: the system roots), with a dialer that
// counts TCP connections in dials.
func countingHTTPClient(roots *x509.CertPool, dials *atomic.Int64) func(*bidi.Options) {
	var tlsConfig *tls.Config
	if roots != nil {
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
	return func(opt *bidi.Options) { opt.HTTPClient = hc }
}

// caBundle returns the certificate pool of the AWS configuration's custom
// CA bundle (the system roots and the bundle), or nil when there is none.
// config.LoadDefaultConfig keeps it in the TLS configuration of its
// BuildableClient.
func caBundle(cfg aws.Config) *x509.CertPool {
	if b, ok := cfg.HTTPClient.(interface{ GetTransport() *http.Transport }); ok {
		if t := b.GetTransport(); t != nil && t.TLSClientConfig != nil {
			return t.TLSClientConfig.RootCAs
		}
	}
	return nil
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
