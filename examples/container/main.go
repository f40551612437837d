// Command container is a sample SageMaker model container for bidirectional
// streaming: GET /ping, and a WebSocket on any path that echoes messages,
// answers OpenAI chat requests with a streamed toy reasoning model, and can
// misbehave on request for tests. See package model for the behaviours.
//
// Run it locally with
//
//	go run .
//
// (on localhost:8080; the Dockerfile passes -addr :8080, the port
// SageMaker sends traffic to, on every interface of the container)
// or build the image with the Dockerfile next to this file. SageMaker
// starts containers as "docker run IMAGE serve"; the serve argument is
// accepted and ignored.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/sagemaker-bidi/sagemaker-bidi/examples/container/model"
)

func main() {
	os.Exit(run())
}

// defineFlags defines the flags on fs, and its usage text.
func defineFlags(fs *flag.FlagSet) (addr, defaults *string, readLimit *int64, quiet *bool) {
	addr = fs.String("addr", "localhost:8080", "listen `address`; loopback by default, so that only this machine can reach it; SageMaker sends traffic to port 8080 of every interface, which the Dockerfile sets with -addr :8080, e.g. -addr 127.0.0.1:9090")
	defaults = fs.String("defaults", "", "default behaviour as a `query` string, overridden by each connection's query string,\ne.g. -defaults 'mode=echo&fragment=256'")
	readLimit = fs.Int64("read-limit", model.DefaultReadLimit, "largest message read, in `bytes`, e.g. -read-limit 1048576")
	quiet = fs.Bool("q", false, "do not log connections, e.g. -q")
	fs.Usage = func() {
		out := fs.Output()
		fmt.Fprintf(out, "Usage: container [flags] [serve]\n\n")
		fmt.Fprintf(out, "A sample SageMaker bidirectional-streaming model container.\n")
		fmt.Fprintf(out, "GET /ping answers 200; a WebSocket upgrade on any path starts a session.\n\n")
		fmt.Fprintf(out, "The optional argument serve is accepted and ignored: SageMaker starts\n")
		fmt.Fprintf(out, "containers as \"docker run IMAGE serve\", and the image's entry point is\n")
		fmt.Fprintf(out, "this program, so both \"container\" and \"container serve\" serve.\n\n")
		fmt.Fprintf(out, "Flags:\n")
		fs.PrintDefaults()
		fmt.Fprintf(out, "\nQuery parameters (per connection, or in -defaults):\n%s", model.QueryHelp())
		fmt.Fprintf(out, "\nExamples:\n  container -defaults 'close_after=5&close_code=1011&close_reason=bye'\n")
		fmt.Fprintf(out, "  then connect to ws://localhost:8080/invocations-bidirectional-stream?mode=echo\n")
		fmt.Fprintf(out, "  docker run -p 8080:8080 IMAGE serve   # as SageMaker starts it\n")
	}
	return addr, defaults, readLimit, quiet
}

func run() int {
	fs := flag.NewFlagSet("container", flag.ContinueOnError)
	addr, defaults, readLimit, quiet := defineFlags(fs)
	if err := fs.Parse(os.Args[1:]); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	if fs.NArg() > 1 || (fs.NArg() == 1 && fs.Arg(0) != "serve") {
		fmt.Fprintf(os.Stderr, "container: unexpected arguments %q (see container -h)\n", fs.Args())
		return 2
	}
	if err := model.CheckQuery(*defaults); err != nil {
		fmt.Fprintf(os.Stderr, "container: -defaults: %v\n", err)
		return 2
	}

	logger := slog.New(slog.NewTextHandler(os.Stderr, nil))
	opts := model.Options{Defaults: *defaults, ReadLimit: *readLimit}
	if !*quiet {
		opts.Logger = logger
	}
	h := model.NewHandler(opts)
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}

	// Handle signals before announcing the address, so a supervisor that
	// signals as soon as it sees "listening" is heard.
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, os.Interrupt, syscall.SIGTERM)
	defer signal.Stop(sig)
	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		logger.Error("listen", "err", err)
		return 1
	}
	logger.Info("listening", "addr", ln.Addr().String())

	serveErr := make(chan error, 1)
	go func() { serveErr <- srv.Serve(ln) }()

	var got os.Signal
	select {
	case err := <-serveErr:
		logger.Error("serve", "err", err)
		return 1
	case got = <-sig:
	}
	signal.Stop(sig) // a second signal kills the process
	logger.Info("shutting down")
	sctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := srv.Shutdown(sctx); err != nil {
		logger.Warn("http shutdown", "err", err)
	}
	if err := h.Shutdown(sctx); err != nil {
		logger.Warn("session shutdown", "err", err)
	}
	return exitCode(got, os.Stderr)
}

// exitCode is the exit code after sig stopped the container: 130 and
// "container: interrupted" for Ctrl-C (SIGINT), as shells report it; 0
// for SIGTERM, the way SageMaker and docker stop a container.
func exitCode(sig os.Signal, stderr io.Writer) int {
	if sig == os.Interrupt {
		fmt.Fprintln(stderr, "container: interrupted")
		return 130
	}
	return 0
}
