package main

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/sagemakerruntime"

	"github.com/sagemaker-bidi/sagemaker-bidi/eventstream"
	"github.com/sagemaker-bidi/sagemaker-bidi/examples/internal/cli"
)

func runExample(t *testing.T, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var out, errOut bytes.Buffer
	if code := run(ctx, args, &out, &errOut); code != 0 {
		t.Fatalf("exit code %d, stderr: %s\nstdout:\n%s", code, errOut.String(), out.String())
	}
	return out.String()
}

func TestChatOverResponseStream(t *testing.T) {
	got := runExample(t, "-target-variant", "Blue", "hello", "there")
	for _, want := range []string{
		"you> hello there\n",
		`[invoked variant "Blue", model content type "text/event-stream"]`,
		"model (thinking)> Okay, the user wrote \"hello there\"",
		"model> You said: hello there\n",
		`[rebuilt chat completion: content "You said: hello there"`,
		`finish_reason "stop"`,
	} {
		if !strings.Contains(got, want) {
			t.Errorf("output lacks %q:\n%s", want, got)
		}
	}
}

func TestLMIOverResponseStream(t *testing.T) {
	got := runExample(t, "-api", "lmi", "tokens please")
	for _, want := range []string{
		`model content type "application/jsonlines"`,
		"model> You said: tokens please\n",
		`[rebuilt LMI response: generated_text "You said: tokens please"]`,
	} {
		if !strings.Contains(got, want) {
			t.Errorf("output lacks %q:\n%s", want, got)
		}
	}
}

// TestModelStreamError checks that a ModelStreamError exception in the
// middle of the event stream reaches the program as the official
// client's typed error.
func TestModelStreamError(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body) // the whole request first, as the service reads it
		w.Header().Set("Content-Type", "application/vnd.amazon.eventstream")
		w.WriteHeader(http.StatusOK)
		enc := eventstream.NewEncoder(w)
		enc.Encode(payloadPart([]byte("data: {\"object\":\"chat.completion.chunk\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"par")))
		enc.Encode(&eventstream.Message{
			Headers: eventstream.Headers{
				{Name: ":message-type", Value: eventstream.StringValue("exception")},
				{Name: ":exception-type", Value: eventstream.StringValue("ModelStreamError")},
				{Name: ":content-type", Value: eventstream.StringValue("application/json")},
			},
			Payload: []byte(`{"Message":"the container closed its stream","ErrorCode":"StreamBroken"}`),
		})
	}))
	defer srv.Close()
	client := sagemakerruntime.NewFromConfig(aws.Config{
		Region:      "us-west-2",
		Credentials: credentials.NewStaticCredentialsProvider("AKIDLOCAL", "local-secret", ""),
	}, withReadOnlyRequestBodies, func(o *sagemakerruntime.Options) { o.BaseEndpoint = aws.String(srv.URL) })

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var out bytes.Buffer
	err := invoke(ctx, client, "e", &options{api: "chat", prompt: "hi", maxTokens: 8}, &out)
	if err == nil {
		t.Fatalf("no error; output:\n%s", out.String())
	}
	if got, want := describe(err), "the model's stream failed: ModelStreamError (error code StreamBroken): the container closed its stream"; got != want {
		t.Errorf("describe = %q, want %q", got, want)
	}
}

func TestFlags(t *testing.T) {
	ctx := context.Background()
	var out, errOut bytes.Buffer
	if code := run(ctx, []string{"-h"}, &out, &errOut); code != 0 {
		t.Errorf("-h exit code %d", code)
	}
	for _, args := range [][]string{{"-api", "grpc"}, {"-bogus"}} {
		if code := run(ctx, args, &out, &errOut); code != 2 {
			t.Errorf("%q: exit code %d, want 2", args, code)
		}
	}
}

// TestInterrupted runs the program with a context cancelled as Ctrl-C
// cancels it: exit code 130 and "responsestream: interrupted".
func TestInterrupted(t *testing.T) {
	ctx, cancel := context.WithCancelCause(context.Background())
	cancel(cli.ErrInterrupted)
	var out, errOut bytes.Buffer
	if code := run(ctx, nil, &out, &errOut); code != cli.ExitInterrupted || errOut.String() != "responsestream: interrupted\n" {
		t.Errorf("exit code %d, stderr %q; want 130, \"responsestream: interrupted\"", code, errOut.String())
	}
}

// TestEveryFlagHasAnExample checks that -h shows every flag in use.
func TestEveryFlagHasAnExample(t *testing.T) {
	fs, _ := newFlagSet(io.Discard)
	if missing := cli.FlagsWithoutExample(fs); len(missing) > 0 {
		t.Errorf("flags without an example in -h: %q", missing)
	}
}
