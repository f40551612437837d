package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sagemaker-bidi/sagemaker-bidi/bidi/biditest/replay"
	"github.com/sagemaker-bidi/sagemaker-bidi/bidi/cassette"
)

// -record writes the session as a cassette that replays through
// biditest: the same output from the replay as from the model.
func TestRecord(t *testing.T) {
	t.Parallel() // mostly waiting: the 1 s -linger of piped input
	file := filepath.Join(t.TempDir(), "session.jsonl")
	in := "hello\nworld\n"
	r := runCat(t, cleanEnv(t), in, "-local", "-nl", "-record", file)
	r.wantCode(t, exitOK)
	f, err := os.Open(file)
	if err != nil {
		t.Fatal(err)
	}
	c, err := cassette.Load(f)
	f.Close()
	if err != nil {
		t.Fatal(err)
	}
	var kinds []string
	for _, e := range c.Events {
		kinds = append(kinds, string(e.Kind))
	}
	got := strings.Join(kinds, " ")
	if c.Header.Recorder != "bidicat" || !strings.HasPrefix(got, "open ") || !strings.HasSuffix(got, " end") ||
		strings.Count(got, "send ") != 2 || strings.Count(got, "recv") != 2 || !strings.Contains(got, "send_end") {
		t.Fatalf("recorder %q, events %q", c.Header.Recorder, got)
	}
	raw, _ := os.ReadFile(file)
	for _, secret := range []string{testCredentials.SecretAccessKey, "Authorization", "Signature="} {
		if strings.Contains(string(raw), secret) {
			t.Errorf("the cassette holds %q", secret)
		}
	}

	_, flags := server(t, replay.New(c, &replay.Options{TimeScale: -1}))
	rr := runCat(t, cleanEnv(t), in, append(flags, "-endpoint", "e", "-nl")...)
	rr.wantCode(t, exitOK)
	if rr.stdout != r.stdout {
		t.Errorf("replayed output %q, recorded %q", rr.stdout, r.stdout)
	}

	bad := runCat(t, cleanEnv(t), in, "-local", "-record", filepath.Join(t.TempDir(), "no", "such", "dir.jsonl"))
	if bad.code == exitOK || !strings.Contains(bad.stderr, "-record") {
		t.Errorf("an unwritable -record: exit %d, stderr %q", bad.code, bad.stderr)
	}
}
