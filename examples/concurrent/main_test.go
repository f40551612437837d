package main

import (
	"bytes"
	"context"
	"encoding/pem"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/sagemaker-bidi/sagemaker-bidi/bidi/biditest"
	"github.com/sagemaker-bidi/sagemaker-bidi/examples/internal/cli"
)

func TestConcurrentSessionsShareOneConnection(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var out, errOut bytes.Buffer
	if code := run(ctx, []string{"-sessions", "20", "-messages", "5", "-size", "100"}, &out, &errOut); code != 0 {
		t.Fatalf("exit code %d, stderr: %s\nstdout:\n%s", code, errOut.String(), out.String())
	}
	got := out.String()
	for _, want := range []string{
		"20 sessions x 5 messages of 100 bytes, all from one bidi.Client",
		"100 round trips in ",
		// Counted by Options.DialContext on the client's own engine.
		"connections: 1 dialed for the 20 sessions, the server saw 1 client address(es)",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("output lacks %q:\n%s", want, got)
		}
	}
	pct := regexp.MustCompile(`p50 \S+  p90 \S+  p99 \S+  max \S+`)
	if n := len(pct.FindAllString(got, -1)); n != 2 {
		t.Errorf("want percentiles for opening and round trips:\n%s", got)
	}
}

func TestPercentiles(t *testing.T) {
	var d []time.Duration
	for i := 100; i >= 1; i-- {
		d = append(d, time.Duration(i)*time.Millisecond)
	}
	if got, want := percentiles(d), "p50 50ms  p90 90ms  p99 99ms  max 100ms"; got != want {
		t.Errorf("percentiles = %q, want %q", got, want)
	}
	if got := percentiles(nil); got != "no samples" {
		t.Errorf("percentiles(nil) = %q", got)
	}
}

func TestFlags(t *testing.T) {
	ctx := context.Background()
	var out, errOut bytes.Buffer
	if code := run(ctx, []string{"-h"}, &out, &errOut); code != 0 {
		t.Errorf("-h exit code %d", code)
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"-sessions", "0"}, "concurrent: usage: -sessions and -messages must be positive"},
		{[]string{"-size", "1"}, "-size 32 bytes to 16 MiB"},
		// The error and a pointer to -h, not the whole help.
		{[]string{"-bogus"}, "concurrent: usage: flag provided but not defined: -bogus\nRun 'concurrent -h' for the flags.\n"},
		{[]string{"-endpoint", "my_echo"}, "the character '_' at offset 2"},
	} {
		errOut.Reset()
		if code := run(ctx, tc.args, &out, &errOut); code != 2 || !strings.Contains(errOut.String(), tc.want) || strings.Contains(errOut.String(), "-sessions sessions") {
			t.Errorf("%q: exit code %d, stderr %q; want 2 and %q", tc.args, code, errOut.String(), tc.want)
		}
	}
}

// TestCABundle runs against a server the AWS configuration reaches: the
// client's engine, with its counting dialer, trusts the custom CA bundle
// (AWS_CA_BUNDLE), and nothing more.
func TestCABundle(t *testing.T) {
	srv := biditest.NewServer(biditest.DemoModel(nil))
	defer srv.Close()
	dir := t.TempDir()
	bundle, empty := filepath.Join(dir, "ca.pem"), filepath.Join(dir, "empty")
	if err := os.WriteFile(bundle, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw}), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(empty, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	for k, v := range map[string]string{
		"AWS_CONFIG_FILE": empty, "AWS_SHARED_CREDENTIALS_FILE": empty, "AWS_EC2_METADATA_DISABLED": "true",
		"AWS_ACCESS_KEY_ID": srv.Credentials.AccessKeyID, "AWS_SECRET_ACCESS_KEY": srv.Credentials.SecretAccessKey,
		"AWS_SESSION_TOKEN": "", "AWS_REGION": srv.Region, "AWS_PROFILE": "",
		"AWS_ENDPOINT_URL": "", "AWS_ENDPOINT_URL_SAGEMAKER_RUNTIME_HTTP2": "",
	} {
		t.Setenv(k, v)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	args := []string{"-endpoint", "demo", "-endpoint-url", srv.URL, "-sessions", "3", "-messages", "2", "-size", "64"}

	t.Setenv("AWS_CA_BUNDLE", "")
	var out, errOut bytes.Buffer
	if code := run(ctx, args, &out, &errOut); code != 1 {
		t.Errorf("without a CA bundle: exit code %d, want 1 (untrusted certificate); stderr: %s", code, errOut.String())
	}
	t.Setenv("AWS_CA_BUNDLE", bundle)
	out.Reset()
	errOut.Reset()
	if code := run(ctx, args, &out, &errOut); code != 0 {
		t.Fatalf("with AWS_CA_BUNDLE: exit code %d, stderr: %s", code, errOut.String())
	}
	if want := "connections: 1 dialed"; !strings.Contains(out.String(), want) {
		t.Errorf("output lacks %q:\n%s", want, out.String())
	}
}

// TestInterrupted runs the program with a context cancelled as Ctrl-C
// cancels it: exit code 130 and "concurrent: interrupted".
func TestInterrupted(t *testing.T) {
	ctx, cancel := context.WithCancelCause(context.Background())
	cancel(cli.ErrInterrupted)
	var out, errOut bytes.Buffer
	if code := run(ctx, []string{"-sessions", "2", "-messages", "2"}, &out, &errOut); code != cli.ExitInterrupted || errOut.String() != "concurrent: interrupted\n" {
		t.Errorf("exit code %d, stderr %q; want 130, \"concurrent: interrupted\"", code, errOut.String())
	}
}

// TestEveryFlagHasAnExample checks that -h shows every flag in use.
func TestEveryFlagHasAnExample(t *testing.T) {
	fs, _ := newFlagSet(io.Discard)
	if missing := cli.FlagsWithoutExample(fs); len(missing) > 0 {
		t.Errorf("flags without an example in -h: %q", missing)
	}
}
