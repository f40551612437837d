package main

import (
	"bytes"
	"errors"
	"flag"
	"strings"
	"testing"

	"github.com/sagemaker-bidi/sagemaker-bidi/examples/internal/cli"
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
