package main

import (
	"bytes"
	"encoding/base64"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/sagemaker-bidi/sagemaker-bidi/bidi"
	"github.com/sagemaker-bidi/sagemaker-bidi/bidi/biditest"
)

func TestLocalLines(t *testing.T) {
	r := runCat(t, cleanEnv(t), "hello\r\n\nworld\n", "-local", "-nl")
	r.wantCode(t, exitOK)
	if r.stdout != "hello\nworld\n" {
		t.Errorf("stdout %q, want the two lines echoed (the empty one skipped)", r.stdout)
	}
	if r.stderr != "" {
		t.Errorf("stderr is not a terminal, yet got %q", r.stderr)
	}
}

func TestLocalAnswer(t *testing.T) {
	in := chatRequest("hi") + "\n" + chatRequest("again") + "\n"
	r := runCat(t, cleanEnv(t), in, "-local", "-o", "answer")
	r.wantCode(t, exitOK)
	if r.stdout != "You said: hi\nYou said: again\n" {
		t.Errorf("stdout %q, want both rebuilt answers", r.stdout)
	}
}

func TestLocalEvents(t *testing.T) {
	r := runCat(t, cleanEnv(t), chatRequest("hi")+"\n", "-local", "-o", "events")
	r.wantCode(t, exitOK)
	lines := strings.Split(strings.TrimSuffix(r.stdout, "\n"), "\n")
	if len(lines) < 5 || lines[len(lines)-1] != "[DONE]" {
		t.Fatalf("want chunk events ending with [DONE], got:\n%s", r.stdout)
	}
	for _, l := range lines[:len(lines)-1] {
		if !strings.HasPrefix(l, `{"id":"chatcmpl-demo-1","object":"chat.completion.chunk"`) {
			t.Errorf("not one compact chunk per line: %q", l)
		}
	}
}

func TestJSONAnswer(t *testing.T) {
	r := runCat(t, cleanEnv(t), chatRequest("hi")+"\n", "-local", "-o", "answer", "-json")
	r.wantCode(t, exitOK)
	objs := r.jsonLines(t)
	if len(objs) != 3 || objs[0]["type"] != "response" || objs[1]["type"] != "answer" || objs[2]["type"] != "summary" {
		t.Fatalf("want response, answer, summary; got:\n%s", r.stdout)
	}
	if v := objs[0]["invoked_production_variant"]; v != "AllTraffic" {
		t.Errorf("variant %v", v)
	}
	a := objs[1]
	if a["kind"] != "chat" || a["text"] != "You said: hi" || a["complete"] != true || !strings.Contains(a["reasoning"].(string), "hi") {
		t.Errorf("answer %v", a)
	}
	s := objs[2]
	if s["exit_code"] != 0.0 || s["sent_parts"] != 1.0 || s["received_parts"].(float64) < 2 {
		t.Errorf("summary %v", s)
	}
}

func TestJSONMessagesAndParts(t *testing.T) {
	// Binary lines of 3000 bytes come back from DemoModel in 1024-byte
	// fragments: three parts, one message.
	line := strings.Repeat("x", 3000)
	r := runCat(t, cleanEnv(t), line+"\n", "-local", "-type", "binary", "-json")
	r.wantCode(t, exitOK)
	msgs := ofType(r.jsonLines(t), "message")
	if len(msgs) != 1 || msgs[0]["data_type"] != "BINARY" || msgs[0]["text"] != nil {
		t.Fatalf("messages %v", msgs)
	}
	if b, _ := base64.StdEncoding.DecodeString(msgs[0]["bytes"].(string)); string(b) != line {
		t.Errorf("message bytes differ from what was sent")
	}

	r = runCat(t, cleanEnv(t), line+"\n", "-local", "-type", "binary", "-json", "-parts")
	r.wantCode(t, exitOK)
	parts := ofType(r.jsonLines(t), "part")
	if len(parts) != 3 || parts[0]["complete"] != false || parts[2]["complete"] != true {
		t.Fatalf("parts %v", parts)
	}
}

