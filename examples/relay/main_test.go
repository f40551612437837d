package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/sagemaker-bidi/sagemaker-bidi/examples/internal/cli"
)

// quickQuiet is the -finish-quiet of the tests whose model is biditest's
// echo, which answers every message before it sees the end of the input:
// no reply can be lost to a short quiet period, and the call ends 2 s
// sooner than with the default.
const quickQuiet = "200ms"

// startServer runs the example with args on a free loopback port and
// returns its address; it stops when the test ends.
func startServer(t *testing.T, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	ready := make(chan string, 1)
	done := make(chan int, 1)
	var out bytes.Buffer
	go func() {
		done <- run(ctx, append([]string{"-addr", "127.0.0.1:0"}, args...), io.Discard, &out, ready)
	}()
	t.Cleanup(func() {
		cancel()
		if code := <-done; code != 0 {
			t.Errorf("exit code %d: %s", code, out.String())
		}
	})
	select {
	case addr := <-ready:
		return addr
	case code := <-done:
		done <- code
		t.Fatalf("server exited with %d: %s", code, out.String())
	}
	return ""
}

// needTool returns the path of an external tool, or skips the test
// (fails it under BIDI_REQUIRE_TOOLS=1) when it is missing.
func needTool(t *testing.T, name string) string {
	t.Helper()
	p, err := exec.LookPath(name)
	if err != nil {
		if os.Getenv("BIDI_REQUIRE_TOOLS") == "1" {
			t.Fatalf("%s is required (BIDI_REQUIRE_TOOLS=1) but not found: %v", name, err)
		}
		t.Skipf("%s not found; install it to run this test", name)
	}
	return p
}

func TestPageServed(t *testing.T) {
	addr := startServer(t)
	resp, err := http.Get("http://" + addr + "/")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || !strings.Contains(string(body), "Audio through the relay") {
		t.Fatalf("GET /: %d %q", resp.StatusCode, body[:min(len(body), 200)])
	}
	if resp.Header.Get("Content-Security-Policy") == "" {
		t.Fatal("no Content-Security-Policy")
	}
	// Not a WebSocket upgrade: the relay says so.
	resp, err = http.Get("http://" + addr + "/ws")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusUpgradeRequired {
		t.Fatalf("GET /ws: %d, want 426", resp.StatusCode)
	}
}

// A Go client streams audio-sized frames and gets each one back, then the
// normal close after its end message.
func TestGoClientEcho(t *testing.T) {
	t.Parallel() // see TestMain
	// The client sends in a burst: queues that hold it all drop nothing.
	addr := startServer(t, "-token", "s3cret", "-queue-bytes", "4194304", "-finish-quiet", quickQuiet)
	if _, resp, err := websocket.Dial(t.Context(), "ws://"+addr+"/ws", nil); err == nil || resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("without token: %v", err)
	}
	c, _, err := websocket.Dial(t.Context(), "ws://"+addr+"/ws?token=s3cret", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c.CloseNow()
	const frames = 100
	for i := range frames {
		f := bytes.Repeat([]byte{byte(i)}, 640)
		if err := c.Write(t.Context(), websocket.MessageBinary, f); err != nil {
			t.Fatal(err)
		}
	}
	c.Write(t.Context(), websocket.MessageText, []byte(endMessage))
	for i := 0; ; i++ {
		typ, b, err := c.Read(t.Context())
		if err != nil {
			if websocket.CloseStatus(err) != websocket.StatusNormalClosure || i != frames {
				t.Fatalf("after %d frames: %v", i, err)
			}
			return
		}
		if typ != websocket.MessageBinary || len(b) != 640 || b[0] != byte(i) {
			t.Fatalf("reply %d: %v %d bytes, first %d", i, typ, len(b), b[0])
		}
	}
}

// nodeResult is what testdata/node/client.mjs prints.
type nodeResult struct {
	Sent, Received, Mismatch, Code int
	Reason, Error                  string
}

