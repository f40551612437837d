package main

import (
	"bytes"
	"context"
	"encoding/json"
	"encoding/pem"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"

	"github.com/sagemaker-bidi/sagemaker-bidi/bidi/biditest"
	"github.com/sagemaker-bidi/sagemaker-bidi/internal/testexit"
)

// These tests run bidicat as a user does: the binary, built once by
// TestMain, with its standard streams, environment and exit code.

// binPath is the bidicat binary under test.
var binPath string

// runTimeout bounds one run of the binary.
const runTimeout = 30 * time.Second

func TestMain(m *testing.M) {
	// The parallel tests mostly wait for the binary's timers (a second of
	// -linger, paced input): run them all at once, not GOMAXPROCS at a
	// time, unless -test.parallel says otherwise.
	flag.Parse()
	if !flagGiven("test.parallel") {
		flag.Set("test.parallel", "8")
	}
	dir, err := os.MkdirTemp("", "bidicat-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	binPath = filepath.Join(dir, "bidicat")
	build := exec.Command("go", "build", "-o", binPath, ".")
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "building bidicat:", err)
		os.RemoveAll(dir)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	testexit.Exit(code)
}

// flagGiven reports whether the command line set the flag name.
func flagGiven(name string) bool {
	given := false
	flag.Visit(func(f *flag.Flag) { given = given || f.Name == name })
	return given
}

// result is what one run of the binary produced.
type result struct {
	stdout, stderr string
	code           int
	elapsed        time.Duration
}

// The credentials and region of the servers these tests start (see
// newServer) and of the binary's environment (cleanEnv).
var (
	testCredentials = aws.Credentials{AccessKeyID: "AKIDBIDICATTEST", SecretAccessKey: "bidicat-test-secret-0000"}
	testRegion      = "us-west-2"
)

// newServer returns an unstarted biditest server running h that accepts
// testCredentials in testRegion.
func newServer(h biditest.Handler) *biditest.Server {
	srv := biditest.NewUnstartedServer(h)
	srv.Credentials = testCredentials
	srv.Region = testRegion
	return srv
}

// cleanEnv returns an environment with testCredentials and testRegion,
// no shared config files, no instance metadata, and nothing inherited but
// PATH: the binary must not find the developer's AWS settings.
func cleanEnv(t *testing.T) []string {
	t.Helper()
	dir := t.TempDir()
	empty := func(name string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, nil, 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	return []string{
		"PATH=" + os.Getenv("PATH"),
		"HOME=" + dir,
		"AWS_ACCESS_KEY_ID=" + testCredentials.AccessKeyID,
		"AWS_SECRET_ACCESS_KEY=" + testCredentials.SecretAccessKey,
		"AWS_REGION=" + testRegion,
		"AWS_EC2_METADATA_DISABLED=true",
		"AWS_CONFIG_FILE=" + empty("config"),
		"AWS_SHARED_CREDENTIALS_FILE=" + empty("credentials"),
	}
}

// runCat runs the binary with stdin and args and waits for it.
func runCat(t *testing.T, env []string, stdin string, args ...string) result {
	t.Helper()
	cmd, stdout, stderr := command(t, env, stdin, args...)
	start := time.Now()
	err := cmd.Run()
	return finished(t, cmd, err, start, stdout, stderr)
}

// command prepares a run of the binary, bounded by runTimeout.
func command(t *testing.T, env []string, stdin string, args ...string) (*exec.Cmd, *bytes.Buffer, *bytes.Buffer) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), runTimeout)
	t.Cleanup(cancel)
	cmd := exec.CommandContext(ctx, binPath, args...)
	cmd.Env = env
	cmd.Stdin = strings.NewReader(stdin)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	cmd.WaitDelay = 5 * time.Second
	return cmd, &stdout, &stderr
}

func finished(t *testing.T, cmd *exec.Cmd, err error, start time.Time, stdout, stderr *bytes.Buffer) result {
	t.Helper()
	r := result{stdout: stdout.String(), stderr: stderr.String(), elapsed: time.Since(start)}
	var ee *exec.ExitError
	switch {
	case err == nil:
	case errors.As(err, &ee):
		r.code = ee.ExitCode()
	default:
		t.Fatalf("running %v: %v\nstderr: %s", cmd.Args, err, r.stderr)
	}
	if r.code == -1 {
		t.Fatalf("%v was killed (timeout?)\nstdout: %s\nstderr: %s", cmd.Args, r.stdout, r.stderr)
	}
	return r
}

// wantCode fails the test unless r exited with code.
func (r result) wantCode(t *testing.T, code int) {
	t.Helper()
	if r.code != code {
		t.Fatalf("exit code %d, want %d\nstdout: %s\nstderr: %s", r.code, code, r.stdout, r.stderr)
	}
}

// jsonLines decodes the -json output of r, one object per line.
func (r result) jsonLines(t *testing.T) []map[string]any {
	t.Helper()
	var objs []map[string]any
	dec := json.NewDecoder(strings.NewReader(r.stdout))
	for {
		var m map[string]any
		err := dec.Decode(&m)
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("stdout is not JSON lines: %v\n%s", err, r.stdout)
		}
		objs = append(objs, m)
	}
	for i, line := range strings.Split(strings.TrimSuffix(r.stdout, "\n"), "\n") {
		if !json.Valid([]byte(line)) {
			t.Fatalf("line %d is not one JSON object: %q", i+1, line)
		}
	}
	return objs
}

// ofType returns the objects whose "type" is typ.
func ofType(objs []map[string]any, typ string) []map[string]any {
	var out []map[string]any
	for _, o := range objs {
		if o["type"] == typ {
			out = append(out, o)
		}
	}
	return out
}

// server starts a biditest server running h and returns it with the
// flags that point bidicat at it: -endpoint-url and -ca-cert with the
// server's certificate written to a PEM file.
func server(t *testing.T, h biditest.Handler) (*biditest.Server, []string) {
	t.Helper()
	srv := newServer(h)
	srv.Start()
	t.Cleanup(srv.Close)
	return srv, serverFlags(t, srv)
}

// serverFlags returns the flags that point bidicat at srv, trusting its
// certificate.
func serverFlags(t *testing.T, srv *biditest.Server) []string {
	t.Helper()
	certFile := filepath.Join(t.TempDir(), "server.pem")
	block := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw})
	if err := os.WriteFile(certFile, block, 0o600); err != nil {
		t.Fatal(err)
	}
	return []string{"-endpoint-url", srv.URL, "-ca-cert", certFile}
}

// chatRequest is a streamed OpenAI chat request for prompt.
func chatRequest(prompt string) string {
	return fmt.Sprintf(`{"model":"demo","stream":true,"messages":[{"role":"user","content":%q}]}`, prompt)
}
