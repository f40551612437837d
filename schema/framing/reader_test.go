package framing

import (
	"bytes"
	"errors"
	"io"
	"strings"
	"testing"
	"testing/iotest"

	"github.com/sagemaker-bidi/sagemaker-bidi/schema/internal/streamtest"
)

func TestReaderReadErrorIsReturnedAndRetryable(t *testing.T) {
	boom := errors.New("boom")
	src := io.MultiReader(strings.NewReader("data: {\"a\":"), iotest.ErrReader(boom))
	flaky := &switchReader{r: src}
	r := NewReader(flaky)
	if _, err := r.Next(); err != boom {
		t.Fatalf("got %v, want the read error as is", err)
	}
	// The reader recovers: the framed state survives the failed read.
	flaky.r = strings.NewReader("1}\n\n")
	ev, err := r.Next()
	if err != nil || string(ev.Data) != `{"a":1}` {
		t.Fatalf("after retry: %q, %v", ev.Data, err)
	}
	if _, err := r.Next(); err != io.EOF {
		t.Fatalf("got %v, want io.EOF", err)
	}
}

type switchReader struct{ r io.Reader }

func (s *switchReader) Read(p []byte) (int, error) { return s.r.Read(p) }

func TestReaderNoProgress(t *testing.T) {
	r := NewReader(zeroReader{})
	if _, err := r.Next(); err != io.ErrNoProgress {
		t.Fatalf("got %v, want io.ErrNoProgress", err)
	}
}

type zeroReader struct{}

func (zeroReader) Read([]byte) (int, error) { return 0, nil }

func TestReaderReset(t *testing.T) {
	r := NewReader(strings.NewReader("data: {\"a\":"))
	if _, err := r.Next(); !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Fatalf("got %v", err)
	}
	r.Reset(strings.NewReader("[1]\n"))
	ev, err := r.Next()
	if err != nil || string(ev.Data) != "[1]" || ev.Offset != 0 || r.Format() != FormatJSONLines {
		t.Fatalf("after Reset: %+v, %v, format %v", ev, err, r.Format())
	}
}

func TestReaderLongLinesAndEvents(t *testing.T) {
	// Events and lines far longer than the read buffer.
	long := `{"content":"` + strings.Repeat("x", 3*minReadSize) + `"}`
	for _, in := range []string{
		"data: " + long + "\n\n",
		"data: " + long + "\n",
		long + "\n",
		"event: " + strings.Repeat("e", 2*minReadSize) + "\ndata: " + long + "\n",
	} {
		ev, err := NewReader(iotest.HalfReader(strings.NewReader(in))).Next()
		if err != nil || string(ev.Data) != long {
			t.Fatalf("got %d bytes, %v", len(ev.Data), err)
		}
	}
}

func TestEventDataValidUntilNextCall(t *testing.T) {
	r := NewReader(bytes.NewReader(streamtest.ChatSSE(3)))
	ev, _ := r.Next()
	first := string(ev.Data)
	kept := bytes.Clone(ev.Data)
	if first != streamtest.ChatChunk(0, 3) || string(kept) != first {
		t.Fatalf("first event %q", first)
	}
	ev2, _ := r.Next()
	if string(ev2.Data) != streamtest.ChatChunk(1, 3) {
		t.Fatalf("second event %q", ev2.Data)
	}
}
