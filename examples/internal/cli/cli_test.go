package cli

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/aws/smithy-go/logging"

	"github.com/sagemaker-bidi/sagemaker-bidi/bidi"
	"github.com/sagemaker-bidi/sagemaker-bidi/bidi/biditest"
)

func TestFlagsRegisterAndOpenInput(t *testing.T) {
	var f Flags
	var help bytes.Buffer
	fs := NewFlagSet("prog", "usage: prog [flags]\n\n", &help)
	f.Register(fs, "; empty runs the in-process demo server")
	f.RegisterPath(fs)
	f.RegisterQuery(fs)
	if missing := FlagsWithoutExample(fs); len(missing) > 0 {
		t.Errorf("flags without an example in their usage: %q", missing)
	}
	if err := fs.Parse([]string{"-h"}); !errors.Is(err, flag.ErrHelp) {
		t.Fatalf("-h: %v", err)
	}
	if got := help.String(); !strings.HasPrefix(got, "usage: prog [flags]\n\n") || !strings.Contains(got, "empty runs the in-process demo server") {
		t.Errorf("usage:\n%s", got)
	}

	if got, want := *f.OpenInput("local"), (bidi.OpenInput{EndpointName: "local"}); got != want {
		t.Errorf("OpenInput without flags = %+v, want %+v", got, want)
	}
	args := []string{"-endpoint", "e", "-target-variant", "Blue", "-path", "v1/chat", "-query", "mode=echo"}
	if err := fs.Parse(args); err != nil {
		t.Fatal(err)
	}
	want := bidi.OpenInput{EndpointName: "e", TargetVariant: "Blue", ModelInvocationPath: "v1/chat", ModelQueryString: "mode=echo"}
	if got := *f.OpenInput("local"); got != want {
		t.Errorf("OpenInput = %+v, want %+v", got, want)
	}
	if srv := f.LocalServer(biditest.Echo()); srv != nil {
		srv.Close()
		t.Error("LocalServer started a server despite -endpoint")
	}
}

