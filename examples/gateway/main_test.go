package main

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"flag"
	"io"
	"net"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"

	"github.com/sagemaker-bidi/sagemaker-bidi/bidi"
	"github.com/sagemaker-bidi/sagemaker-bidi/examples/container/model"
	"github.com/sagemaker-bidi/sagemaker-bidi/examples/internal/clitest"
	"github.com/sagemaker-bidi/sagemaker-bidi/internal/testexit"
)

// TestMain runs the program itself when the tests re-execute their binary
// (see TestSignals), and the tests otherwise (see package testexit).
func TestMain(m *testing.M) {
	if os.Getenv("GATEWAY_TEST_MAIN") == "1" {
		os.Args = append([]string{"gateway"}, strings.Fields(os.Getenv("GATEWAY_TEST_ARGS"))...)
		main()
		return
	}
	testexit.Exit(m.Run())
}

const (
	testAccessKey = "AKIDMAINTEST"
	testSecretKey = "main-test-secret-key"
)

func testEnv(key string) string {
	return map[string]string{"AWS_ACCESS_KEY_ID": testAccessKey, "AWS_SECRET_ACCESS_KEY": testSecretKey}[key]
}

func noEnv(string) string { return "" }

// -h documents every flag with an example, and the examples run the
// gateway.
func TestHelp(t *testing.T) {
	var stdout, stderr bytes.Buffer
	if code := run(context.Background(), []string{"-h"}, &stdout, &stderr, noEnv); code != exitOK {
		t.Fatalf("-h exit code %d", code)
	}
	help := stderr.String()
	var c config
	newFlagSet(&c, io.Discard).VisitAll(func(f *flag.Flag) {
		if !strings.Contains(help, "  -"+f.Name) {
			t.Errorf("-h does not list -%s", f.Name)
		}
		if !strings.Contains(f.Usage, "e.g. -"+f.Name) {
			t.Errorf("-%s has no example: %q", f.Name, f.Usage)
		}
	})
	for _, want := range []string{"Usage: gateway [flags]", "Examples:", "go run ./examples/gateway -cert-out", "-accept-any-signature"} {
		if !strings.Contains(help, want) {
			t.Errorf("-h lacks %q", want)
		}
	}
}

func TestUsageErrors(t *testing.T) {
	for _, tc := range []struct {
		args []string
		env  func(string) string
		want string
	}{
		{nil, noEnv, "no credentials"},
		{[]string{"-access-key", "AKID"}, noEnv, "-access-key and -secret-key go together"},
		{[]string{"-accept-any-signature", "extra"}, noEnv, "unexpected arguments"},
		{[]string{"-h2c", "-cert-out", "x.pem"}, testEnv, "-h2c serves no certificate"},
		{[]string{"-tls-cert", "c.pem"}, testEnv, "-tls-cert and -tls-key go together"},
		{[]string{"-max-frame-size", "0"}, testEnv, "-max-frame-size must be"},
		{[]string{"-dial-timeout", "0"}, testEnv, "SageMaker's limit is 250ms"},
		{[]string{"-shutdown-grace", "-1s"}, testEnv, "-shutdown-grace must not be negative"},
		{[]string{"-no-such-flag"}, testEnv, "flag provided but not defined"},
		{[]string{"-max-sessions", "0"}, testEnv, "-max-sessions must not be 0"},
		{[]string{"-max-event-size", "0"}, testEnv, "-max-event-size must not be 0"},
		{[]string{"-idle-timeout", "0"}, testEnv, "-idle-timeout must not be 0"},
	} {
		var stderr bytes.Buffer
		code := run(context.Background(), tc.args, io.Discard, &stderr, tc.env)
		if code != exitUsage || !strings.Contains(stderr.String(), tc.want) {
			t.Errorf("%q: exit %d, stderr %q; want %d with %q", tc.args, code, stderr.String(), exitUsage, tc.want)
		}
	}
	var stderr bytes.Buffer
	code := run(context.Background(), []string{"-addr", "256.0.0.1:1", "-accept-any-signature"}, io.Discard, &stderr, noEnv)
	if code != exitError || !strings.Contains(stderr.String(), "listen") {
		t.Errorf("bad address: exit %d, stderr %q", code, stderr.String())
	}
}

