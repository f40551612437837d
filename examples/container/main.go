// Command container is a sample SageMaker model container for bidirectional
// streaming: GET /ping, and a WebSocket on any path that echoes messages,
// answers OpenAI chat requests with a streamed toy reasoning model, and can
// misbehave on request for tests. See package model for the behaviours.
//
// Run it locally with
//
//	go run . -addr :8080
//
// or build the image with the Dockerfile next to this file. SageMaker
// starts containers as "docker run IMAGE serve"; the serve argument is
// accepted and ignored.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
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

func run() int {
	fs := flag.NewFlagSet("container", flag.ContinueOnError)
	addr := fs.String("addr", ":8080", "listen address")
	defaults := fs.String("defaults", "", "default behaviour as a query string, overridden by each connection's query string,\ne.g. 'mode=echo&fragment=256'")
	readLimit := fs.Int64("read-limit", model.DefaultReadLimit, "largest message read, in bytes")
	quiet := fs.Bool("q", false, "do not log connections")
	fs.Usage = func() {
		out := fs.Output()
		fmt.Fprintf(out, "Usage: container [flags] [serve]\n\n")
		fmt.Fprintf(out, "A sample SageMaker bidirectional-streaming model container.\n")
		fmt.Fprintf(out, "GET /ping answers 200; a WebSocket upgrade on any path starts a session.\n\n")
		fmt.Fprintf(out, "Flags:\n")
		fs.PrintDefaults()
		fmt.Fprintf(out, "\nQuery parameters (per connection, or in -defaults):\n%s", model.QueryHelp())
		fmt.Fprintf(out, "\nExample:\n  container -addr :8080 -defaults 'close_after=5&close_code=1011&close_reason=bye'\n")
		fmt.Fprintf(out, "  then connect to ws://localhost:8080/invocations-bidirectional-stream?mode=echo\n")
	}
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
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		logger.Error("listen", "err", err)
		return 1
	}
	logger.Info("listening", "addr", ln.Addr().String())

	serveErr := make(chan error, 1)
	go func() { serveErr <- srv.Serve(ln) }()

	select {
	case err := <-serveErr:
		logger.Error("serve", "err", err)
		return 1
	case <-ctx.Done():
	}
	stop() // a second signal kills the process
	logger.Info("shutting down")
	sctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := srv.Shutdown(sctx); err != nil {
		logger.Warn("http shutdown", "err", err)
	}
	if err := h.Shutdown(sctx); err != nil {
		logger.Warn("session shutdown", "err", err)
	}
	return 0
}
