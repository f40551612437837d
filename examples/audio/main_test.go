package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/sagemaker-bidi/sagemaker-bidi/examples/internal/cli"
)

func runAudio(t *testing.T, args ...string) (string, time.Duration) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var out, errOut bytes.Buffer
	start := time.Now()
	if code := run(ctx, args, &out, &errOut); code != 0 {
		t.Fatalf("exit code %d, stderr: %s\nstdout:\n%s", code, errOut.String(), out.String())
	}
	return out.String(), time.Since(start)
}

// TestRealTimeChunks streams half a second of audio at real-time pace and
// checks that partial results come back while audio is still being sent.
func TestRealTimeChunks(t *testing.T) {
	t.Parallel() // paced in real time: mostly waiting
	got, elapsed := runAudio(t, "-seconds", "0.5")
	if elapsed < 450*time.Millisecond || elapsed > 20*time.Second {
		t.Errorf("took %v; real-time pacing wants about 500 ms", elapsed)
	}
	sent := strings.Index(got, "-> chunk  5/5: 3200 bytes of audio as a BINARY message")
	partial := strings.Index(got, `<- UTF8 COMPLETE part: {"type":"partial","audio_ms":100,`)
	if sent < 0 || partial < 0 || partial > sent {
		t.Errorf("want the first partial result printed before the last chunk is sent:\n%s", got)
	}
	for _, want := range []string{
		`{"type":"final","audio_ms":500,"level_dbfs":-9,"pitch_hz":440,"parts":5}`,
		"streamed 500ms of audio",
		"live: the first result arrived",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("output lacks %q:\n%s", want, got)
		}
	}
	if n := strings.Count(got, `"type":"partial"`); n != 5 {
		t.Errorf("%d partial results, want one per chunk", n)
	}
}

// TestFragmentedMessage sends the chunks as the parts of one message, at
// real-time pace: like a container behind SageMaker, the recognizer sees
// them only once the message is complete, so no result comes before the
// last chunk is sent, and the program says why (issue 11: it suggested
// fragments for live audio).
func TestFragmentedMessage(t *testing.T) {
	got, _ := runAudio(t, "-seconds", "0.3", "-speed", "0", "-fragment", "-freq", "220", "-chunk-ms", "50")
	if strings.Contains(got, "live: the first result arrived") ||
		!strings.Contains(got, "not live: the container saw the fragmented message only once complete") {
		t.Errorf("no explanation of the wait:\n%s", got)
	}
	for _, want := range []string{
		"-> chunk  1/6: 1600 bytes of audio as a BINARY PARTIAL part",
		"-> chunk  6/6: 1600 bytes of audio as a BINARY COMPLETE part",
		`"pitch_hz":220,"parts":6}`,
		"(unpaced)",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("output lacks %q:\n%s", want, got)
		}
	}
	if n := len(regexp.MustCompile(`"type":"partial"`).FindAllString(got, -1)); n != 6 {
		t.Errorf("%d partial results, want 6", n)
	}
}

func TestAnalyzerAcrossOddPieces(t *testing.T) {
	pcm := sineWave(1000, 16000, 0.25)
	a := &analyzer{rate: 16000}
	for len(pcm) > 0 { // pieces of 7 bytes cut samples in two
		n := min(7, len(pcm))
		a.write(pcm[:n])
		pcm = pcm[n:]
	}
	if a.millis() != 250 || a.pitchHz() != 1000 || a.levelDBFS() != -9 {
		t.Errorf("%d ms, %d Hz, %g dBFS; want 250 ms, 1000 Hz, -9 dBFS", a.millis(), a.pitchHz(), a.levelDBFS())
	}
}

func TestFlags(t *testing.T) {
	ctx := context.Background()
	var out, errOut bytes.Buffer
	if code := run(ctx, []string{"-h"}, &out, &errOut); code != 0 {
		t.Errorf("-h exit code %d", code)
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"-seconds", "0"}, "audio: usage: -seconds: want 0 to 600\nRun 'audio -h' for the flags.\n"},
		{[]string{"-speed", "-1"}, "must be positive"},
		// The error and a pointer to -h, not the whole help.
		{[]string{"-bogus"}, "audio: usage: flag provided but not defined: -bogus\nRun 'audio -h' for the flags.\n"},
		{[]string{"-endpoint", "my_asr"}, "the character '_' at offset 2"},
		{[]string{"extra"}, `unexpected argument "extra"`},
	} {
		errOut.Reset()
		if code := run(ctx, tc.args, &out, &errOut); code != 2 || !strings.Contains(errOut.String(), tc.want) || strings.Contains(errOut.String(), "-sample-rate samples") {
			t.Errorf("%q: exit code %d, stderr %q; want 2 and %q", tc.args, code, errOut.String(), tc.want)
		}
	}
}

// TestInterrupted runs the program with a context cancelled as Ctrl-C
// cancels it: exit code 130 and "audio: interrupted".
func TestInterrupted(t *testing.T) {
	ctx, cancel := context.WithCancelCause(context.Background())
	cancel(cli.ErrInterrupted)
	var out, errOut bytes.Buffer
	if code := run(ctx, []string{"-seconds", "0.2"}, &out, &errOut); code != cli.ExitInterrupted || errOut.String() != "audio: interrupted\n" {
		t.Errorf("exit code %d, stderr %q; want 130, \"audio: interrupted\"", code, errOut.String())
	}
}

// TestEveryFlagHasAnExample checks that -h shows every flag in use.
func TestEveryFlagHasAnExample(t *testing.T) {
	fs, _ := newFlagSet(io.Discard)
	if missing := cli.FlagsWithoutExample(fs); len(missing) > 0 {
		t.Errorf("flags without an example in -h: %q", missing)
	}
}

// TestRotatingCall runs the demo of issue 19: 3 s of audio paced at twice
// real time on a RotatingSession whose streams are replaced after 500 ms
// (the demo server caps them at 1.5 s), with a stream reset in the middle
// and a replay window of 2 s, ended with Finish. Every chunk's partial
// result is printed once, at its place on the call's timeline, in order;
// the rotations and the replay are reported.
func TestRotatingCall(t *testing.T) {
	t.Parallel() // paced in real time: mostly waiting
	got, _ := runAudio(t, "-seconds", "3", "-chunk-ms", "100", "-speed", "2", "-rotate-after", "500ms")
	for _, want := range []*regexp.Regexp{
		regexp.MustCompile(`== stream 1 -> 2 \(age\) at`),
		regexp.MustCompile(`\((early end|overlap fault)\) at [0-9.]+s of audio, after .*reset.*, [0-9]+ chunks replayed`),
		regexp.MustCompile(`30 chunks sent on [0-9]+ streams; 30 partial results on the call's timeline, up to 3\.000s; [0-9]+ answers to replayed audio dropped`),
	} {
		if !want.MatchString(got) {
			t.Errorf("output lacks %v:\n%s", want, got)
		}
	}
	stamps := regexp.MustCompile(`<- \[ *([0-9.]+)s\] stream`).FindAllStringSubmatch(got, -1)
	if len(stamps) != 30 {
		t.Fatalf("%d partial results printed, want 30:\n%s", len(stamps), got)
	}
	for i, m := range stamps {
		if want := fmt.Sprintf("%.3f", float64(i+1)/10); m[1] != want {
			t.Errorf("partial result %d at %ss, want %ss", i+1, m[1], want)
		}
	}
}
