package main

import (
	"bufio"
	"bytes"
	"errors"
	"flag"
	"net"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/sagemaker-bidi/sagemaker-bidi/examples/internal/cli"
	"github.com/sagemaker-bidi/sagemaker-bidi/examples/internal/clitest"
	"github.com/sagemaker-bidi/sagemaker-bidi/internal/testexit"
)

// TestUsage checks that -h shows every flag in use and explains the
// optional serve argument, with which SageMaker starts containers.
func TestUsage(t *testing.T) {
	var help bytes.Buffer
	fs := flag.NewFlagSet("container", flag.ContinueOnError)
	fs.SetOutput(&help)
	defineFlags(fs)
	if missing := cli.FlagsWithoutExample(fs); len(missing) > 0 {
		t.Errorf("flags without an example in -h: %q", missing)
	}
	if err := fs.Parse([]string{"-h"}); !errors.Is(err, flag.ErrHelp) {
		t.Fatalf("-h: %v", err)
	}
	for _, want := range []string{"Usage: container [flags] [serve]", `"docker run IMAGE serve"`, "Query parameters", "-read-limit bytes"} {
		if !strings.Contains(help.String(), want) {
			t.Errorf("-h lacks %q:\n%s", want, help.String())
		}
	}
}

// The container listens on loopback unless told otherwise (the
// Dockerfile passes -addr :8080 for SageMaker).
func TestDefaultAddrIsLoopback(t *testing.T) {
	fs := flag.NewFlagSet("container", flag.ContinueOnError)
	defineFlags(fs)
	host, _, err := net.SplitHostPort(fs.Lookup("addr").DefValue)
	if err != nil || host != "localhost" {
		t.Fatalf("-addr defaults to %q, want localhost:PORT", fs.Lookup("addr").DefValue)
	}
	docker, err := os.ReadFile("Dockerfile")
	if err != nil || !strings.Contains(string(docker), `"-addr", ":8080"`) {
		t.Fatalf("the Dockerfile does not pass -addr :8080: %v", err)
	}
}

// TestMain runs the program itself when the tests re-execute their binary
// (see TestSignals), and the tests otherwise (see package testexit).
func TestMain(m *testing.M) {
	if os.Getenv("CONTAINER_TEST_MAIN") == "1" {
		os.Args = []string{"container", "-addr", "127.0.0.1:0"}
		main()
		return
	}
	testexit.Exit(m.Run())
}

// Ctrl-C (SIGINT) stops the container with exit code 130 and "container:
// interrupted", as examples/README promises; SIGTERM, the way SageMaker
// stops containers, with exit code 0.
func TestSignals(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the program in a subprocess")
	}
	for _, tc := range []struct {
		sig  os.Signal
		code int
	}{{os.Interrupt, 130}, {syscall.SIGTERM, 0}} {
		t.Run(tc.sig.String(), func(t *testing.T) {
			cmd := exec.Command(os.Args[0], "-test.run=^$")
			cmd.Env = append(testexit.Environ(), "CONTAINER_TEST_MAIN=1")
			stderr, err := cmd.StderrPipe()
			if err != nil {
				t.Fatal(err)
			}
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			logs := new(clitest.SyncBuffer)
			listening := make(chan struct{})
			copied := make(chan struct{})
			go func() {
				defer close(copied)
				sc := bufio.NewScanner(stderr)
				for sc.Scan() {
					logs.Write(append(sc.Bytes(), '\n'))
					if strings.Contains(sc.Text(), "msg=listening") {
						close(listening)
					}
				}
			}()
			select {
			case <-listening:
			case <-time.After(10 * time.Second):
				cmd.Process.Kill()
				t.Fatalf("the container did not start:\n%s", logs)
			}
			if err := cmd.Process.Signal(tc.sig); err != nil {
				t.Fatal(err)
			}
			<-copied
			cmd.Wait()
			if code := cmd.ProcessState.ExitCode(); code != tc.code {
				t.Fatalf("exit code %d, want %d\n%s", code, tc.code, logs)
			}
			if interrupted := strings.Contains(logs.String(), "container: interrupted"); interrupted != (tc.code == 130) {
				t.Errorf("\"container: interrupted\" shown: %v\n%s", interrupted, logs)
			}
		})
	}
}
