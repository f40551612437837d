package cassette_test

import (
	"bytes"
	"errors"
	"io"
	"os"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/sagemaker-bidi/sagemaker-bidi/bidi"
	"github.com/sagemaker-bidi/sagemaker-bidi/bidi/cassette"
)

// v1Events are the events of testdata/v1.jsonl.
var v1Events = []cassette.Event{
	{Kind: cassette.KindOpen, Endpoint: "my-endpoint", TargetVariant: "Blue", InvocationPath: "chat/v1", QueryString: "lang=en", Padding: -1},
	{Kind: cassette.KindResponse, T: 812 * time.Microsecond, Status: 200, Variant: "Blue", RequestID: "4f3c2a10-7b1e-4c55-9a0e-0123456789ab", Padding: -1},
	{Kind: cassette.KindSend, T: 950 * time.Microsecond, Type: bidi.DataTypeUTF8, Complete: true, Size: 16, Padding: 48, Data: []byte("{\"inputs\":\"hi\"}\n")},
	{Kind: cassette.KindRecv, T: 1210 * time.Microsecond, Type: bidi.DataTypeUTF8, Size: 9, Padding: -1, Data: []byte("You said:")},
	{Kind: cassette.KindRecv, T: 1300 * time.Microsecond, Type: bidi.DataTypeUTF8, Complete: true, Size: 4, Padding: -1, Data: []byte(" hi\t")},
	{Kind: cassette.KindSend, T: 1500 * time.Microsecond, Type: bidi.DataTypeBinary, Size: 4, Padding: 60, Data: []byte{0, 1, 2, 0xff}},
	{Kind: cassette.KindSend, T: 1510 * time.Microsecond, Type: bidi.DataTypeBinary, Complete: true, Size: 0, Padding: 64, Data: []byte{}},
	{Kind: cassette.KindRecv, T: 1600 * time.Microsecond, Type: bidi.DataTypeBinary, Complete: true, Size: 4, Padding: -1, Data: []byte{0, 1, 2, 0xff}},
	{Kind: cassette.KindSend, T: 1650 * time.Microsecond, Type: bidi.DataTypeUTF8, Complete: true, Size: 6, Padding: 58, Data: []byte("******"), Redacted: true},
	{Kind: cassette.KindError, T: 1700 * time.Microsecond, Code: "ThrottlingException", Message: "slow down", Padding: -1},
	{Kind: cassette.KindSendEnd, T: 1800 * time.Microsecond, Padding: -1},
	{Kind: cassette.KindException, T: 2000 * time.Microsecond, ExceptionType: "ModelStreamError",
		Body: `{"Message":"Model container closed the WebSocket connection (code 1011, reason \"boom\")","ErrorCode":"1011"}`, Padding: -1},
	{Kind: cassette.KindEnd, T: 2001 * time.Microsecond, Reason: cassette.EndException, CloseCode: 1011, Padding: -1},
}

