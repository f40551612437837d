package main

import (
	"bytes"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/sagemaker-bidi/sagemaker-bidi/bidi/biditest"
)

// The rough edges a new user hit in the first hour (issue 11), each run
// through the binary.

// TestInputCutByService sends one line longer than the model reads: the
// server takes its first part and ends the stream cleanly, as a service
// that drops an oversized message may. bidicat must say that the input
// was cut, with the stream exit class, rather than "sent … but received
// nothing … try -linger" and exit 0. Standard input stays open, so the
// line is still being sent when the stream ends.
func TestInputCutByService(t *testing.T) {
	took := make(chan struct{}, 1)
	_, flags := server(t, biditest.HandlerFunc(func(st *biditest.Stream) {
		st.Accept()
		if _, err := st.RecvPart(); err == nil {
			took <- struct{}{}
		}
		// Returning ends the stream, with no reason given.
	}))
	cmd, stdout, stderr := command(t, cleanEnv(t), "", append(flags, "-endpoint", "e", "-part-size", "1024")...)
	pr, pw, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer pw.Close()
	cmd.Stdin = pr
	start := time.Now()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	pr.Close()
	go pw.Write(bytes.Repeat([]byte("a"), 32<<10)) // a long line, no end yet
	select {
	case <-took:
	case <-time.After(runTimeout):
		t.Fatal("the server never got a part")
	}
	r := finished(t, cmd, cmd.Wait(), start, stdout, stderr)
	r.wantCode(t, exitStream)
	if !strings.Contains(r.stderr, "error in the middle of the stream: the service ended the stream before all the input was sent") ||
		strings.Contains(r.stderr, "received nothing") {
		t.Errorf("stderr %q", r.stderr)
	}
}

// TestInputTooLargeForModel sends a file larger than the model's read
// limit: biditest's echo model ends the stream with the ModelStreamError
// 1009 a WebSocket container causes, and bidicat reports it.
func TestInputTooLargeForModel(t *testing.T) {
	srv := newServer(biditest.Echo())
	srv.MaxRecvMessageSize = 64 << 10
	srv.Start()
	t.Cleanup(srv.Close)
	flags := serverFlags(t, srv)
	r := runCat(t, cleanEnv(t), strings.Repeat("x", 200<<10), append(flags, "-endpoint", "e", "-file", "-")...)
	r.wantCode(t, exitStream)
	for _, want := range []string{"error in the middle of the stream", "ModelStreamError", "1009"} {
		if !strings.Contains(r.stderr, want) {
			t.Errorf("stderr lacks %q:\n%s", want, r.stderr)
		}
	}
	if strings.Contains(r.stderr, "received nothing") {
		t.Errorf("stderr %q", r.stderr)
	}
}

// TestHTTPForTLSPort points -endpoint-url at a TLS port with http://: a
// connection error before the stream, exit 5, saying to use https://.
func TestHTTPForTLSPort(t *testing.T) {
	srv, _ := server(t, biditest.Echo())
	url := "http://" + strings.TrimPrefix(srv.URL, "https://")
	for _, args := range [][]string{{}, {"-json"}} {
		r := runCat(t, cleanEnv(t), "x\n", append([]string{"-endpoint", "e", "-endpoint-url", url}, args...)...)
		r.wantCode(t, exitConnect)
		if len(args) == 0 && (!strings.HasPrefix(r.stderr, "bidicat: could not connect: ") || !strings.Contains(r.stderr, "https://") ||
			strings.Contains(r.stderr, "middle of the stream")) {
			t.Errorf("stderr %q", r.stderr)
		}
		if len(args) > 0 {
			if e := ofType(r.jsonLines(t), "error"); len(e) != 1 || e[0]["class"] != "connection" || e[0]["exit_code"] != 5.0 {
				t.Errorf("json %s", r.stdout)
			}
		}
	}
}

