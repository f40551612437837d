package cli

import (
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"flag"
	"fmt"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/sagemaker-bidi/sagemaker-bidi/bidi"
	"github.com/sagemaker-bidi/sagemaker-bidi/bidi/biditest"
)

// TestParse checks that a bad command line prints the error and a
// pointer to -h, not the whole usage, and that -h prints the usage.
func TestParse(t *testing.T) {
	var out bytes.Buffer
	fs := NewFlagSet("prog", "usage: prog [flags]\n\n", &out)
	var f Flags
	f.Register(fs, "")
	err := Parse(fs, []string{"-nope"})
	if err == nil || out.String() != "prog: usage: flag provided but not defined: -nope\nRun 'prog -h' for the flags.\n" {
		t.Errorf("unknown flag: %v, output %q", err, out.String())
	}
	out.Reset()
	if err := Parse(fs, []string{"-h"}); !errors.Is(err, flag.ErrHelp) || !strings.HasPrefix(out.String(), "usage: prog [flags]") ||
		!strings.Contains(out.String(), "-endpoint-url") {
		t.Errorf("-h: %v, output %q", err, out.String())
	}
}

// TestCheck checks the messages of rejected connection flags, and that
// every value the check accepts the SDK accepts too (it opens a session
// with it, its region included), and the other way round for the values
// it rejects.
func TestCheck(t *testing.T) {
	for _, tc := range []struct {
		f    Flags
		want string // "" for valid
	}{
		{Flags{Endpoint: "my-endpoint", TargetVariant: "Blue-2", Path: "v1/chat.completions", Query: "mode=echo&lang=en%20US"}, ""},
		{Flags{Endpoint: "my_endpoint"}, `-endpoint "my_endpoint": the character '_' at offset 2 is not allowed there`},
		{Flags{Endpoint: "-e"}, "the character '-' at offset 0"},
		{Flags{Endpoint: "e-"}, "the character '-' at offset 1"},
		{Flags{Endpoint: "café"}, "the character 'é' (U+00E9) at offset 3"},
		{Flags{Endpoint: strings.Repeat("e", 64)}, "is 64 bytes long"},
		{Flags{Endpoint: "arn:aws:sagemaker:us-west-2:123456789012:endpoint/prod-llm"}, "is an ARN: pass the endpoint name, e.g. -endpoint prod-llm"},
		{Flags{Endpoint: "https://example.com"}, "is a URL"},
		{Flags{Endpoint: "e", TargetVariant: "A_B"}, `-target-variant "A_B": the character '_'`},
		{Flags{Endpoint: "e", Path: "/v1"}, "an empty segment ('/') at offset 0"},
		{Flags{Endpoint: "e", Path: "v1/"}, "an empty segment ('/') at offset 2"},
		{Flags{Endpoint: "e", Path: "v1?x"}, "the character '?' at offset 2"},
		{Flags{Endpoint: "e", Query: "a=b&c"}, "a pair without '=' at offset 5"},
		{Flags{Endpoint: "e", Query: "_a=b"}, "the character '_' in a key at offset 0"},
		{Flags{Endpoint: "e", Query: "a="}, "an empty value at offset 2"},
		{Flags{Endpoint: "e", Query: "a=%zz"}, "a '%' not followed by two hex digits at offset 2"},
		{Flags{Endpoint: "e", Query: "t=abc def"}, "a space in a value"},
		{Flags{Endpoint: "e", EndpointURL: "localhost:8443"}, "want a URL such as https://localhost:8443"},
		{Flags{Endpoint: "e", Region: "eu-west-1"}, ""},
		{Flags{Endpoint: "e", Region: "us west"}, `-region "us west": a space at offset 2 is not allowed there: a region has lower-case letters, digits and hyphens, starts and ends with a letter or digit, e.g. -region us-west-2`},
		{Flags{Endpoint: "e", Region: "US-WEST-2"}, "the character 'U' at offset 0"},
		{Flags{Endpoint: "e", Region: "us-west-2-"}, "the character '-' at offset 9"},
		{Flags{Endpoint: "e", Region: strings.Repeat("a", 64)}, "is 64 bytes long"},
		{Flags{Endpoint: "e", Region: "us west", EndpointURL: "https://localhost:8443"}, `-region "us west": a space at offset 2`},
	} {
		err := tc.f.Check()
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%+v: %v", tc.f, err)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("%+v: %v, want %q", tc.f, err, tc.want)
		case strings.Contains(tc.f.Query, "def") && err != nil && strings.Contains(err.Error(), "def"):
			t.Errorf("the query value is repeated: %v", err)
		}
		if tc.f.EndpointURL != "" {
			continue
		}
		// The SDK agrees: it rejects the same values before any I/O.
		sdkErr := openWith(t, tc.f)
		var ive *bidi.InputValidationError
		if rejected := errors.As(sdkErr, &ive) && ive.Field != "" || errors.Is(sdkErr, bidi.ErrInvalidConfig); rejected != (tc.want != "") && !strings.Contains(tc.want, "ARN") && !strings.Contains(tc.want, "URL") {
			t.Errorf("%+v: the SDK says %v, the check says %v", tc.f, sdkErr, err)
		}
	}
}

