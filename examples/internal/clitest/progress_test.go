package clitest

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"testing/synctest"
	"time"
)

// TestProgress: writes through the watchdog keep the context live past
// any number of stall periods in total; once they stop, the context ends
// stall later, with a cause that names the stall.
func TestProgress(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx, w := Progress(t, 10*time.Second)
		var buf bytes.Buffer
		out := w.Writer(&buf)
		for range 30 { // 5 minutes of output, a line every 9 s
			time.Sleep(9 * time.Second)
			if ctx.Err() != nil {
				t.Fatalf("context ended while output kept coming: %v", context.Cause(ctx))
			}
			out.Write([]byte("line\n"))
		}
		if strings.Count(buf.String(), "line\n") != 30 {
			t.Fatalf("writer wrote %q", buf.String())
		}
		last := time.Now()
		<-ctx.Done()
		if d := time.Since(last); d != 10*time.Second {
			t.Fatalf("context ended %v after the last write, want 10s", d)
		}
		if cause := context.Cause(ctx); cause == nil || !strings.Contains(cause.Error(), "no output for 10s") {
			t.Fatalf("cause = %v", cause)
		}
	})
}
