package model

import (
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/sagemaker-bidi/sagemaker-bidi/examples/internal/clitest"
)

// A session the client closes with 1000 ends cleanly in the log: no
// error, the close code; one dropped without a close frame is a warning
// with its error.
func TestSessionEndLog(t *testing.T) {
	logs := new(clitest.SyncBuffer)
	srv, _ := newServer(t, Options{Defaults: "mode=echo", Logger: slog.New(slog.NewTextHandler(logs, nil))})

	c := dial(t, srv, "/invocations-bidirectional-stream")
	ctx := testContext(t)
	if err := c.Write(ctx, websocket.MessageText, []byte("hi")); err != nil {
		t.Fatal(err)
	}
	if _, _, err := c.Read(ctx); err != nil {
		t.Fatal(err)
	}
	c.Close(websocket.StatusNormalClosure, "")
	clean := waitLogLine(t, logs, "session end", 1)
	if !strings.Contains(clean, "level=INFO") || !strings.Contains(clean, "close_code=1000") || strings.Contains(clean, "err=") {
		t.Errorf("clean close logged as %q", clean)
	}

	c2 := dial(t, srv, "/invocations-bidirectional-stream")
	c2.CloseNow()
	dropped := waitLogLine(t, logs, "session end", 2)
	if !strings.Contains(dropped, "level=WARN") || !strings.Contains(dropped, "err=") {
		t.Errorf("dropped connection logged as %q", dropped)
	}
}

// waitLogLine waits until logs hold n lines containing msg and returns
// the nth.
func waitLogLine(t *testing.T, logs *clitest.SyncBuffer, msg string, n int) string {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		var found []string
		for line := range strings.Lines(logs.String()) {
			if strings.Contains(line, msg) {
				found = append(found, line)
			}
		}
		if len(found) >= n {
			return found[n-1]
		}
		if time.Now().After(deadline) {
			t.Fatalf("no %d lines %q in\n%s", n, msg, logs)
		}
		time.Sleep(time.Millisecond)
	}
}
