package main

import (
	"net"
	"slices"
	"strings"
	"testing"

	"github.com/sagemaker-bidi/sagemaker-bidi/bidi/biditest"
)

// The rough edges of the first hour, round two (issue 22), each run
// through the binary.

// TestHelpOnStdout checks that -h prints the help on stdout, so that
// bidicat -h | less shows it, and nothing on stderr.
func TestHelpOnStdout(t *testing.T) {
	for _, flag := range []string{"-h", "-help", "--help"} {
		r := runCat(t, cleanEnv(t), "", flag)
		r.wantCode(t, exitOK)
		if !strings.HasPrefix(r.stdout, "Usage: bidicat [flags]") || !strings.Contains(r.stdout, "-endpoint-url") ||
			!strings.Contains(r.stdout, "Exit codes:") || strings.Count(r.stdout, "Usage: bidicat") != 1 || r.stderr != "" {
			t.Errorf("%s: stdout %q, stderr %q", flag, r.stdout, r.stderr)
		}
	}
}

// closedURL returns an https URL on loopback where nothing listens.
func closedURL(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	return "https://" + addr
}

// TestJSONEndsWithSummary checks that -json output always ends with one
// summary line carrying the exit code, after an error line: for usage
// errors (from the flag parser, from the checks of the values, with
// -json before or after the bad flag) and for a connection refused
// before any session.
func TestJSONEndsWithSummary(t *testing.T) {
	for _, tc := range []struct {
		args  []string
		code  int
		class string
		err   string
	}{
		{[]string{"-json", "-no-such-flag"}, exitUsage, "usage", "flag provided but not defined: -no-such-flag"},
		{[]string{"-no-such-flag", "--json"}, exitUsage, "usage", "flag provided but not defined: -no-such-flag"},
		{[]string{"-json=true", "-endpoint", "my_endpoint"}, exitUsage, "usage", `-endpoint "my_endpoint": the character '_'`},
		{[]string{"-json", "-local", "-o", "speech"}, exitUsage, "usage", `-o "speech": want raw, events or answer`},
		{[]string{"-json", "-endpoint", "e", "-endpoint-url", closedURL(t)}, exitConnect, "connection", "connection refused"},
	} {
		r := runCat(t, cleanEnv(t), "x\n", tc.args...)
		r.wantCode(t, tc.code)
		objs := r.jsonLines(t)
		if len(objs) != 2 {
			t.Errorf("%q: want an error line and a summary line, got:\n%s", tc.args, r.stdout)
			continue
		}
		e, s := objs[0], objs[1]
		if e["type"] != "error" || e["class"] != tc.class || e["exit_code"] != float64(tc.code) || !strings.Contains(e["error"].(string), tc.err) {
			t.Errorf("%q: error line %v, want class %s and %q", tc.args, e, tc.class, tc.err)
		}
		if s["type"] != "summary" || s["exit_code"] != float64(tc.code) || s["sent_parts"] != 0.0 || s["duration_ms"] != 0.0 {
			t.Errorf("%q: summary %v", tc.args, s)
		}
	}
	// Without -json, nothing on stdout.
	if r := runCat(t, cleanEnv(t), "", "-json=false", "-no-such-flag"); r.code != exitUsage || r.stdout != "" {
		t.Errorf("-json=false: exit %d, stdout %q", r.code, r.stdout)
	}
}

// TestHTTPSToH2C points an https:// -endpoint-url at a server that speaks
// HTTP/2 without TLS (as the gateway does with -h2c): a connection error
// that says to use http://.
func TestHTTPSToH2C(t *testing.T) {
	srv := newServer(biditest.Echo())
	srv.H2C = true
	srv.Start()
	t.Cleanup(srv.Close)
	url := "https://" + strings.TrimPrefix(srv.URL, "http://")
	r := runCat(t, cleanEnv(t), "x\n", "-endpoint", "e", "-endpoint-url", url)
	r.wantCode(t, exitConnect)
	if !strings.HasPrefix(r.stderr, "bidicat: could not connect: ") || !strings.Contains(r.stderr, "does not speak TLS: use http://") {
		t.Errorf("stderr %q", r.stderr)
	}
}

// TestRegionRule checks that a region that is not a lower-case DNS label
// is refused before any I/O, with a custom endpoint too, naming the value
// and giving an example: from -region (bidicat's check) and from
// AWS_REGION (the SDK's).
func TestRegionRule(t *testing.T) {
	srv, flags := server(t, biditest.Echo())
	r := runCat(t, cleanEnv(t), "x\n", append(flags, "-endpoint", "e", "-region", "us west")...)
	r.wantCode(t, exitUsage)
	if !strings.Contains(r.stderr, `-region "us west": a space at offset 2 is not allowed there`) || !strings.Contains(r.stderr, "e.g. -region us-west-2") {
		t.Errorf("-region: stderr %q", r.stderr)
	}
	env := slices.DeleteFunc(cleanEnv(t), func(kv string) bool { return strings.HasPrefix(kv, "AWS_REGION=") })
	r = runCat(t, append(env, "AWS_REGION=us west"), "x\n", append(flags, "-endpoint", "e", "-json")...)
	r.wantCode(t, exitUsage)
	if !strings.Contains(r.stderr, `invalid region "us west"`) || !strings.Contains(r.stderr, "e.g. us-west-2") {
		t.Errorf("AWS_REGION: stderr %q", r.stderr)
	}
	if objs := r.jsonLines(t); len(objs) != 2 || objs[0]["class"] != "usage" || objs[1]["type"] != "summary" {
		t.Errorf("AWS_REGION -json: %s", r.stdout)
	}
	if n := len(srv.Streams()); n != 0 {
		t.Errorf("the server saw %d streams", n)
	}
}