func TestEndpointURLAndCACert(t *testing.T) {
	srv, flags := server(t, biditest.DemoModel(nil))
	args := append(flags, "-endpoint", "my-endpoint", "-target-variant", "Blue", "-path", "v1/chat",
		"-query", "mode=echo", "-o", "answer", "-part-size", "16")
	r := runCat(t, cleanEnv(t), chatRequest("over TLS")+"\n", args...)
	r.wantCode(t, exitOK)
	if r.stdout != "You said: over TLS\n" || r.stderr != "" {
		t.Errorf("stdout %q, stderr %q (no SDK log lines without -debug)", r.stdout, r.stderr)
	}
	streams := srv.Streams()
	if len(streams) != 1 {
		t.Fatalf("%d streams", len(streams))
	}
	st := streams[0]
	if st.EndpointName != "my-endpoint" || st.TargetVariant != "Blue" || st.ModelInvocationPath != "v1/chat" || st.ModelQueryString != "mode=echo" {
		t.Errorf("request inputs %q %q %q %q", st.EndpointName, st.TargetVariant, st.ModelInvocationPath, st.ModelQueryString)
	}
	got := st.Received()
	if want := (len(chatRequest("over TLS")) + 15) / 16; len(got) != want {
		t.Errorf("server received %d parts, want %d of at most 16 bytes", len(got), want)
	}
	if v := srv.Violations(); len(v) != 0 {
		t.Errorf("violations: %v", v)
	}

	// Without -ca-cert, the server's certificate is not trusted: as when
	// the gateway restarted with a new one.
	r = runCat(t, cleanEnv(t), "x\n", "-endpoint", "my-endpoint", "-endpoint-url", srv.URL)
	r.wantCode(t, exitConnect)
	if !strings.Contains(r.stderr, "certificate signed by unknown authority") || !strings.Contains(r.stderr, "re-trust the certificate written with -cert-out") {
		t.Errorf("stderr %q does not mention the certificate, or how to trust it", r.stderr)
	}
}

func TestFiles(t *testing.T) {
	t.Parallel() // mostly waiting: the 1 s -linger of piped input
	dir := t.TempDir()
	a, b := filepath.Join(dir, "a.txt"), filepath.Join(dir, "b.txt")
	os.WriteFile(a, []byte(strings.Repeat("a", 100)), 0o600)
	os.WriteFile(b, nil, 0o600)
	srv, flags := server(t, biditest.Echo())
	r := runCat(t, cleanEnv(t), "", append(flags, "-endpoint", "e", "-file", a, "-file", b, "-part-size", "30", "-json", "-o", "raw")...)
	r.wantCode(t, exitOK)
	msgs := ofType(r.jsonLines(t), "message")
	if len(msgs) != 2 || msgs[0]["text"] != strings.Repeat("a", 100) || msgs[1]["text"] != "" {
		t.Errorf("messages %v", msgs)
	}
	if n := len(srv.Streams()[0].Received()); n != 5 {
		t.Errorf("server received %d parts, want 4 for a.txt and 1 for the empty b.txt", n)
	}

	r = runCat(t, cleanEnv(t), "", append(flags, "-endpoint", "e", "-file", filepath.Join(dir, "missing"))...)
	r.wantCode(t, exitFailure)
}

