package main

import (
	"flag"
	"os"
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
