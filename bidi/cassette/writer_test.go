package cassette

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/sagemaker-bidi/sagemaker-bidi/bidi"
)

// callWriter records each Write call's length.
type callWriter struct {
	bytes.Buffer
	calls []int
}

func (w *callWriter) Write(p []byte) (int, error) {
	w.calls = append(w.calls, len(p))
	return w.Buffer.Write(p)
}

// The Writer makes one write call per BufferSize bytes, not one per
// event; the bytes are the header and the events' lines in order; an
// event larger than the buffer does not keep a large buffer.
func TestWriterBuffers(t *testing.T) {
	var cw callWriter
	rec := time.Date(2026, 11, 26, 13, 45, 0, 0, time.UTC)
	w, err := NewWriter(&cw, &WriterOptions{BufferSize: 4096, Recorder: `gw "&<x>`, Recorded: rec})
	if err != nil {
		t.Fatal(err)
	}
	var want []byte
	{
		var h bytes.Buffer
		enc := json.NewEncoder(&h)
		enc.SetEscapeHTML(false)
		enc.Encode(headerLine{Cassette: Magic, Version: Version, Recorded: "2026-11-26T13:45:00Z", Recorder: `gw "&<x>`})
		want = h.Bytes()
	}
	e := Event{Kind: KindRecv, Type: bidi.DataTypeBinary, Complete: true, Size: 300, Padding: -1, Data: bytes.Repeat([]byte{0, 1, 2}, 100)}
	for i := range 100 {
		e.T = time.Duration(i) * time.Millisecond
		if err := w.Write(&e); err != nil {
			t.Fatal(err)
		}
		want = append(append(want, appendEvent(nil, &e)...), '\n')
	}
	if len(cw.calls) == 0 || len(cw.calls) > len(want)/4096 {
		t.Errorf("%d write calls for %d bytes through a 4 KiB buffer: %v", len(cw.calls), len(want), cw.calls)
	}
	for _, n := range cw.calls {
		if n < 4096 {
			t.Errorf("a write call of %d bytes before Close: %v", n, cw.calls)
		}
	}
	big := Event{Kind: KindEnd, Err: strings.Repeat("x", 3*4096)}
	if err := w.Write(&big); err != nil {
		t.Fatal(err)
	}
	want = append(append(want, appendEvent(nil, &big)...), '\n')
	if c := cap(w.buf); c > 2*4096 {
		t.Errorf("after a %d-byte event the buffer keeps %d bytes", len(big.Err), c)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(cw.Bytes(), want) {
		t.Errorf("cassette:\n%.300s…\nwant:\n%.300s…", cw.Bytes(), want)
	}
	if _, err := Load(bytes.NewReader(cw.Bytes())); err != nil {
		t.Errorf("reading it back: %v", err)
	}
}

// shortWriter accepts one byte less than it is given.
type shortWriter struct{}

func (shortWriter) Write(p []byte) (int, error) { return max(len(p)-1, 0), nil }

// A writer that takes fewer bytes than it was given without an error is
// a write error (io.ErrShortWrite), sticky like any other.
func TestWriterShortWrite(t *testing.T) {
	w, err := NewWriter(shortWriter{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Flush(); !errors.Is(err, io.ErrShortWrite) {
		t.Fatalf("Flush() = %v, want io.ErrShortWrite", err)
	}
	if err := w.Write(&Event{Kind: KindSendEnd}); !errors.Is(err, io.ErrShortWrite) {
		t.Errorf("Write after a short write = %v", err)
	}
	if err := w.Close(); !errors.Is(err, io.ErrShortWrite) {
		t.Errorf("Close() = %v", err)
	}
}