func TestUsageErrors(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{nil, "no endpoint"},
		{[]string{"-local", "-o", "xml"}, "-o"},
		{[]string{"-local", "-type", "utf16"}, "-type"},
		{[]string{"-local", "-file", "a", "-binary", "b"}, "cannot be combined"},
		{[]string{"-local", "-rate", "100"}, "-binary only"},
		{[]string{"-local", "-endpoint-url", "https://localhost:8443"}, "-local"},
		{[]string{"-local", "extra"}, "unexpected argument"},
		{[]string{"-local", "-endpoint", "not a name"}, `-endpoint "not a name": a space at offset 3`},
		{[]string{"-endpoint", "e", "-ca-cert", "/nonexistent.pem"}, "-ca-cert"},
		{[]string{"-no-such-flag"}, "flag provided but not defined"},
		{[]string{"-local", "-target-variant", "-Blue"}, "-target-variant"},
	} {
		r := runCat(t, cleanEnv(t), "", tc.args...)
		if r.code != exitUsage || !strings.Contains(r.stderr, tc.want) {
			t.Errorf("%q: exit %d, stderr %q; want %d and %q", tc.args, r.code, r.stderr, exitUsage, tc.want)
		}
	}
}

func TestHelp(t *testing.T) {
	r := runCat(t, cleanEnv(t), "", "-h")
	r.wantCode(t, exitOK)
	for _, want := range []string{"Examples:", "Exit codes:", "bidicat -local", "-endpoint-url https://localhost:8443 -ca-cert /tmp/gateway.pem -query mode=echo -linger 3s",
		"loses its last output", "130"} {
		if !strings.Contains(r.stdout, want) { // on stdout, for bidicat -h | less
			t.Errorf("-h lacks %q", want)
		}
	}
}

// modelError answers every stream with a 424 ModelError.
var modelError = biditest.HandlerFunc(func(st *biditest.Stream) {
	st.Fail(424, "ModelError", map[string]any{
		"Message":            "Received server error (500) from primary",
		"OriginalStatusCode": 500,
		"OriginalMessage":    "container text that may echo the request",
		"LogStreamArn":       "arn:aws:logs:us-west-2:123456789012:log-group:/aws/sagemaker/Endpoints/e",
		"ErrorCode":          "ModelError",
	})
})

func TestHTTPError(t *testing.T) {
	srv, flags := server(t, modelError)
	r := runCat(t, cleanEnv(t), "hello\n", append(flags, "-endpoint", "e")...)
	r.wantCode(t, exitHTTP)
	reqID := srv.Streams()[0].RequestID
	for _, want := range []string{"HTTP error before the stream", "424", "ModelError", "Received server error (500) from primary",
		"original status code: 500", "arn:aws:logs:us-west-2:123456789012", "request id:           " + reqID} {
		if !strings.Contains(r.stderr, want) {
			t.Errorf("stderr lacks %q:\n%s", want, r.stderr)
		}
	}
	if strings.Contains(r.stderr, "container text") || r.stdout != "" {
		t.Errorf("OriginalMessage or output printed:\nstdout: %s\nstderr: %s", r.stdout, r.stderr)
	}

	r = runCat(t, cleanEnv(t), "hello\n", append(flags, "-endpoint", "e", "-json")...)
	r.wantCode(t, exitHTTP)
	errs := ofType(r.jsonLines(t), "error")
	if len(errs) != 1 {
		t.Fatalf("errors %v", errs)
	}
	e := errs[0]
	if e["exit_code"] != 3.0 || e["class"] != "http" || e["status"] != 424.0 || e["code"] != "ModelError" ||
		e["error_code"] != "ModelError" || e["original_status_code"] != 500.0 || e["request_id"] == "" ||
		!strings.HasPrefix(e["log_stream_arn"].(string), "arn:aws:logs:") {
		t.Errorf("error object %v", e)
	}
}