var listeningRE = regexp.MustCompile(`msg=listening url=(\S+)`)

// waitListening returns the gateway's URL once the log announces it.
func waitListening(t *testing.T, logs *clitest.SyncBuffer) string {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		if m := listeningRE.FindStringSubmatch(logs.String()); m != nil {
			return m[1]
		}
		time.Sleep(5 * time.Millisecond)
	}
	t.Fatalf("the gateway did not start:\n%s", logs)
	return ""
}

// The program as a user runs it: credentials from the environment, the
// certificate written with -cert-out and trusted by the client, a session
// through the sample container, then a clean stop; the log tells the
// lifecycle and shows neither payloads nor secrets.
func TestRun(t *testing.T) {
	container := httptest.NewServer(model.NewHandler(model.Options{Defaults: "mode=echo"}))
	defer container.Close()
	certFile := filepath.Join(t.TempDir(), "gateway.pem")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	logs := new(clitest.SyncBuffer)
	exit := make(chan int, 1)
	go func() {
		exit <- run(ctx, []string{"-addr", "127.0.0.1:0", "-container", "ws://" + container.Listener.Addr().String(),
			"-cert-out", certFile, "-variant", "Blue"}, io.Discard, logs, testEnv)
	}()
	url := waitListening(t, logs)

	pemBytes, err := os.ReadFile(certFile)
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pemBytes) {
		t.Fatal("-cert-out wrote no certificate")
	}
	client := bidi.NewFromConfig(aws.Config{
		Region:      "us-west-2",
		Credentials: credentials.NewStaticCredentialsProvider(testAccessKey, testSecretKey, ""),
	}, func(o *bidi.Options) { o.BaseEndpoint = aws.String(url); o.TLSConfig = &tls.Config{RootCAs: pool} })
	sctx, scancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer scancel()
	sess, err := client.Open(sctx, &bidi.OpenInput{EndpointName: "local", ModelQueryString: "mode=echo"})
	if err != nil {
		t.Fatal(err)
	}
	defer sess.Close()
	const secretPayload = "payload-that-must-not-be-logged"
	sess.Send(sctx, bidi.Text(secretPayload))
	if m, err := sess.Recv(sctx); err != nil || string(m.Data) != secretPayload {
		t.Fatalf("echo = %q, %v", m.Data, err)
	}
	if resp, err := sess.Response(sctx); err != nil || resp.InvokedProductionVariant != "Blue" {
		t.Fatalf("response %+v, %v", resp, err)
	}
	sess.CloseSend()
	if _, err := sess.Recv(sctx); err != io.EOF {
		t.Fatalf("end of stream: %v", err)
	}

	// One session, then the program would exit: no idle connection is
	// kept, which would hold the stop below for the grace net/http's
	// server gives a client to leave after GOAWAY.
	sess.Close()
	client.CloseIdleConnections()
	cancel() // as SIGINT does
	select {
	case code := <-exit:
		if code != exitOK {
			t.Fatalf("exit code %d", code)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the gateway did not stop")
	}
	out := logs.String()
	for _, want := range []string{"msg=\"certificate written\"", "msg=\"container ready\"", "msg=\"session open\"",
		"msg=\"session end\"", "cause=\"client ended its stream\"", "msg=\"shutting down: no new sessions; running ones may finish\"", "msg=stopped"} {
		if !strings.Contains(out, want) {
			t.Errorf("log lacks %s:\n%s", want, out)
		}
	}
	for _, secret := range []string{secretPayload, testSecretKey, "mode=echo"} {
		if strings.Contains(out, secret) {
			t.Errorf("log shows %q:\n%s", secret, out)
		}
	}
}