// The checked-in cassette of format version 1 reads as it was written,
// and writing its events again gives the same bytes: every later version
// must keep this test passing unchanged.
func TestFormatStabilityV1(t *testing.T) {
	raw, err := os.ReadFile("testdata/v1.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	c, err := cassette.Load(bytes.NewReader(raw))
	if err != nil {
		t.Fatal(err)
	}
	wantHeader := cassette.Header{Version: 1, Recorded: time.Date(2026, 11, 26, 13, 45, 0, 0, time.UTC), Recorder: "gateway"}
	if c.Header != wantHeader {
		t.Errorf("header %+v, want %+v", c.Header, wantHeader)
	}
	if !reflect.DeepEqual(c.Events, v1Events) {
		for i := range max(len(c.Events), len(v1Events)) {
			if i >= len(c.Events) || i >= len(v1Events) || !reflect.DeepEqual(c.Events[i], v1Events[i]) {
				t.Fatalf("event %d differs:\n got %+v\nwant %+v", i, at(c.Events, i), at(v1Events, i))
			}
		}
	}

	var out bytes.Buffer
	w, err := cassette.NewWriter(&out, &cassette.WriterOptions{Recorder: "gateway", Recorded: wantHeader.Recorded})
	if err != nil {
		t.Fatal(err)
	}
	for i := range c.Events {
		if err := w.Write(&c.Events[i]); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if out.String() != string(raw) {
		t.Errorf("re-encoded cassette differs:\n%s\nwant\n%s", out.String(), raw)
	}
}

func at(es []cassette.Event, i int) any {
	if i < len(es) {
		return es[i]
	}
	return "none"
}

// Payloads of every byte value come back as they were written, as text
// where they read as text and base64 elsewhere.
func TestPayloadRoundTrip(t *testing.T) {
	all := make([]byte, 256)
	for i := range all {
		all[i] = byte(i)
	}
	payloads := map[string][]byte{
		"text":     []byte(`{"a":"<b>&</b>"} é ✓` + "\t\r\n"),
		"binary":   all,
		"invalid":  {0xc3, 0x28},
		"control":  []byte("a\x00b"),
		"del":      []byte("a\x7fb"),
		"empty":    {},
		"newlines": []byte("\n\n\n"),
	}
	var b bytes.Buffer
	w, _ := cassette.NewWriter(&b, nil)
	for _, p := range payloads {
		w.Write(&cassette.Event{Kind: cassette.KindRecv, Type: bidi.DataTypeBinary, Complete: true, Size: len(p), Data: p, Padding: -1})
	}
	w.Close()
	if n := strings.Count(b.String(), "\n"); n != len(payloads)+1 {
		t.Fatalf("%d lines for %d events", n, len(payloads))
	}
	if strings.Contains(b.String(), `\u003c`) {
		t.Error("HTML characters escaped: the text does not read as written")
	}
	c, err := cassette.Load(&b)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]bool{}
	for _, e := range c.Events {
		for name, p := range payloads {
			if bytes.Equal(e.Data, p) {
				got[name] = true
			}
		}
	}
	if len(got) != len(payloads) {
		t.Errorf("payloads read back: %v", got)
	}
}

// The redaction hook masks what the application must not store, and the
// event keeps its size.
func TestRedact(t *testing.T) {
	var b bytes.Buffer
	w, _ := cassette.NewWriter(&b, &cassette.WriterOptions{Redact: func(e *cassette.Event) {
		if e.Kind == cassette.KindSend {
			e.Data, e.Redacted = []byte("[masked]"), true
		}
		e.QueryString = ""
	}})
	secret := []byte("card 4111 1111 1111 1111")
	ev := cassette.Event{Kind: cassette.KindSend, Type: bidi.DataTypeUTF8, Complete: true, Size: len(secret), Data: secret, Padding: -1}
	w.Write(&cassette.Event{Kind: cassette.KindOpen, QueryString: "token=abc"})
	w.Write(&ev)
	w.Close()
	if string(ev.Data) != string(secret) || ev.Redacted {
		t.Error("the hook changed the caller's event")
	}
	if strings.Contains(b.String(), "4111") || strings.Contains(b.String(), "token=abc") {
		t.Fatalf("redacted data stored: %s", b.String())
	}
	c, err := cassette.Load(&b)
	if err != nil {
		t.Fatal(err)
	}
	if e := c.Events[1]; !e.Redacted || e.Size != len(secret) || string(e.Data) != "[masked]" {
		t.Errorf("redacted event %+v", e)
	}
}

// Bad input gets a typed error naming the line.
func TestReaderErrors(t *testing.T) {
	const header = `{"cassette":"sagemaker-bidi","version":1}` + "\n"
	tests := []struct {
		name, in string
		check    func(error) bool
	}{
		{"empty", "", func(err error) bool { return errors.Is(err, cassette.ErrNotCassette) }},
		{"not json", "hello\n", func(err error) bool { return errors.Is(err, cassette.ErrNotCassette) }},
		{"other json", `{"a":1}` + "\n", func(err error) bool { return errors.Is(err, cassette.ErrNotCassette) }},
		{"version 0", `{"cassette":"sagemaker-bidi","version":0}` + "\n", func(err error) bool { return lineOf(err) == 1 }},
		{"newer", `{"cassette":"sagemaker-bidi","version":2}` + "\n", func(err error) bool {
			var ve *cassette.VersionError
			return errors.As(err, &ve) && ve.Version == 2
		}},
		{"bad line", header + "{\n", func(err error) bool { return lineOf(err) == 2 }},
		{"truncated", header + `{"t_us":1,"kind":"send_end"}`, func(err error) bool {
			return lineOf(err) == 2 && errors.Is(err, io.ErrUnexpectedEOF)
		}},
		{"bad type", header + `{"t_us":1,"kind":"send","type":"TEXT","state":"COMPLETE","size":0,"text":""}` + "\n", func(err error) bool { return lineOf(err) == 2 }},
		{"bad state", header + `{"t_us":1,"kind":"recv","type":"UTF8","state":"DONE","size":0,"text":""}` + "\n", func(err error) bool { return lineOf(err) == 2 }},
		{"size mismatch", header + "\n" + `{"t_us":1,"kind":"recv","type":"UTF8","state":"COMPLETE","size":3,"text":"ab"}` + "\n", func(err error) bool { return lineOf(err) == 3 }},
		{"no size", header + `{"t_us":1,"kind":"recv","type":"UTF8","state":"COMPLETE","text":"ab"}` + "\n", func(err error) bool { return lineOf(err) == 2 }},
		{"both", header + `{"t_us":1,"kind":"recv","type":"UTF8","state":"COMPLETE","size":0,"text":"","b64":""}` + "\n", func(err error) bool { return lineOf(err) == 2 }},
		{"bad b64", header + `{"t_us":1,"kind":"recv","type":"BINARY","state":"COMPLETE","size":1,"b64":"!"}` + "\n", func(err error) bool { return lineOf(err) == 2 }},
		{"negative time", header + `{"t_us":-1,"kind":"end"}` + "\n", func(err error) bool { return lineOf(err) == 2 }},
		{"bad status", header + `{"t_us":1,"kind":"response","status":42}` + "\n", func(err error) bool { return lineOf(err) == 2 }},
		{"too long", header + `{"t_us":1,"kind":"end","err":"` + strings.Repeat("x", 200) + `"}` + "\n", func(err error) bool {
			return lineOf(err) == 2 && errors.Is(err, cassette.ErrLineTooLong)
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := load(tt.in, 128)
			if err == nil || !tt.check(err) {
				t.Errorf("error %v", err)
			}
		})
	}
}

func load(in string, maxLine int) (*cassette.Cassette, error) {
	r, err := cassette.NewReader(strings.NewReader(in), &cassette.ReaderOptions{MaxLineSize: maxLine})
	if err != nil {
		return nil, err
	}
	c := &cassette.Cassette{Header: r.Header()}
	for {
		e, err := r.Next()
		if err == io.EOF {
			return c, nil
		}
		if err != nil {
			return nil, err
		}
		c.Events = append(c.Events, e)
	}
}

func lineOf(err error) int {
	var se *cassette.SyntaxError
	if errors.As(err, &se) {
		return se.Line
	}
	return 0
}

// Members and kinds of a later minor version are skipped, so that this
// reader keeps reading what the next version adds.
func TestReaderSkipsUnknown(t *testing.T) {
	in := `{"cassette":"sagemaker-bidi","version":1,"future":true}` + "\n" +
		`{"t_us":1,"kind":"annotation","note":"x"}` + "\n" +
		`{"t_us":2,"kind":"end","reason":"completed","new_member":[1,2]}` + "\n"
	c, err := load(in, 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Events) != 1 || c.Events[0].Kind != cassette.KindEnd || c.Events[0].T != 2*time.Microsecond {
		t.Errorf("events %+v", c.Events)
	}
}

// errWriter fails every write.
type errWriter struct{}

func (errWriter) Write([]byte) (int, error) { return 0, errors.New("disk full") }

// A write error is sticky and returned by Close; a closed writer refuses
// events.
func TestWriterErrors(t *testing.T) {
	w, err := cassette.NewWriter(errWriter{}, &cassette.WriterOptions{BufferSize: 4096})
	if err != nil {
		t.Fatal(err) // the header is buffered
	}
	big := cassette.Event{Kind: cassette.KindEnd, Err: strings.Repeat("x", 8000)}
	if err := w.Write(&big); err == nil {
		t.Fatal("write through a failing writer succeeded")
	}
	if err := w.Close(); err == nil || !strings.Contains(err.Error(), "disk full") {
		t.Errorf("Close() = %v", err)
	}
	var b bytes.Buffer
	w, _ = cassette.NewWriter(&b, nil)
	w.Close()
	if err := w.Write(&big); !errors.Is(err, cassette.ErrClosed) {
		t.Errorf("Write after Close = %v", err)
	}
	if err := w.Close(); err != nil {
		t.Errorf("second Close = %v", err)
	}
}
