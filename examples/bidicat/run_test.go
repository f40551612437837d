package main

import (
	"bytes"
	"context"
	"strings"
	"sync"
	"testing"
	"time"
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
