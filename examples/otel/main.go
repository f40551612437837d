// Command otel traces and measures a bidirectional streaming session with
// OpenTelemetry.
//
// bidi.Options.TracerProvider and Options.MeterProvider take the smithy-go
// tracing and metrics interfaces, as every aws-sdk-go-v2 client does; the
// small adapter in internal/otelbridge turns an OpenTelemetry
// TracerProvider and MeterProvider into them. The program wires the
// OpenTelemetry SDK (an in-memory span exporter and a manual metric
// reader) through that adapter, opens a session under a span of its own,
// sends a few messages and reads their replies, and prints what
// OpenTelemetry recorded: the session's span (its attributes, among them
// end_reason, and its events) and the client's metrics, with their values.
// No attribute ever holds a payload: the text sent appears nowhere in the
// telemetry.
//
// With no flags it needs no AWS account: the session runs against an
// in-process SageMaker-compatible echo server (package biditest).
//
//	go run ./examples/otel
//
// With -endpoint it talks to a real endpoint whose model answers each
// message with one message (such as the sample container's echo mode):
//
//	go run ./examples/otel -endpoint my-endpoint -region us-west-2 -query mode=echo
//
// In a service, the providers would be the application's own, exporting
// with OTLP or another exporter; only the two lines that set the options
// matter here.
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

	"github.com/sagemaker-bidi/sagemaker-bidi/bidi"
	"github.com/sagemaker-bidi/sagemaker-bidi/bidi/biditest"
	"github.com/sagemaker-bidi/sagemaker-bidi/examples/internal/cli"
	"github.com/sagemaker-bidi/sagemaker-bidi/examples/otel/internal/otelbridge"
)

func main() {
	ctx, stop := cli.NotifyInterrupt(context.Background())
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// options are the command-line flags.
type options struct {
	conn     cli.Flags
	messages int
	text     string
}

func newFlagSet(out io.Writer) (*flag.FlagSet, *options) {
	fs := cli.NewFlagSet("otel", `usage: otel [flags]

Runs a session with OpenTelemetry wired into the client and prints the
span and the metrics it recorded. With no flags, against an in-process
echo server.
Example: otel -endpoint my-endpoint -region us-west-2 -query mode=echo

`, out)
	o := &options{}
	o.conn.Register(fs, "; empty runs the local echo server")
	o.conn.RegisterQuery(fs)
	fs.IntVar(&o.messages, "messages", 3, "`number` of messages to send, each answered by one reply, e.g. -messages 10")
	fs.StringVar(&o.text, "text", "Hello, SageMaker! This text never appears in the telemetry.", "`text` of each message, e.g. -text 'hi there'")
	return fs, o
}

func parseFlags(args []string, stderr io.Writer) (*options, error) {
	fs, o := newFlagSet(stderr)
	if err := cli.ParseChecked(fs, args, &o.conn); err != nil {
		return nil, err
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "otel: unexpected argument %q (use -text)\n", fs.Arg(0))
		return nil, errors.New("unexpected argument")
	}
	if o.messages < 1 || o.text == "" {
		fmt.Fprintln(stderr, "otel: -messages must be at least 1 and -text not empty")
		return nil, errors.New("bad flag value")
	}
	return o, nil
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	o, err := parseFlags(args, stderr)
	if errors.Is(err, flag.ErrHelp) {
		return 0
	} else if err != nil {
		return 2
	}

	srv := o.conn.LocalServer(localModel())
	if srv != nil {
		defer srv.Close()
		fmt.Fprintln(stdout, "local SageMaker-compatible echo server (package biditest); no AWS account needed")
	}
	tel := newTelemetry()
	defer tel.shutdown()
	client, err := o.conn.Client(ctx, srv, func(opt *bidi.Options) {
		// The two lines an application needs, with its own providers.
		opt.TracerProvider = otelbridge.Tracer(tel.tracerProvider)
		opt.MeterProvider = otelbridge.Meter(tel.meterProvider)
	})
	if err != nil {
		return cli.Fail(ctx, stderr, "otel", "loading AWS config: "+o.conn.Describe(err))
	}

	st, err := converse(ctx, client, o, tel)
	if err == nil {
		fmt.Fprintf(stdout, "sent %s (%d bytes), received %s (%d bytes); the stream ended cleanly\n",
			count(st.sent, "message"), st.sentBytes, count(st.received, "reply"), st.receivedBytes)
	} else if tel.waitSessionSpan(ctx) == nil {
		// A failed session is traced too: show how it ended.
		fmt.Fprintf(stdout, "the session failed after %s sent and %s received (the error is on stderr)\n",
			count(st.sent, "message"), count(st.received, "reply"))
	} else {
		return cli.Fail(ctx, stderr, "otel", o.conn.Describe(err)) // no session to show
	}
	rep, cerr := tel.collect(ctx)
	if cerr == nil {
		rep.print(stdout)
	}
	switch {
	case err != nil:
		return cli.Fail(ctx, stderr, "otel", o.conn.Describe(err))
	case cerr != nil:
		return cli.Fail(ctx, stderr, "otel", cerr.Error())
	}
	return 0
}

// localModel is the model of the in-process server; tests replace it.
var localModel = biditest.Echo

// turnTimeout bounds the wait for one reply.
const turnTimeout = 30 * time.Second

// stats count what one session sent and received.
type stats struct {
	sent, sentBytes, received, receivedBytes int
}

// converse opens a session under a span of the application's own
// (appSpanName), sends o.messages messages, reads a reply to each, ends
// the input and reads to the end of the stream, then waits until the
// client has ended the session's span.
func converse(ctx context.Context, client *bidi.Client, o *options, tel *telemetry) (stats, error) {
	var st stats
	ctx, app := tel.tracerProvider.Tracer("examples/otel").Start(ctx, appSpanName)
	defer app.End()

	sess, err := client.Open(ctx, o.conn.OpenInput("demo-endpoint"))
	if err != nil {
		return st, err
	}
	defer sess.Close()
	// fail returns err once the failed session's span has ended: Close
	// racing the session's own end would record end_reason "closed"
	// instead of why the stream ended. A failure that leaves the session
	// open (a reply that took too long) is closed after a second.
	fail := func(err error) (stats, error) {
		select {
		case <-sess.Context().Done():
			_ = tel.waitSessionSpan(ctx)
		case <-time.After(time.Second):
		case <-ctx.Done():
		}
		return st, err
	}
	for range o.messages {
		if err := sess.Send(ctx, bidi.Text(o.text)); err != nil {
			return fail(err)
		}
		st.sent++
		st.sentBytes += len(o.text)
		turn, cancel := context.WithTimeout(ctx, turnTimeout)
		m, err := sess.Recv(turn)
		cancel()
		if err != nil {
			return fail(fmt.Errorf("waiting for reply %d: %w", st.sent, err))
		}
		st.received++
		st.receivedBytes += len(m.Data)
	}
	if err := sess.CloseSend(); err != nil {
		return fail(err)
	}
	for {
		m, err := sess.Recv(ctx)
		if err == io.EOF {
			break
		} else if err != nil {
			return fail(err)
		}
		st.received++
		st.receivedBytes += len(m.Data)
	}
	// The client ends the span as the session's goroutine exits, just
	// after the end of the stream.
	return st, tel.waitSessionSpan(ctx)
}

// count returns "n things" ("1 thing").
func count(n int, thing string) string {
	switch {
	case n == 1:
	case strings.HasSuffix(thing, "y"):
		thing = strings.TrimSuffix(thing, "y") + "ies"
	default:
		thing += "s"
	}
	return fmt.Sprintf("%d %s", n, thing)
}