// Listening beyond loopback is announced with a warning that names the
// risk of -accept-any-signature and -h2c; loopback is not. (The addresses
// are checked without listening on them: the tests stay on loopback.)
func TestExposureWarning(t *testing.T) {
	any4 := &net.TCPAddr{IP: net.IPv4zero, Port: 8443}
	for _, tc := range []struct {
		addr           net.Addr
		acceptAny, h2c bool
		want           string // "" for no warning
	}{
		{&net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 8443}, true, true, ""},
		{&net.TCPAddr{IP: net.IPv6loopback, Port: 8443}, false, false, ""},
		{any4, false, false, "other machines can reach the gateway;"},
		{&net.TCPAddr{IP: net.IPv4(192, 168, 1, 2), Port: 8443}, false, false, "other machines can reach the gateway;"},
		{any4, true, false, "-accept-any-signature lets anyone use the container"},
		{any4, false, true, "-h2c sends everything in clear text"},
	} {
		got := exposureWarning(tc.addr, tc.acceptAny, tc.h2c)
		if (got == "") != (tc.want == "") || !strings.Contains(got, tc.want) {
			t.Errorf("%v any=%v h2c=%v: %q, want %q", tc.addr, tc.acceptAny, tc.h2c, got, tc.want)
		}
	}
	// The program logs it at start.
	ctx, cancel := context.WithCancel(context.Background())
	logs := new(clitest.SyncBuffer)
	exit := make(chan int, 1)
	go func() {
		exit <- run(ctx, []string{"-addr", "127.0.0.1:0", "-container", "ws://127.0.0.1:1", "-health-timeout", "-1s"}, io.Discard, logs, testEnv)
	}()
	waitListening(t, logs)
	cancel()
	<-exit
	if strings.Contains(logs.String(), "beyond loopback") {
		t.Errorf("a loopback address was warned about:\n%s", logs)
	}
}

// -session-token warns, as -secret-key does, that flags show in ps.
func TestSecretFlagsWarnAboutPS(t *testing.T) {
	var c config
	fs := newFlagSet(&c, io.Discard)
	for _, name := range []string{"secret-key", "session-token"} {
		if !strings.Contains(fs.Lookup(name).Usage, "flags show in ps") {
			t.Errorf("-%s help does not warn that flags show in ps", name)
		}
	}
}

// SIGINT (Ctrl-C) stops the program cleanly with exit code 130 and
// "gateway: interrupted", as examples/README promises; SIGTERM, the way
// supervisors stop it, with exit code 0.
func TestSignals(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the program in a subprocess")
	}
	for _, sig := range []os.Signal{os.Interrupt, syscall.SIGTERM} {
		t.Run(sig.String(), func(t *testing.T) {
			cmd := exec.Command(os.Args[0], "-test.run=^$")
			cmd.Env = append(testexit.Environ(), "GATEWAY_TEST_MAIN=1",
				"GATEWAY_TEST_ARGS=-addr 127.0.0.1:0 -h2c -accept-any-signature -container ws://127.0.0.1:1 -health-timeout 100ms")
			stderr, err := cmd.StderrPipe()
			if err != nil {
				t.Fatal(err)
			}
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			logs := new(clitest.SyncBuffer)
			copied := make(chan struct{})
			go func() {
				defer close(copied)
				sc := bufio.NewScanner(stderr)
				for sc.Scan() {
					logs.Write(append(sc.Bytes(), '\n'))
				}
			}()
			waitListening(t, logs)
			if err := cmd.Process.Signal(sig); err != nil {
				t.Fatal(err)
			}
			done := make(chan error, 1)
			go func() {
				<-copied
				done <- cmd.Wait()
			}()
			select {
			case err := <-done:
				want := 0
				if sig == os.Interrupt {
					want = exitInterrupted
				}
				if code := cmd.ProcessState.ExitCode(); code != want {
					t.Fatalf("exit: %v, want code %d\n%s", err, want, logs)
				}
				if sig == os.Interrupt && !strings.Contains(logs.String(), "gateway: interrupted") {
					t.Errorf("no \"gateway: interrupted\" on Ctrl-C:\n%s", logs)
				}
			case <-time.After(10 * time.Second):
				cmd.Process.Kill()
				t.Fatalf("no exit after %v:\n%s", sig, logs)
			}
			if out := logs.String(); !strings.Contains(out, "msg=stopped") {
				t.Errorf("log:\n%s", out)
			}
		})
	}
}