func TestMidStreamError(t *testing.T) {
	_, flags := server(t, biditest.HandlerFunc(func(st *biditest.Stream) {
		m, err := st.Recv()
		if err != nil {
			return
		}
		st.Send(bidi.Text("partial answer to " + string(m.Data)))
		st.SendException("ModelStreamError", []byte(`{"Message":"the model took too long","ErrorCode":"ModelInvocationTimeExceeded"}`))
	}))
	r := runCat(t, cleanEnv(t), "hello\n", append(flags, "-endpoint", "e", "-nl")...)
	r.wantCode(t, exitStream)
	if r.stdout != "partial answer to hello\n" {
		t.Errorf("stdout %q", r.stdout)
	}
	for _, want := range []string{"error in the middle of the stream", "ModelStreamError", "ModelInvocationTimeExceeded", "the model took too long"} {
		if !strings.Contains(r.stderr, want) {
			t.Errorf("stderr lacks %q:\n%s", want, r.stderr)
		}
	}

	r = runCat(t, cleanEnv(t), "hello\n", append(flags, "-endpoint", "e", "-json")...)
	r.wantCode(t, exitStream)
	objs := r.jsonLines(t)
	e := ofType(objs, "error")
	if len(ofType(objs, "message")) != 1 || len(e) != 1 || e[0]["class"] != "stream" || e[0]["code"] != "ModelStreamError" ||
		e[0]["error_code"] != "ModelInvocationTimeExceeded" || e[0]["message"] != "the model took too long" {
		t.Errorf("json output:\n%s", r.stdout)
	}
}

func TestBinaryRate(t *testing.T) {
	t.Parallel() // mostly waiting: paced sending, then the 1 s -linger of piped input
	pcm := make([]byte, 3200)
	for i := range pcm {
		pcm[i] = byte(i)
	}
	file := filepath.Join(t.TempDir(), "audio.pcm")
	os.WriteFile(file, pcm, 0o600)
	srv, flags := server(t, biditest.Echo())
	// 4 chunks of 800 bytes at 8000 B/s: sent at 0, 100, 200 and 300 ms.
	r := runCat(t, cleanEnv(t), "", append(flags, "-endpoint", "e", "-binary", file, "-chunk", "800", "-rate", "8000")...)
	r.wantCode(t, exitOK)
	if !bytes.Equal([]byte(r.stdout), pcm) {
		t.Errorf("echoed %d bytes, differing from the %d sent", len(r.stdout), len(pcm))
	}
	if r.elapsed < 280*time.Millisecond || r.elapsed > 10*time.Second {
		t.Errorf("took %v; pacing wants about 300 ms", r.elapsed)
	}
	parts := srv.Streams()[0].Received()
	if len(parts) != 4 {
		t.Fatalf("server received %d parts, want 4", len(parts))
	}
	for i, p := range parts {
		if p.Type != bidi.DataTypeBinary || !p.Complete || len(p.Data) != 800 {
			t.Errorf("part %d: %v complete=%v %d bytes", i, p.Type, p.Complete, len(p.Data))
		}
	}
}

func TestTimeout(t *testing.T) {
	t.Parallel() // mostly waiting: the 300 ms -timeout
	_, flags := server(t, biditest.HandlerFunc(func(st *biditest.Stream) {
		st.Accept()
		<-st.Context().Done() // a model that never answers
	}))
	r := runCat(t, cleanEnv(t), "hello\n", append(flags, "-endpoint", "e", "-timeout", "300ms")...)
	r.wantCode(t, exitFailure)
	if !strings.Contains(r.stderr, "timed out after 300ms") || r.elapsed > 10*time.Second {
		t.Errorf("stderr %q after %v", r.stderr, r.elapsed)
	}
}

func TestInterrupt(t *testing.T) {
	accepted := make(chan struct{}, 1)
	_, flags := server(t, biditest.HandlerFunc(func(st *biditest.Stream) {
		st.Accept()
		accepted <- struct{}{}
		<-st.Context().Done()
	}))
	cmd, stdout, stderr := command(t, cleanEnv(t), "hello\n", append(flags, "-endpoint", "e")...)
	start := time.Now()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	select {
	case <-accepted:
	case <-time.After(runTimeout):
		t.Fatal("the session never reached the server")
	}
	cmd.Process.Signal(os.Interrupt)
	r := finished(t, cmd, cmd.Wait(), start, stdout, stderr)
	r.wantCode(t, exitInterrupted)
	if !strings.Contains(r.stderr, "interrupted") {
		t.Errorf("stderr %q", r.stderr)
	}
}

