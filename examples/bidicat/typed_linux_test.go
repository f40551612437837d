package main

import (
	"bytes"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sagemaker-bidi/sagemaker-bidi/bidi"
	"github.com/sagemaker-bidi/sagemaker-bidi/bidi/biditest"
)

// screenReader collects what a pseudo-terminal shows, and lets a test
// wait until it shows some text.
type screenReader struct {
	mu      sync.Mutex
	b       bytes.Buffer
	changed chan struct{} // closed and replaced at each read
	done    chan struct{} // closed once the terminal closed
}

func readScreen(master *os.File) *screenReader {
	s := &screenReader{changed: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(s.done)
		buf := make([]byte, 4096)
		for {
			n, err := master.Read(buf)
			s.mu.Lock()
			s.b.Write(buf[:n])
			close(s.changed)
			s.changed = make(chan struct{})
			s.mu.Unlock()
			if err != nil { // EIO once every slave descriptor is closed
				return
			}
		}
	}()
	return s
}

// waitFor waits until the screen shows want, failing the test if the
// terminal closes first or runTimeout passes.
func (s *screenReader) waitFor(t *testing.T, want string) {
	t.Helper()
	deadline := time.After(runTimeout)
	for {
		s.mu.Lock()
		got, changed := s.b.String(), s.changed
		s.mu.Unlock()
		if strings.Contains(got, want) {
			return
		}
		select {
		case <-changed:
		case <-s.done:
			s.mu.Lock()
			got = s.b.String()
			s.mu.Unlock()
			if !strings.Contains(got, want) {
				t.Fatalf("the terminal closed without showing %q:\n%q", want, got)
			}
			return
		case <-deadline:
			t.Fatalf("the terminal never showed %q:\n%q", want, got)
		}
	}
}

func (s *screenReader) String() string {
	<-s.done
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// TestTypedAnswerPromptLiveErrorAndInterrupt types on the terminal what a
// newcomer types at first, plain text, with -o answer: bidicat prompts
// for a request with an example before anything is typed, reports that
// the model's reply is not an event stream as soon as it arrives (not
// only at Ctrl-D), and, interrupted, says what it was doing.
func TestTypedAnswerPromptLiveErrorAndInterrupt(t *testing.T) {
	master, slave := openPTY(t)
	defer master.Close()
	screen := readScreen(master)
	cmd, stdout, stderr := command(t, cleanEnv(t), "", "-local", "-o", "answer")
	cmd.Stdin, cmd.Stderr = slave, slave
	start := time.Now()
	err := cmd.Start()
	slave.Close() // the child has its own copy
	if err != nil {
		t.Fatal(err)
	}
	screen.waitFor(t, `bidicat: type one request per line, e.g. {"messages":[{"role":"user","content":"hi"}],"stream":true}; Ctrl-D ends the input, Ctrl-C stops`)
	master.Write([]byte("hi there\n"))
	// The DemoModel echoes text that is not JSON: the error shows while
	// the input is still open.
	screen.waitFor(t, `bidicat: decode: framing: syntax error at offset 0: unexpected text outside an event: "hi there"; try -o raw`)
	cmd.Process.Signal(os.Interrupt)
	r := finished(t, cmd, cmd.Wait(), start, stdout, stderr)
	r.wantCode(t, exitInterrupted)
	got := screen.String()
	for _, want := range []string{
		"bidicat: variant AllTraffic: sent 1 part 8 B, received 1 part 8 B",
		"bidicat: interrupted while the input was open (Ctrl-D ends it and waits for the answers)\r\n",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("the terminal did not show %q:\n%q", want, got)
		}
	}
	if n := strings.Count(got, "unexpected text outside an event"); n != 1 {
		t.Errorf("the decode error was shown %d times:\n%q", n, got)
	}
}

// TestTypedRawPrompt checks the prompt of -o raw, and that -q leaves it
// out.
func TestTypedRawPrompt(t *testing.T) {
	screen, r := onTerminal(t, "hello\n", true, "-local")
	r.wantCode(t, exitOK)
	if !strings.Contains(screen, "bidicat: type one message per line; Ctrl-D ends the input, Ctrl-C stops") {
		t.Errorf("no prompt: %q", screen)
	}
	screen, r = onTerminal(t, "hello\n", true, "-local", "-q")
	r.wantCode(t, exitOK)
	if strings.Contains(screen, "type one") {
		t.Errorf("-q, yet a prompt: %q", screen)
	}
}

// TestInterruptedAnswer interrupts -o answer while an answer streams, its
// output piped: the answer is printed as far as it got, marked as cut by
// the interrupt (not as a failed stream), and the last line says what
// bidicat was doing and what it had moved.
func TestInterruptedAnswer(t *testing.T) {
	const chunk = `data: {"id":"c","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"role":"assistant","content":"Hel"},"finish_reason":null}]}` + "\n\n"
	_, flags := server(t, biditest.HandlerFunc(func(st *biditest.Stream) {
		if _, err := st.Recv(); err != nil {
			return
		}
		st.Send(bidi.Text(chunk))
		for { // until bidicat ends the stream
			if _, err := st.Recv(); err != nil {
				return
			}
		}
	}))
	cmd, _, stderr := command(t, cleanEnv(t), "x\n", append(flags, "-endpoint", "e", "-o", "answer")...)
	pr, pw, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer pr.Close()
	cmd.Stdout = pw
	start := time.Now()
	err = cmd.Start()
	pw.Close()
	if err != nil {
		t.Fatal(err)
	}
	out := readScreen(pr)
	out.waitFor(t, "Hel") // printed live: the answer is in progress
	cmd.Process.Signal(os.Interrupt)
	var stdout bytes.Buffer
	r := finished(t, cmd, cmd.Wait(), start, &stdout, stderr)
	r.wantCode(t, exitInterrupted)
	if got := out.String(); got != "Hel\n" {
		t.Errorf("stdout %q, want the answer as far as it got", got)
	}
	for _, want := range []string{
		"interrupted before the answer ended; the answer above is as far as it got",
		"bidicat: interrupted while waiting for the answers; sent 1 part 1 B, received 1 part ",
	} {
		if !strings.Contains(r.stderr, want) {
			t.Errorf("stderr lacks %q:\n%s", want, r.stderr)
		}
	}
	if strings.Contains(r.stderr, "the stream failed") {
		t.Errorf("an interrupt reported as a failed stream:\n%s", r.stderr)
	}
}

// TestInterruptedWhileSending interrupts a session whose piped input is
// still open: the message says so, with the counts.
func TestInterruptedWhileSending(t *testing.T) {
	_, flags := server(t, biditest.Echo())
	cmd, _, stderr := command(t, cleanEnv(t), "", append(flags, "-endpoint", "e", "-nl")...)
	inR, inW, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer inW.Close()
	outR, outW, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer outR.Close()
	cmd.Stdin, cmd.Stdout = inR, outW
	start := time.Now()
	err = cmd.Start()
	inR.Close()
	outW.Close()
	if err != nil {
		t.Fatal(err)
	}
	out := readScreen(outR)
	inW.Write([]byte("x\n"))
	out.waitFor(t, "x\n") // the echo: the service answered, the input is still open
	cmd.Process.Signal(os.Interrupt)
	var stdout bytes.Buffer
	r := finished(t, cmd, cmd.Wait(), start, &stdout, stderr)
	r.wantCode(t, exitInterrupted)
	if want := "bidicat: interrupted while the input was being sent; sent 1 part 1 B, received 1 part 1 B\n"; r.stderr != want {
		t.Errorf("stderr %q, want %q", r.stderr, want)
	}
}
