package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/sagemaker-bidi/sagemaker-bidi/bidi"
	"github.com/sagemaker-bidi/sagemaker-bidi/bidi/biditest"
)

// chunkEvent is one SSE event of a streamed chat answer adding content
// to choice 0, with finish_reason when finish is set.
func chunkEvent(content, finish string) string {
	fr := "null"
	if finish != "" {
		fr = fmt.Sprintf("%q", finish)
	}
	return fmt.Sprintf(`data: {"id":"c1","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"content":%q},"finish_reason":%s}]}`+"\n\n", content, fr)
}

// stepModel answers the first request with "Hel", then waits for step
// before it goes on with then(st).
func stepModel(step <-chan struct{}, then func(st *biditest.Stream)) biditest.Handler {
	return biditest.HandlerFunc(func(st *biditest.Stream) {
		if _, err := st.Recv(); err != nil {
			return
		}
		st.Send(bidi.Text(chunkEvent("Hel", "")))
		select {
		case <-step:
		case <-st.Context().Done():
			return
		}
		then(st)
	})
}

// readUntil reads r until what it read contains want, and returns it;
// it fails the test after runTimeout.
func readUntil(t *testing.T, r io.Reader, want string) string {
	t.Helper()
	got := make(chan string, 1)
	go func() {
		var b bytes.Buffer
		buf := make([]byte, 256)
		for !strings.Contains(b.String(), want) {
			n, err := r.Read(buf)
			b.Write(buf[:n])
			if err != nil {
				break
			}
		}
		got <- b.String()
	}()
	select {
	case s := <-got:
		if !strings.Contains(s, want) {
			t.Fatalf("output %q ended without %q", s, want)
		}
		return s
	case <-time.After(runTimeout):
		t.Fatalf("%q never showed on stdout: output held back until the answer ends?", want)
	}
	return ""
}

// TestAnswerLive checks that -o answer prints each delta as it arrives,
// and that the [DONE] of the last answer ends the wait after the input:
// -linger 1h would otherwise keep the session open for an hour of
// silence (issue 11).
func TestAnswerLive(t *testing.T) {
	step := make(chan struct{})
	_, flags := server(t, stepModel(step, func(st *biditest.Stream) {
		st.Send(bidi.Text(chunkEvent("lo", "") + chunkEvent("", "stop")))
		st.Send(bidi.Text("data: [DONE]\n\n"))
		for {
			if _, err := st.Recv(); err != nil {
				return // bidicat ended its side: the stream ends
			}
		}
	}))
	cmd, _, stderr := command(t, cleanEnv(t), chatRequest("hi")+"\n", append(flags, "-endpoint", "e", "-o", "answer", "-linger", "1h")...)
	cmd.Stdout = nil
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	first := readUntil(t, stdout, "Hel")
	close(step) // the rest of the answer only now
	rest, _ := io.ReadAll(stdout)
	r := finished(t, cmd, cmd.Wait(), start, &bytes.Buffer{}, stderr)
	r.wantCode(t, exitOK)
	if got := first + string(rest); got != "Hello\n" || r.stderr != "" {
		t.Errorf("stdout %q, stderr %q; want \"Hello\\n\"", got, r.stderr)
	}
}

// TestAnswerCutMidStream checks that an answer the stream fails in the
// middle of is printed as far as it got and marked incomplete, with the
// stream's error and exit class (issue 11: it printed nothing).
func TestAnswerCutMidStream(t *testing.T) {
	step := make(chan struct{})
	close(step)
	_, flags := server(t, stepModel(step, func(st *biditest.Stream) {
		st.SendException("ModelStreamError", []byte(`{"Message":"Model container closed the WebSocket connection","ErrorCode":"1011"}`))
	}))
	args := append(flags, "-endpoint", "e", "-o", "answer")
	r := runCat(t, cleanEnv(t), chatRequest("hi")+"\n", args...)
	r.wantCode(t, exitStream)
	if r.stdout != "Hel\n" {
		t.Errorf("stdout %q, want the partial answer \"Hel\\n\"", r.stdout)
	}
	for _, want := range []string{"response incomplete: the stream failed before the answer ended", "error in the middle of the stream", "ModelStreamError"} {
		if !strings.Contains(r.stderr, want) {
			t.Errorf("stderr lacks %q:\n%s", want, r.stderr)
		}
	}

	r = runCat(t, cleanEnv(t), chatRequest("hi")+"\n", append(args, "-json")...)
	r.wantCode(t, exitStream)
	objs := r.jsonLines(t)
	a, e := ofType(objs, "answer"), ofType(objs, "error")
	if len(a) != 1 || a[0]["text"] != "Hel" || a[0]["complete"] != false || len(e) != 1 || e[0]["class"] != "stream" {
		t.Errorf("json output:\n%s", r.stdout)
	}
}

// TestLingerInsideAnswer checks the wait after the input with -o answer
// on a fake clock: a pause ten times -linger inside an answer that is not
// complete does not end it, and the end of the answer does at once.
func TestLingerInsideAnswer(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		st := newStatus(io.Discard, false, false, false)
		s := &sender{o: &options{mode: modeAnswer, linger: time.Second}, st: st}
		st.sent(100)
		st.sentMessage()
		st.received(10)
		st.answerBegin()
		done := make(chan error, 1)
		go func() { done <- s.lingerOn(context.Background(), make(chan struct{})) }()

		time.Sleep(10 * time.Second) // the model pauses mid-answer
		synctest.Wait()
		select {
		case <-done:
			t.Fatal("a pause inside an answer ended the wait")
		default:
		}
		st.answerEnd()
		synctest.Wait()
		select {
		case err := <-done:
			if err != nil {
				t.Fatal(err)
			}
		default:
			t.Fatal("the end of the last answer did not end the wait")
		}

		// Before any answer starts, the silence timer applies as in the
		// other modes.
		st = newStatus(io.Discard, false, false, false)
		s = &sender{o: &options{mode: modeAnswer, linger: time.Second}, st: st}
		st.sent(100)
		st.sentMessage()
		go func() { done <- s.lingerOn(context.Background(), make(chan struct{})) }()
		time.Sleep(time.Second + time.Millisecond)
		synctest.Wait()
		select {
		case <-done:
		default:
			t.Fatal("silence before any answer did not end the wait after -linger")
		}
	})
}