// TestValidationMessages checks that a rejected flag value names the
// offending character and the allowed pattern, and that an ARN or a URL
// given to -endpoint gets a hint.
func TestValidationMessages(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want []string
	}{
		{[]string{"-endpoint", "my_endpoint"}, []string{`-endpoint "my_endpoint": the character '_' at offset 2`, "^[a-zA-Z0-9](-*[a-zA-Z0-9])*$"}},
		{[]string{"-endpoint", "arn:aws:sagemaker:us-west-2:123456789012:endpoint/my-endpoint"}, []string{"is an ARN: pass the endpoint name, e.g. -endpoint my-endpoint"}},
		{[]string{"-endpoint", "https://runtime.sagemaker.us-west-2.amazonaws.com:8443"}, []string{"is a URL", "-endpoint-url"}},
		{[]string{"-endpoint", "e", "-target-variant", "Blue Green"}, []string{"a space at offset 4", "production variant name"}},
		{[]string{"-endpoint", "e", "-path", "v1//chat"}, []string{"an empty segment ('/') at offset 3"}},
		{[]string{"-endpoint", "e", "-query", "token=s3cr3t!"}, []string{"the character '!' in a value", "percent-encode"}},
		{[]string{"-endpoint", "e", "-endpoint-url", "localhost:8443"}, []string{"want a URL such as https://localhost:8443"}},
	} {
		r := runCat(t, cleanEnv(t), "", tc.args...)
		if r.code != exitUsage {
			t.Errorf("%q: exit %d, want %d", tc.args, r.code, exitUsage)
		}
		for _, want := range tc.want {
			if !strings.Contains(r.stderr, want) {
				t.Errorf("%q: stderr lacks %q:\n%s", tc.args, want, r.stderr)
			}
		}
		if strings.Contains(r.stderr, "s3cr3t") {
			t.Errorf("%q: the query's value is repeated: %s", tc.args, r.stderr)
		}
	}
}

// TestUnknownFlag prints the error and a pointer to -h, not the whole
// usage.
func TestUnknownFlag(t *testing.T) {
	r := runCat(t, cleanEnv(t), "", "-no-such-flag")
	r.wantCode(t, exitUsage)
	if want := "bidicat: usage: flag provided but not defined: -no-such-flag\nRun 'bidicat -h' for the flags.\n"; r.stderr != want {
		t.Errorf("stderr %q, want %q", r.stderr, want)
	}
	r = runCat(t, cleanEnv(t), "", "-chunk", "many")
	r.wantCode(t, exitUsage)
	if !strings.HasPrefix(r.stderr, `bidicat: usage: invalid value "many" for flag -chunk`) || strings.Contains(r.stderr, "Examples:") {
		t.Errorf("stderr %q", r.stderr)
	}
}

func TestVersion(t *testing.T) {
	r := runCat(t, cleanEnv(t), "", "-version")
	r.wantCode(t, exitOK)
	if !strings.HasPrefix(r.stdout, "bidicat ") || !strings.Contains(r.stdout, " go1.") || !strings.HasSuffix(r.stdout, "\n") || r.stderr != "" {
		t.Errorf("stdout %q, stderr %q", r.stdout, r.stderr)
	}
}

// TestPipedTextEndsWithNewline checks that raw UTF8 output piped to a
// file ends with a line end, unless -nl=false asks for the bytes as
// they are; binary output is never changed (see TestBinaryRate).
func TestPipedTextEndsWithNewline(t *testing.T) {
	r := runCat(t, cleanEnv(t), "hello\nworld", "-local")
	r.wantCode(t, exitOK)
	if r.stdout != "helloworld\n" {
		t.Errorf("stdout %q, want the messages as sent and a final line end", r.stdout)
	}
	r = runCat(t, cleanEnv(t), "hello", "-local", "-nl=false")
	r.wantCode(t, exitOK)
	if r.stdout != "hello" {
		t.Errorf("-nl=false: stdout %q", r.stdout)
	}
}