// runNodeClient runs npm's ws package against url.
func runNodeClient(t *testing.T, url string, count int) nodeResult {
	t.Helper()
	node := needTool(t, "node")
	dir, _ := filepath.Abs("testdata/node")
	if _, err := os.Stat(filepath.Join(dir, "node_modules", "ws")); err != nil {
		if os.Getenv("BIDI_REQUIRE_TOOLS") == "1" {
			t.Fatalf("npm's ws is not installed: run npm ci in %s", dir)
		}
		t.Skipf("npm's ws is not installed: run npm ci in %s", dir)
	}
	cmd := exec.CommandContext(t.Context(), node, "client.mjs", url, strconv.Itoa(count))
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("node: %v\n%s", err, out)
	}
	var r nodeResult
	if err := json.Unmarshal(bytes.TrimSpace(out), &r); err != nil {
		t.Fatalf("node printed %q: %v", out, err)
	}
	return r
}

// An unmodified third-party client (npm's ws) through the relay to
// biditest: every message echoed once, in order, with its type.
func TestNodeWSClient(t *testing.T) {
	t.Parallel() // see TestMain
	// Queues that hold a burst: see TestGoClientEcho.
	addr := startServer(t, "-queue-bytes", "4194304", "-finish-quiet", quickQuiet)
	r := runNodeClient(t, "ws://"+addr+"/ws", 200)
	if r.Error != "" || r.Sent != 200 || r.Received != 200 || r.Mismatch != -1 || r.Code != 1000 {
		t.Fatalf("node client: %+v", r)
	}
}

// TestEveryFlagHasAnExample checks that -h shows every flag in use.
func TestEveryFlagHasAnExample(t *testing.T) {
	fs, _ := newFlagSet(io.Discard)
	if missing := cli.FlagsWithoutExample(fs); len(missing) > 0 {
		t.Errorf("flags without an example in -h: %q", missing)
	}
}

// A bad flag is a usage error (exit 2), -h is not an error, and Ctrl-C
// ends the server with 130 and "relay: interrupted".
func TestExitCodes(t *testing.T) {
	var out bytes.Buffer
	if code := run(t.Context(), []string{"-no-such-flag"}, io.Discard, &out, nil); code != 2 {
		t.Errorf("bad flag: exit %d", code)
	}
	if code := run(t.Context(), []string{"-memory-limit", "-1"}, io.Discard, &out, nil); code != 2 || !strings.Contains(out.String(), "-memory-limit -1") {
		t.Errorf("negative -memory-limit: exit %d, stderr %q", code, out.String())
	}
	if o, err := parseFlags([]string{"-memory-limit", "60"}, io.Discard); err != nil || o.memMiB != 60 {
		t.Errorf("-memory-limit 60: %+v, %v", o, err)
	}
	if code := run(t.Context(), []string{"-finish-quiet", "-1s"}, io.Discard, &out, nil); code != 2 || !strings.Contains(out.String(), "-finish-quiet -1s") {
		t.Errorf("negative -finish-quiet: exit %d, stderr %q", code, out.String())
	}
	if o, err := parseFlags([]string{"-finish-quiet", "250ms"}, io.Discard); err != nil || o.quiet != 250*time.Millisecond {
		t.Errorf("-finish-quiet 250ms: %+v, %v", o, err)
	}
	if code := run(t.Context(), []string{"-h"}, io.Discard, &out, nil); code != 0 {
		t.Errorf("-h: exit %d", code)
	}
	ctx, cancel := context.WithCancelCause(context.Background())
	ready := make(chan string, 1)
	done := make(chan int, 1)
	var errOut bytes.Buffer
	go func() { done <- run(ctx, []string{"-addr", "127.0.0.1:0"}, io.Discard, &errOut, ready) }()
	<-ready
	cancel(cli.ErrInterrupted)
	if code := <-done; code != cli.ExitInterrupted || errOut.String() != "relay: interrupted\n" {
		t.Errorf("interrupted: exit %d, stderr %q", code, errOut.String())
	}
}
