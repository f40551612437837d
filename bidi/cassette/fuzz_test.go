package cassette_test

import (
	"bytes"
	"io"
	"os"
	"testing"

	"github.com/sagemaker-bidi/sagemaker-bidi/bidi/cassette"
)

// FuzzReader feeds the reader arbitrary files: it must return events or
// an error, never panic or hang, and whatever it reads must survive a
// write and a second read unchanged.
func FuzzReader(f *testing.F) {
	if raw, err := os.ReadFile("testdata/v1.jsonl"); err == nil {
		f.Add(raw)
	}
	f.Add([]byte(`{"cassette":"sagemaker-bidi","version":1}` + "\n" + `{"t_us":5,"kind":"recv","type":"BINARY","state":"PARTIAL","size":2,"b64":"AAE="}` + "\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		r, err := cassette.NewReader(bytes.NewReader(data), &cassette.ReaderOptions{MaxLineSize: 1 << 16})
		if err != nil {
			return
		}
		var events []cassette.Event
		for {
			e, err := r.Next()
			if err != nil {
				if err != io.EOF {
					return
				}
				break
			}
			if (e.Kind == cassette.KindSend || e.Kind == cassette.KindRecv) && !e.Redacted && e.Size != len(e.Data) {
				t.Fatalf("event with size %d and %d bytes", e.Size, len(e.Data))
			}
			events = append(events, e)
		}
		var b bytes.Buffer
		w, err := cassette.NewWriter(&b, &cassette.WriterOptions{Recorded: r.Header().Recorded})
		if err != nil {
			t.Fatal(err)
		}
		for i := range events {
			if err := w.Write(&events[i]); err != nil {
				t.Fatal(err)
			}
		}
		w.Close()
		c, err := cassette.Load(&b)
		if err != nil {
			t.Fatalf("re-reading what was written: %v", err)
		}
		if len(c.Events) != len(events) {
			t.Fatalf("%d events re-read, %d written", len(c.Events), len(events))
		}
		for i := range events {
			a, b := events[i], c.Events[i]
			if a.Kind != b.Kind || a.T != b.T || !bytes.Equal(a.Data, b.Data) || a.Size != b.Size || a.Body != b.Body {
				t.Fatalf("event %d changed: %+v then %+v", i, a, b)
			}
		}
	})
}
