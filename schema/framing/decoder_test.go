package framing

import (
	"errors"
	"io"
	"strings"
	"testing"

	"github.com/sagemaker-bidi/sagemaker-bidi/schema/internal/streamtest"
)

func TestDecoderPush(t *testing.T) {
	d := NewDecoder()
	if _, err := d.Next(); err != ErrNeedInput {
		t.Fatalf("empty decoder: %v, want ErrNeedInput", err)
	}
	// A message that ends inside "data:" and one that completes two events.
	d.Write([]byte("data: {\"a\":1}\n\nda"))
	ev, err := d.Next()
	if err != nil || string(ev.Data) != `{"a":1}` {
		t.Fatalf("first event: %q, %v", ev.Data, err)
	}
	if _, err := d.Next(); err != ErrNeedInput {
		t.Fatalf("after first event: %v, want ErrNeedInput", err)
	}
	msg := []byte("ta: {\"b\":2}\ndata: [DONE]\n")
	d.Write(msg)
	clear(msg) // the decoder copied the message
	ev, err = d.Next()
	if err != nil || string(ev.Data) != `{"b":2}` {
		t.Fatalf("second event: %q, %v", ev.Data, err)
	}
	d.Write([]byte("data: {\"c\":3}\n"))
	if ev, err = d.Next(); err != nil || !ev.Done {
		t.Fatalf("want [DONE], got %+v, %v", ev, err)
	}
	if ev, err = d.Next(); err != nil || string(ev.Data) != `{"c":3}` {
		t.Fatalf("third event: %q, %v", ev.Data, err)
	}
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := d.Next(); err != io.EOF {
		t.Fatalf("after Close: %v, want io.EOF", err)
	}
	if _, err := d.Write([]byte("data: 1\n")); err != ErrClosed {
		t.Fatalf("Write after Close: %v, want ErrClosed", err)
	}
	if d.Format() != FormatSSE {
		t.Errorf("format %v", d.Format())
	}

	// Reset makes the decoder new again, with new options.
	d.Reset(withFormat(FormatJSONLines))
	d.Write([]byte(`{"x":1}`))
	if ev, err = d.Next(); err != nil || string(ev.Data) != `{"x":1}` || ev.Offset != 0 {
		t.Fatalf("after Reset: %+v, %v", ev, err)
	}
}

func TestDecoderCloseInsideValue(t *testing.T) {
	d := NewDecoder()
	in := "data: {\"choices\":[{\"delta\":{\"content\":\"Hel"
	d.Write([]byte(in))
	if _, err := d.Next(); err != ErrNeedInput {
		t.Fatalf("got %v, want ErrNeedInput", err)
	}
	d.Close()
	_, err := d.Next()
	var syn *SyntaxError
	if !errors.Is(err, io.ErrUnexpectedEOF) || !errors.As(err, &syn) || syn.Offset != int64(len(in)) {
		t.Fatalf("got %v, want a SyntaxError at %d wrapping io.ErrUnexpectedEOF", err, len(in))
	}
	if _, again := d.Next(); again != err {
		t.Errorf("truncation is not final: %v", again)
	}
}

func TestDecoderCloseCompletesPendingEvent(t *testing.T) {
	// Without a final line end, Close is what ends the last value.
	for _, in := range []string{"data: 42", "data: {\"a\":1}", "7", "data: [DONE]"} {
		d := NewDecoder()
		d.Write([]byte(in))
		if _, err := d.Next(); err != ErrNeedInput {
			t.Fatalf("%q: got %v before Close", in, err)
		}
		d.Close()
		ev, err := d.Next()
		if err != nil || string(ev.Data) == "" && !ev.Done {
			t.Fatalf("%q: got %+v, %v", in, ev, err)
		}
		if _, err := d.Next(); err != io.EOF {
			t.Fatalf("%q: got %v, want io.EOF", in, err)
		}
	}
}

func TestDecoderBufferIsBounded(t *testing.T) {
	// A receive loop that drains after every message keeps only the bytes
	// of an unfinished line, however long the stream and wherever the
	// messages are cut.
	stream := streamtest.ChatSSE(5000)
	d := NewDecoder()
	events := 0
	for len(stream) > 0 {
		n := min(len(stream), 1000)
		d.Write(stream[:n])
		stream = stream[n:]
		for {
			_, err := d.Next()
			if err == ErrNeedInput {
				break
			}
			if err != nil {
				t.Fatal(err)
			}
			events++
		}
	}
	if events != 5001 {
		t.Errorf("%d events", events)
	}
	if c := cap(d.in.buf); c > minReadSize {
		t.Errorf("input buffer grew to %d bytes", c)
	}
}

func TestDecoderKeepsPendingLineAcrossWrites(t *testing.T) {
	d := NewDecoder()
	d.Write([]byte("data: 1\n\nevent: ab"))
	if ev, err := d.Next(); err != nil || string(ev.Data) != "1" {
		t.Fatalf("%q, %v", ev.Data, err)
	}
	if _, err := d.Next(); err != ErrNeedInput {
		t.Fatal(err) // "event: ab" is unconsumed: the line is not complete
	}
	// A write larger than the free space moves the pending bytes first.
	big := "c" + strings.Repeat(" ", 2*minReadSize) + "\ndata: 2\n\n"
	d.Write([]byte(big))
	ev, err := d.Next()
	if err != nil || string(ev.Data) != "2" || ev.Type != "abc"+strings.Repeat(" ", 2*minReadSize) {
		t.Fatalf("%q type %d bytes, %v", ev.Data, len(ev.Type), err)
	}
}