// TestClient runs an echo through the local server, and through the AWS
// configuration's branch pointed at the same server by -endpoint-url.
func TestClient(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	echo := func(t *testing.T, c *bidi.Client, in *bidi.OpenInput) {
		t.Helper()
		sess, err := c.Open(ctx, in)
		if err != nil {
			t.Fatal(err)
		}
		defer sess.Close()
		if err := sess.Send(ctx, bidi.Text("ping")); err != nil {
			t.Fatal(err)
		}
		if m, err := sess.Recv(ctx); err != nil || string(m.Data) != "ping" {
			t.Fatalf("echo = %q, %v", m.Data, err)
		}
	}

	var f Flags
	srv := f.LocalServer(biditest.Echo())
	if srv == nil {
		t.Fatal("no local server without -endpoint")
	}
	defer srv.Close()
	c, err := f.Client(ctx, srv)
	if err != nil {
		t.Fatal(err)
	}
	echo(t, c, f.OpenInput("local"))

	dir := t.TempDir()
	empty := dir + "/empty"
	if err := os.WriteFile(empty, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	for k, v := range map[string]string{
		"AWS_CONFIG_FILE": empty, "AWS_SHARED_CREDENTIALS_FILE": empty, "AWS_EC2_METADATA_DISABLED": "true",
		"AWS_ACCESS_KEY_ID": srv.Credentials.AccessKeyID, "AWS_SECRET_ACCESS_KEY": srv.Credentials.SecretAccessKey,
		"AWS_SESSION_TOKEN": "", "AWS_REGION": "", "AWS_PROFILE": "", "AWS_CA_BUNDLE": "",
		"AWS_ENDPOINT_URL": "", "AWS_ENDPOINT_URL_SAGEMAKER_RUNTIME_HTTP2": "",
	} {
		t.Setenv(k, v)
	}
	f = Flags{Endpoint: "aws-branch", Region: srv.Region, EndpointURL: srv.URL}
	trust := x509.NewCertPool()
	trust.AddCert(srv.Certificate())
	c, err = f.Client(ctx, nil, func(o *bidi.Options) { o.TLSConfig = &tls.Config{RootCAs: trust} })
	if err != nil {
		t.Fatal(err)
	}
	echo(t, c, f.OpenInput("unused"))
	if streams := srv.Streams(); len(streams) != 2 {
		t.Errorf("the server saw %d streams, want 2", len(streams))
	}

	f.Profile = "no-such-profile"
	if _, err := f.Client(ctx, nil); err == nil {
		t.Error("a missing -profile loaded")
	}
}

func TestIsTerminal(t *testing.T) {
	null, err := os.Open(os.DevNull)
	if err != nil {
		t.Fatal(err)
	}
	defer null.Close()
	if IsTerminal(null) || IsTerminal(strings.NewReader("")) {
		t.Error("the null device or a string reader counted as a terminal")
	}
	if IsTerminal((*os.File)(nil)) || IsTerminal(nil) {
		t.Error("a nil file counted as a terminal")
	}
}

func TestPrinter(t *testing.T) {
	var out bytes.Buffer
	p := &Printer{Out: &out}
	p.End() // nothing printed yet: nothing to end
	for _, s := range [][2]string{{"model (thinking)", "Hm"}, {"model (thinking)", "m."}, {"model", ""}, {"model", "Hi"}, {"model", "!"}} {
		p.Print(s[0], s[1])
	}
	p.End()
	p.Print("model", "again")
	p.End()
	io.WriteString(&out, "|")
	if got, want := out.String(), "model (thinking)> Hmm.\nmodel> Hi!\nmodel> again\n|"; got != want {
		t.Errorf("printed %q, want %q", got, want)
	}
}

func TestFlagsWithoutExample(t *testing.T) {
	fs := flag.NewFlagSet("prog", flag.ContinueOnError)
	fs.Int("good", 1, "a `number`, e.g. -good 3")
	fs.Int("bare", 1, "a number")
	fs.String("other", "", "e.g. -good 3, but not this flag")
	if got := FlagsWithoutExample(fs); strings.Join(got, ",") != "bare,other" {
		t.Errorf("FlagsWithoutExample = %q, want bare and other", got)
	}
}

// cleanAWSEnv points the AWS configuration at empty files, with
// static keys and no region, so that nothing of the developer's is
// found.
func cleanAWSEnv(t *testing.T) {
	t.Helper()
	empty := t.TempDir() + "/empty"
	if err := os.WriteFile(empty, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	for k, v := range map[string]string{
		"AWS_CONFIG_FILE": empty, "AWS_SHARED_CREDENTIALS_FILE": empty, "AWS_EC2_METADATA_DISABLED": "true",
		"AWS_ACCESS_KEY_ID": "AKIDCLITEST", "AWS_SECRET_ACCESS_KEY": "cli-test-secret-0000",
		"AWS_SESSION_TOKEN": "", "AWS_REGION": "", "AWS_DEFAULT_REGION": "", "AWS_PROFILE": "", "AWS_CA_BUNDLE": "",
		"AWS_ENDPOINT_URL": "", "AWS_ENDPOINT_URL_SAGEMAKER_RUNTIME_HTTP2": "",
	} {
		t.Setenv(k, v)
	}
}

// TestLoadConfigIsQuiet checks that the AWS configuration carries a
// logger that prints nothing, unless Debug: the SDK's default one writes
// lines such as "SDK … WARN falling back to IMDSv1" on stderr.
func TestLoadConfigIsQuiet(t *testing.T) {
	cleanAWSEnv(t)
	ctx := context.Background()
	var f Flags
	cfg, err := f.LoadConfig(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := cfg.Logger.(logging.Nop); !ok {
		t.Errorf("without Debug, the config's logger is %T, want logging.Nop", cfg.Logger)
	}
	f.Debug = true
	if cfg, err = f.LoadConfig(ctx); err != nil {
		t.Fatal(err)
	}
	if _, ok := cfg.Logger.(logging.Nop); ok {
		t.Error("with Debug, the config's logger is logging.Nop")
	}
}

// TestDescribeHints checks the hints of the errors users meet first: no
// region, and an -endpoint-url whose certificate is not trusted (the
// local gateway's, renewed at each start).
func TestDescribeHints(t *testing.T) {
	cleanAWSEnv(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	f := Flags{Endpoint: "e"}
	c, err := f.Client(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	_, err = c.Open(ctx, f.OpenInput(""))
	if err == nil {
		t.Fatal("opened without a region")
	}
	if got := f.Describe(err); !strings.HasSuffix(got, "; set -region or AWS_REGION") {
		t.Errorf("Describe(no region) = %q", got)
	}

	srv := biditest.NewServer(biditest.Echo())
	defer srv.Close()
	f = Flags{Endpoint: "e", Region: srv.Region, EndpointURL: srv.URL}
	if c, err = f.Client(ctx, nil); err != nil {
		t.Fatal(err)
	}
	_, err = c.Open(ctx, f.OpenInput(""))
	if err == nil {
		t.Fatal("trusted the test server's certificate")
	}
	if got := f.Describe(err); !strings.Contains(got, "certificate signed by unknown authority") || !strings.Contains(got, "re-trust the certificate written with -cert-out") {
		t.Errorf("Describe(unknown authority) = %q", got)
	}
	// The same error text without -endpoint-url, or wrapped: no gateway
	// hint, and the typed error is found through wrapping.
	tlsErr := fmt.Errorf("dial: %w", &tls.CertificateVerificationError{Err: x509.UnknownAuthorityError{}})
	if got := (&Flags{}).Hint(tlsErr); got != "" {
		t.Errorf("hint %q without -endpoint-url", got)
	}
	if got := (&Flags{EndpointURL: "https://localhost:8443"}).Hint(tlsErr); !strings.Contains(got, "-cert-out") {
		t.Errorf("hint %q for a wrapped x509.UnknownAuthorityError", got)
	}
	if got := (&Flags{}).Describe(errors.New("plain")); got != "plain" {
		t.Errorf("Describe(plain) = %q", got)
	}
}

// TestDescribeModelError checks that Describe adds the log stream ARN,
// which ModelError.Error() leaves out, and repeats nothing Error() says.
func TestDescribeModelError(t *testing.T) {
	me := &bidi.ModelError{Message: "Received server error (500)", OriginalStatusCode: 500, LogStreamArn: "arn:aws:logs:x"}
	err := &bidi.ResponseError{StatusCode: 424, Code: "ModelError", Message: me.Message, RequestID: "req-1", Err: me}
	got := (&Flags{}).Describe(err)
	if want := err.Error() + " (log stream arn:aws:logs:x)"; got != want {
		t.Errorf("Describe = %q, want %q", got, want)
	}
	if strings.Count(got, "req-1") != 1 || strings.Count(got, "500") != 2 { // "(500)" in the message, "original status 500"
		t.Errorf("Describe repeats fields: %q", got)
	}
}

// TestNotifyInterrupt sends this process a real SIGINT: the context ends
// with ErrInterrupted, Interrupted reports it through derived contexts,
// and Fail maps it to exit code 130 and "prog: interrupted".
func TestNotifyInterrupt(t *testing.T) {
	ctx, stop := NotifyInterrupt(context.Background())
	defer stop()
	derived, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	if Interrupted(derived) {
		t.Fatal("interrupted before any signal")
	}
	p, err := os.FindProcess(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Signal(os.Interrupt); err != nil {
		t.Skipf("cannot send SIGINT here: %v", err)
	}
	select {
	case <-derived.Done():
	case <-time.After(10 * time.Second):
		t.Fatal("the signal did not cancel the context")
	}
	if !Interrupted(derived) || !Interrupted(ctx) {
		t.Errorf("Interrupted = false after SIGINT; cause %v", context.Cause(derived))
	}
	var errOut bytes.Buffer
	if code := Fail(derived, &errOut, "prog", "context canceled"); code != ExitInterrupted || errOut.String() != "prog: interrupted\n" {
		t.Errorf("Fail after SIGINT = %d, %q; want 130, \"prog: interrupted\"", code, errOut.String())
	}
}

func TestFail(t *testing.T) {
	var errOut bytes.Buffer
	if code := Fail(context.Background(), &errOut, "prog", "it broke"); code != 1 || errOut.String() != "prog: it broke\n" {
		t.Errorf("Fail = %d, %q", code, errOut.String())
	}
	// A context cancelled for another reason (stop, a timeout) is no
	// interrupt.
	ctx, stop := NotifyInterrupt(context.Background())
	stop()
	errOut.Reset()
	if code := Fail(ctx, &errOut, "prog", "context canceled"); code != 1 || Interrupted(ctx) {
		t.Errorf("Fail after stop = %d, %q", code, errOut.String())
	}
}
