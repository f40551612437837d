package main

import (
	"bufio"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"
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

// cdp is a minimal Chrome DevTools Protocol client over one page target.
type cdp struct {
	c  *websocket.Conn
	id int
}

func (p *cdp) call(ctx context.Context, method string, params any, result any) error {
	p.id++
	req, _ := json.Marshal(map[string]any{"id": p.id, "method": method, "params": params})
	if err := p.c.Write(ctx, websocket.MessageText, req); err != nil {
		return err
	}
	for {
		_, b, err := p.c.Read(ctx)
		if err != nil {
			return err
		}
		var resp struct {
			ID     int             `json:"id"`
			Result json.RawMessage `json:"result"`
			Error  *struct {
				Message string `json:"message"`
			} `json:"error"`
		}
		if json.Unmarshal(b, &resp) != nil || resp.ID != p.id {
			continue // an event
		}
		if resp.Error != nil {
			return fmt.Errorf("%s: %s", method, resp.Error.Message)
		}
		return json.Unmarshal(resp.Result, result)
	}
}

// eval evaluates expr in the page and returns its value as a string.
func (p *cdp) eval(ctx context.Context, expr string) (string, error) {
	var r struct {
		Result struct {
			Value any `json:"value"`
		} `json:"result"`
	}
	if err := p.call(ctx, "Runtime.evaluate", map[string]any{"expression": expr, "returnByValue": true}, &r); err != nil {
		return "", err
	}
	s, _ := r.Result.Value.(string)
	return s, nil
}

// openChromium starts headless Chromium on url and connects to the page.
func openChromium(t *testing.T, url string) *cdp {
	t.Helper()
	bin := needTool(t, "chromium")
	ctx := t.Context()
	cmd := exec.CommandContext(ctx, bin, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
		"--disable-extensions", "--mute-audio", "--remote-debugging-port=0", "--remote-debugging-address=127.0.0.1",
		"--user-data-dir="+t.TempDir(), url)
	// Its whole process group is killed at the end, before the profile
	// directory is removed: helper processes that outlived the browser
	// kept writing to it.
	ownProcessGroup(cmd)
	cmd.Cancel = func() error { return killProcessGroup(cmd) }
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { killProcessGroup(cmd); cmd.Wait() })
	re := regexp.MustCompile(`DevTools listening on ws://([^/]+)/`)
	sc := bufio.NewScanner(stderr)
	var host string
	for sc.Scan() {
		if m := re.FindStringSubmatch(sc.Text()); m != nil {
			host = m[1]
			break
		}
	}
	if host == "" {
		t.Fatal("chromium did not print its DevTools address")
	}
	go func() {
		for sc.Scan() { // keep draining Chromium's log
		}
	}()
	// The page target Chromium opened for url.
	var targets []struct {
		Type, URL, WebSocketDebuggerURL string
	}
	for {
		resp, err := http.Get("http://" + host + "/json/list")
		if err == nil {
			json.NewDecoder(resp.Body).Decode(&targets)
			resp.Body.Close()
		}
		for _, tg := range targets {
			if tg.Type == "page" && strings.HasPrefix(tg.URL, "http") {
				c, _, err := websocket.Dial(ctx, tg.WebSocketDebuggerURL, nil)
				if err != nil {
					t.Fatal(err)
				}
				c.SetReadLimit(64 << 20) // screenshots
				t.Cleanup(func() { c.CloseNow() })
				return &cdp{c: c}
			}
		}
		select {
		case <-ctx.Done():
			t.Fatal("no page target")
		case <-time.After(50 * time.Millisecond): // polling for the target, not timing an outcome
		}
	}
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
	p := openChromium(t, "http://"+addr+"/?src=sample.pcm&pace=2")
	ctx := t.Context()
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
	var shot struct{ Data string }
	if err := p.call(ctx, "Page.captureScreenshot", map[string]any{"format": "png"}, &shot); err != nil {
		t.Fatal(err)
	}
	png, err := base64.StdEncoding.DecodeString(shot.Data)
	if err != nil || len(png) < 8 || string(png[1:4]) != "PNG" {
		t.Fatalf("screenshot: %v, %d bytes", err, len(png))
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
	p := openChromium(t, "http://"+addr+"/?src=sample.wav&pace=0")
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
func waitResult(t *testing.T, p *cdp) string {
	t.Helper()
	ctx := t.Context()
	for {
		done, err := p.eval(ctx, "document.body && document.body.dataset.done || ''")
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
	text, err := p.eval(ctx, "document.getElementById('result').textContent")
	if err != nil {
		t.Fatal(err)
	}
	return text
}
