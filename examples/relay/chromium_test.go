package main

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/sagemaker-bidi/sagemaker-bidi/internal/chromiumtest"
)

// speechSample makes a short spoken sentence with espeak-ng (a WAV file
// at 22,050 Hz) and converts it with sox to what the page streams: 16 kHz,
// 16-bit signed, mono, little-endian raw PCM. It returns both files.
func speechSample(t *testing.T) (wavFile, pcmFile string) {
	t.Helper()
	espeak, sox := needTool(t, "espeak-ng"), needTool(t, "sox")
	dir := t.TempDir()
	wav, pcm := filepath.Join(dir, "speech.wav"), filepath.Join(dir, "speech.pcm")
	if out, err := exec.CommandContext(t.Context(), espeak, "-w", wav, "Hello from the relay test. Every frame should come back.").CombinedOutput(); err != nil {
		t.Fatalf("espeak-ng: %v\n%s", err, out)
	}
	if out, err := exec.CommandContext(t.Context(), sox, wav, "-r", "16000", "-c", "1", "-b", "16", "-e", "signed-integer", "-L", "-t", "raw", pcm).CombinedOutput(); err != nil {
		t.Fatalf("sox: %v\n%s", err, out)
	}
	return wav, pcm
}

// Real headless Chromium loads the page, which streams a spoken sample
// (espeak-ng, resampled by sox) through the relay to the echo model in
// 20 ms frames and checks every reply; the DOM shows the result, and a
// screenshot is kept.
func TestChromiumStreamsSpeech(t *testing.T) {
	t.Parallel() // see TestMain
	_, pcm := speechSample(t)
	info, err := os.Stat(pcm)
	if err != nil || info.Size() < 16000 {
		t.Fatalf("sample: %v, %d bytes", err, info.Size())
	}
	// Queues that hold the whole sample: on a loaded machine a pause of
	// the page or the server must not drop frames (the example's default
	// policy for live audio) and fail the check.
	addr := startServer(t, "-sample", pcm, "-queue-bytes", "4194304", "-finish-quiet", quickQuiet)
	p := chromiumtest.Open(t, "http://"+addr+"/?src=sample.pcm&pace=2")
	text := waitResult(t, p)
	var r struct {
		Sent, Echoed, Mismatches, CloseCode int
		OK                                  bool
	}
	if err := json.Unmarshal([]byte(text), &r); err != nil {
		t.Fatalf("result %q: %v", text, err)
	}
	wantFrames := int((info.Size() + 639) / 640)
	if !r.OK || r.Sent != wantFrames || r.Echoed != wantFrames || r.Mismatches != 0 || r.CloseCode != 1000 {
		t.Fatalf("page result %s, want %d frames all echoed and close 1000", text, wantFrames)
	}
	png, err := p.Screenshot(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "relay-page.png")
	if err := os.WriteFile(path, png, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("%d frames echoed; screenshot %s (%d bytes)", r.Echoed, path, len(png))
}

// The page's file path: Chromium decodes the espeak-ng WAV (22,050 Hz)
// and resamples it to 16 kHz with WebAudio before streaming it.
func TestChromiumDecodesAndResamplesWAV(t *testing.T) {
	t.Parallel() // see TestMain
	wav, pcm := speechSample(t)
	info, err := os.Stat(pcm)
	if err != nil {
		t.Fatal(err)
	}
	addr := startServer(t, "-sample", wav, "-queue-bytes", "4194304", "-finish-quiet", quickQuiet)
	p := chromiumtest.Open(t, "http://"+addr+"/?src=sample.wav&pace=0")
	text := waitResult(t, p)
	var r struct {
		Sent, Echoed, Mismatches, CloseCode int
		OK                                  bool
	}
	if err := json.Unmarshal([]byte(text), &r); err != nil {
		t.Fatalf("result %q: %v", text, err)
	}
	// sox and WebAudio resample alike to within a frame or two.
	want := int((info.Size() + 639) / 640)
	if !r.OK || r.Echoed != r.Sent || r.Sent < want-2 || r.Sent > want+2 {
		t.Fatalf("page result %s, want about %d frames, all echoed", text, want)
	}
}

// waitResult waits for the page to finish and returns its result text.
func waitResult(t *testing.T, p *chromiumtest.Page) string {
	t.Helper()
	ctx := t.Context()
	for {
		done, err := p.Eval(ctx, "document.body && document.body.dataset.done || ''")
		if err != nil {
			t.Fatal(err)
		}
		if done == "1" {
			break
		}
		select {
		case <-ctx.Done():
			t.Fatal("the page did not finish")
		case <-time.After(100 * time.Millisecond): // polling the DOM, not timing an outcome
		}
	}
	text, err := p.Eval(ctx, "document.getElementById('result').textContent")
	if err != nil {
		t.Fatal(err)
	}
	return text
}