// silent reads every message and answers none; the stream ends cleanly
// when bidicat ends its side.
var silent = biditest.HandlerFunc(func(st *biditest.Stream) {
	st.Accept()
	for {
		if _, err := st.Recv(); err != nil {
			return
		}
	}
})

// TestReceivedNothing warns when the input was sent but nothing came
// back, which is what a too short -linger looks like; -q silences it.
func TestReceivedNothing(t *testing.T) {
	t.Parallel() // mostly waiting: three 100 ms -linger waits
	_, flags := server(t, silent)
	args := append(flags, "-endpoint", "e", "-linger", "100ms")
	r := runCat(t, cleanEnv(t), "hello\n", args...)
	r.wantCode(t, exitOK)
	if want := "bidicat: sent 1 part 5 B but received nothing; the model may need time after the input ends: try -linger 3s\n"; r.stderr != want {
		t.Errorf("stderr %q, want %q", r.stderr, want)
	}
	r = runCat(t, cleanEnv(t), "hello\n", append(args, "-q")...)
	r.wantCode(t, exitOK)
	if r.stderr != "" {
		t.Errorf("-q, yet stderr %q", r.stderr)
	}
	r = runCat(t, cleanEnv(t), "", args...)
	r.wantCode(t, exitOK)
	if r.stderr != "" {
		t.Errorf("nothing sent, yet stderr %q", r.stderr)
	}
}

// TestUndecodableOutput checks -o events and -o answer against a model
// that answers with text that is neither SSE nor JSON Lines: they print
// nothing, so they say so, and exit 1 as -h promises.
func TestUndecodableOutput(t *testing.T) {
	for _, mode := range []string{"events", "answer"} {
		r := runCat(t, cleanEnv(t), "hello\n", "-local", "-o", mode)
		r.wantCode(t, exitFailure)
		if want := "received 5 bytes that framed no SSE or JSON Lines event; try -o raw"; !strings.Contains(r.stderr, want) || r.stdout != "" {
			t.Errorf("-o %s: stdout %q, stderr %q; want %q", mode, r.stdout, r.stderr, want)
		}
		r = runCat(t, cleanEnv(t), "hello\n", "-local", "-o", mode, "-json")
		r.wantCode(t, exitFailure)
		objs := r.jsonLines(t)
		if p := ofType(objs, "decode_error"); len(p) != 1 || !strings.Contains(p[0]["error"].(string), "try -o raw") {
			t.Errorf("-o %s -json: %s", mode, r.stdout)
		}
	}
	// Events that rebuild no answer: only a [DONE].
	_, flags := server(t, biditest.HandlerFunc(func(st *biditest.Stream) {
		if _, err := st.Recv(); err == nil {
			st.Send(bidi.Text("data: [DONE]\n\n"))
		}
	}))
	r := runCat(t, cleanEnv(t), "x\n", append(flags, "-endpoint", "e", "-o", "answer", "-linger", "0")...)
	r.wantCode(t, exitFailure)
	if want := "1 event but rebuilt no answer; try -o events"; !strings.Contains(r.stderr, want) {
		t.Errorf("stderr %q, want %q", r.stderr, want)
	}
}

// TestMissingRegionHint checks the hint of the first error a new user
// meets.
func TestMissingRegionHint(t *testing.T) {
	env := slices.DeleteFunc(cleanEnv(t), func(kv string) bool { return strings.HasPrefix(kv, "AWS_REGION=") })
	r := runCat(t, env, "", "-endpoint", "e")
	r.wantCode(t, exitUsage)
	if !strings.Contains(r.stderr, "Missing Region; set -region or AWS_REGION\n") {
		t.Errorf("stderr %q", r.stderr)
	}
}