// openWith opens a session with the values of f on a test server and
// returns Open's error.
func openWith(t *testing.T, f Flags) error {
	t.Helper()
	srv := biditest.NewServer(biditest.Echo())
	defer srv.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	sess, err := srv.Client(func(o *bidi.Options) {
		if f.Region != "" {
			o.Region = f.Region
		}
	}).Open(ctx, f.OpenInput(""))
	if err == nil {
		sess.Close()
	}
	return err
}

// TestHintNotHTTP2 checks the hint of an http:// -endpoint-url against a
// TLS port, unless the error says it already.
func TestHintNotHTTP2(t *testing.T) {
	f := &Flags{EndpointURL: "http://localhost:8443"}
	err := errors.Join(bidi.ErrNotHTTP2, errors.New("closed the connection before its SETTINGS"))
	if h := f.Hint(err); !strings.Contains(h, "use https://") {
		t.Errorf("hint %q", h)
	}
	if h := f.Hint(errors.Join(bidi.ErrNotHTTP2, errors.New("if it serves TLS, use an https:// URL"))); h != "" {
		t.Errorf("hint %q repeats the error", h)
	}
	if h := (&Flags{EndpointURL: "https://localhost:8443"}).Hint(err); h != "" {
		t.Errorf("hint %q for https://", h)
	}
	if h := (&Flags{EndpointURL: "https://localhost:1"}).Hint(fmt.Errorf("dial: %w", syscall.ECONNREFUSED)); !strings.Contains(h, "is the gateway running") {
		t.Errorf("hint %q for a refused connection", h)
	}
	if h := f.Hint(fmt.Errorf("%w: no region configured", bidi.ErrInvalidConfig)); h != "set -region or AWS_REGION" {
		t.Errorf("hint %q for a missing region", h)
	}
}

// TestHintTLSToH2C checks the hint of an https:// -endpoint-url whose
// server does not speak TLS (the gateway with -h2c), found by type and,
// for a wrapper that flattened the error, by its text.
func TestHintTLSToH2C(t *testing.T) {
	f := &Flags{EndpointURL: "https://localhost:8443"}
	for _, err := range []error{
		fmt.Errorf("connection failed: %w", tls.RecordHeaderError{Msg: "first record does not look like a TLS handshake"}),
		errors.New("connection failed: tls: first record does not look like a TLS handshake"),
	} {
		if h := f.Hint(err); !strings.Contains(h, "use http://") || !strings.Contains(h, "-h2c") {
			t.Errorf("%v: hint %q", err, h)
		}
	}
	if h := (&Flags{EndpointURL: "http://localhost:8443"}).Hint(tls.RecordHeaderError{Msg: "x"}); h != "" {
		t.Errorf("hint %q for http://", h)
	}
}
