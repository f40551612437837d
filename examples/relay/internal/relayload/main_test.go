package main

import (
	"flag"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/sagemaker-bidi/sagemaker-bidi/internal/testexit"
)

// TestMain serves as the relay child when the program starts itself
// (-serve), as it does outside tests; otherwise it runs the tests, and a
// -race binary whose tests passed exits without the race detector's idle
// second (see package testexit).
func TestMain(m *testing.M) {
	flag.Parse()
	if *serve {
		if err := runRelay(); err != nil {
			os.Exit(1)
		}
		return
	}
	testexit.Main(m)
}

// A small run of every phase but the slow hostile one: it fails on a
// refused open with the wrong close code.
func TestDriveSmall(t *testing.T) {
	*idle, *active, *frames, *idleSend, *hostileN = 20, 2, 10, 8, 0
	if err := drive(); err != nil {
		t.Fatal(err)
	}
}

// Rotating streams behind the relay lose and duplicate no frame.
func TestRotationRunSmall(t *testing.T) {
	*active, *rotRun, *speed, *rotAfter, *queue = 2, 4*time.Second, 10, 100*time.Millisecond, 1<<20
	defer func() { *rotRun, *rotAfter, *queue = 0, 0, 0 }()
	if err := drive(); err != nil {
		t.Fatal(err)
	}
}

// The relay's /direct answers a malformed count with 400 and a model it
// cannot reach with 502, each with the reason, and directRoundTrips
// returns both as errors.
func TestDirectErrors(t *testing.T) {
	srv := startModel(&model{})
	defer srv.Close()
	rp, err := startRelay(srv)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { rp.cmd.Process.Kill(); rp.cmd.Wait() }()
	resp, err := http.Get("http://" + rp.addr + "/direct?n=two&frames=1")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusBadRequest {
		t.Errorf("n=two: %s, want 400", resp.Status)
	}
	if d, err := rp.directRoundTrips(1, 1); err != nil || len(d) != 1 {
		t.Fatalf("one round trip: %v, %v", d, err)
	}
	srv.Close() // the model is gone: a new session cannot open
	if _, err := rp.directRoundTrips(1, 1); err == nil || !strings.Contains(err.Error(), "502") {
		t.Errorf("without the model: %v, want a 502 error", err)
	}
}
