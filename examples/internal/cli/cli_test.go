package cli

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"io"
	"os"
	"strings"
	"testing"
	"time"

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
	fs.VisitAll(func(fl *flag.Flag) {
		if i := strings.Index(fl.Usage, "e.g. "); i < 0 || !strings.Contains(fl.Usage[i:], "-"+fl.Name) {
			t.Errorf("-%s: usage %q has no example", fl.Name, fl.Usage)
		}
	})
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
		"AWS_ACCESS_KEY_ID": biditest.AccessKeyID, "AWS_SECRET_ACCESS_KEY": biditest.SecretAccessKey,
		"AWS_SESSION_TOKEN": "", "AWS_REGION": "", "AWS_PROFILE": "", "AWS_CA_BUNDLE": "",
		"AWS_ENDPOINT_URL": "", "AWS_ENDPOINT_URL_SAGEMAKER_RUNTIME_HTTP2": "",
	} {
		t.Setenv(k, v)
	}
	f = Flags{Endpoint: "aws-branch", Region: biditest.Region, EndpointURL: srv.URL}
	c, err = f.Client(ctx, nil, func(o *bidi.Options) { o.HTTPClient = srv.HTTPClient() })
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
