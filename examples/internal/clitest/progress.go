package clitest

import (
	"context"
	"fmt"
	"io"
	"testing"
	"time"
)

// Progress returns a context, derived from t.Context, that is cancelled
// once the writers that w.Writer wraps have seen no write for stall, with
// a cause that says so (context.Cause). It bounds a run by its progress,
// not its total time: a run that keeps writing output is never cut short,
// however slow a loaded machine makes it, and one that hangs ends after
// stall. The watch stops when the test ends.
func Progress(t testing.TB, stall time.Duration) (context.Context, *Watchdog) {
	ctx, cancel := context.WithCancelCause(t.Context())
	w := &Watchdog{wrote: make(chan struct{}, 1)}
	done := make(chan struct{})
	go func() {
		defer close(done)
		timer := time.NewTimer(stall)
		defer timer.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-w.wrote:
				timer.Reset(stall)
			case <-timer.C:
				cancel(fmt.Errorf("clitest: no output for %v", stall))
				return
			}
		}
	}()
	t.Cleanup(func() {
		cancel(nil)
		<-done
	})
	return ctx, w
}

// A Watchdog is the progress that Progress watches. Its methods may be
// called from any goroutine.
type Watchdog struct {
	wrote chan struct{} // a token per write; one pending is enough
}

// Writer returns a writer that writes to dst and counts as progress.
// It is as safe for concurrent use as dst.
func (w *Watchdog) Writer(dst io.Writer) io.Writer {
	return progressWriter{dst: dst, w: w}
}

type progressWriter struct {
	dst io.Writer
	w   *Watchdog
}

func (p progressWriter) Write(b []byte) (int, error) {
	select {
	case p.w.wrote <- struct{}{}:
	default:
	}
	return p.dst.Write(b)
}
