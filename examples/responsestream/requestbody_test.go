package main

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"testing"

	smithyhttp "github.com/aws/smithy-go/transport/http"
)

type doFunc func(*http.Request) (*http.Response, error)

func (f doFunc) Do(r *http.Request) (*http.Response, error) { return f(r) }

// TestReadOnlyRequestBodies replays, in order, the steps of the race
// that withReadOnlyRequestBodies works around: the SDK closes the body
// it built when Do returns, and net/http then drains the body it was
// given with io.Copy, which must end without an error.
func TestReadOnlyRequestBodies(t *testing.T) {
	const body = `{"inputs":"hi"}`
	req, err := smithyhttp.NewStackRequest().(*smithyhttp.Request).SetStream(bytes.NewReader([]byte(body)))
	if err != nil {
		t.Fatal(err)
	}
	req.Method = http.MethodPost
	built := req.Build(context.Background())

	var sent *http.Request
	client := readOnlyBodyClient{doFunc(func(r *http.Request) (*http.Response, error) {
		sent = r
		return &http.Response{StatusCode: http.StatusOK, Body: http.NoBody}, nil
	})}
	if _, err := client.Do(built); err != nil {
		t.Fatal(err)
	}
	if _, ok := sent.Body.(io.WriterTo); ok {
		t.Fatalf("the body sent is a %T, an io.WriterTo", sent.Body)
	}
	if sent.ContentLength != int64(len(body)) {
		t.Errorf("ContentLength = %d, want %d", sent.ContentLength, len(body))
	}
	// net/http copies ContentLength bytes (transfer.go, writeBody)...
	got, err := io.ReadAll(io.LimitReader(sent.Body, sent.ContentLength))
	if err != nil || string(got) != body {
		t.Fatalf("body = %q, %v; want %q", got, err, body)
	}
	// ...the SDK closes its body when Do returns (ClientHandler.Handle)...
	if err := built.Body.Close(); err != nil {
		t.Fatal(err)
	}
	// ...and net/http drains the rest; an error here closes the connection.
	if n, err := io.Copy(io.Discard, sent.Body); n != 0 || err != nil {
		t.Errorf("draining the closed body: %d bytes, %v; want 0, nil", n, err)
	}
	if err := sent.Body.Close(); err != nil {
		t.Errorf("Close: %v", err)
	}
}
