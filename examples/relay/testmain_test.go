package main

import (
	"testing"

	"github.com/sagemaker-bidi/sagemaker-bidi/internal/testexit"
)

// TestMain runs the tests; once they pass, a -race binary exits without
// the race detector's idle second (see package testexit).
//
// The tests that stream through a server of their own to a browser or a
// WebSocket client run in parallel (t.Parallel): each waits most of its
// time, for the page's pacing or the relay's finish quiet (2 s after the
// client's last message). TestNodeThroughGatewayAndContainer sets the
// environment the AWS configuration is loaded from, so it runs alone.
func TestMain(m *testing.M) { testexit.Main(m) }
