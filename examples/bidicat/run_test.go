package main

import (
	"bytes"
	"context"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode/utf8"
)

// TestRunInProcess runs the program's run function, so that the race
// detector sees its sender, receiver and status goroutines (the other
// tests run the binary, built without it).
func TestRunInProcess(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	in := chatRequest("one") + "\n" + strings.Repeat("y", 5000) + "\n" + chatRequest("two") + "\n"
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"-local", "-o", "answer", "-json", "-part-size", "1000"}, `"text":"You said: two"`},
		{[]string{"-local", "-o", "events", "-linger", "50ms"}, `{"id":"chatcmpl-demo-3"`},
		{[]string{"-local", "-json", "-parts"}, `"type":"summary","exit_code":0`},
	} {
		var out, errOut bytes.Buffer
		if code := run(ctx, tc.args, strings.NewReader(in), &out, &errOut); code != exitOK {
			t.Fatalf("%q: exit code %d, stderr: %s", tc.args, code, errOut.String())
		}
		if !strings.Contains(out.String(), tc.want) {
			t.Errorf("%q: output lacks %q:\n%s", tc.args, tc.want, out.String())
		}
	}
}

// TestLiveStatusConcurrently draws the status line while counters move
// and output is written from other goroutines.
func TestLiveStatusConcurrently(t *testing.T) {
	var screen bytes.Buffer
	st := newStatus(&screen, true, true, true)
	st.start(time.Now())
	st.setUpload(1000)
	var wg sync.WaitGroup
	for i := range 3 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 50 {
				switch i {
				case 0:
					st.sent(10)
				case 1:
					st.received(7)
				case 2:
					st.write(&screen, []byte("output\n"))
				}
				time.Sleep(2 * time.Millisecond)
			}
		}()
	}
	wg.Wait()
	st.setConnected("Blue")
	st.mu.Lock()
	st.draw() // as the next tick would
	st.mu.Unlock()
	st.finish()
	got := screen.String()
	for _, want := range []string{"[#####-----]  50%", "Blue  ↑ 50 parts 500 B  ↓ 50 parts 350 B", "bidicat: variant Blue: sent 50 parts 500 B, received 50 parts 350 B"} {
		if !strings.Contains(got, want) {
			t.Errorf("screen lacks %q:\n%q", want, got)
		}
	}
	if strings.Count(got, "output\n") != 50 {
		t.Errorf("output lines lost or cut")
	}
}

// TestStatusLineFits80Columns draws the live line of a busy session on an
// 80-column terminal: it fits, and no field is cut (the reviewer saw
// "ttfb 9m" for "ttfb 9ms").
func TestStatusLineFits80Columns(t *testing.T) {
	for _, tc := range []struct {
		variant         string
		upload          int64
		sent, recv      int64
		ttfb, elapsed   time.Duration
		want, wantShort string
	}{
		{"AllTraffic", 0, 5, 123, 9 * time.Millisecond, 1230 * time.Millisecond, "ttfb 9ms", "↑ 5 parts 15.6 KiB"},
		{"AllTraffic", 16000, 5, 123, 9 * time.Millisecond, 1230 * time.Millisecond, "ttfb 9ms", "[##########] 100%"},
		{strings.Repeat("LongVariantName", 4), 1 << 30, 123456, 654321, 1234567 * time.Microsecond, 75 * time.Minute, "ttfb 1.23s", "1h15m"},
	} {
		var screen bytes.Buffer
		st := newStatus(&screen, true, true, false)
		st.width = 80
		now := time.Now()
		st.opened, st.firstByte = now.Add(-tc.elapsed), now.Add(-tc.elapsed).Add(tc.ttfb)
		st.setConnected(tc.variant)
		st.setUpload(tc.upload)
		for range tc.sent {
			st.sent(16000 / int(tc.sent))
		}
		st.sentBytes = 16000
		st.recvParts, st.recvBytes = tc.recv, 16000
		st.draw()
		line := strings.TrimPrefix(screen.String(), "\r\x1b[K")
		if n := utf8.RuneCountInString(line); n > 79 {
			t.Errorf("the line has %d columns, more than 79 of 80: %q", n, line)
		}
		for _, want := range []string{tc.want, tc.wantShort} {
			if !strings.Contains(line, want) {
				t.Errorf("the line %q lacks %q", line, want)
			}
		}
		if !strings.HasSuffix(line, "s") && !strings.HasSuffix(line, "m") {
			t.Errorf("the line %q does not end with the elapsed time", line)
		}
	}
}
