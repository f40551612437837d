package cassette

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"testing"
	"time"

	"github.com/sagemaker-bidi/sagemaker-bidi/bidi"
)

// toLine converts e to the struct encoding/json writes: the oracle of
// appendEvent.
func toLine(e *Event) eventLine {
	l := eventLine{
		T: e.T.Microseconds(), Kind: string(e.Kind),
		Endpoint: e.Endpoint, TargetVariant: e.TargetVariant, InvocationPath: e.InvocationPath, QueryString: e.QueryString,
		Status: e.Status, Variant: e.Variant, RequestID: e.RequestID, ErrorType: e.ErrorType,
		Exception: e.ExceptionType, Body: e.Body,
		Code: e.Code, Message: e.Message,
		Reason: e.Reason, CloseCode: e.CloseCode, CloseReason: e.CloseReason, Err: e.Err,
	}
	if e.Kind == KindSend || e.Kind == KindRecv {
		l.Type = typeBinary
		if e.Type == bidi.DataTypeUTF8 {
			l.Type = typeUTF8
		}
		l.State = statePartial
		if e.Complete {
			l.State = stateComplete
		}
		size := e.Size
		l.Size = &size
		if e.Padding >= 0 {
			pad := e.Padding
			l.Padding = &pad
		}
		l.Redacted = e.Redacted
		if isText(e.Data) {
			s := string(e.Data)
			l.Text = &s
		} else {
			s := base64.StdEncoding.EncodeToString(e.Data)
			l.B64 = &s
		}
	}
	return l
}

// jsonLine is e's line as encoding/json writes it.
func jsonLine(t testing.TB, e *Event) []byte {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	l := toLine(e)
	if err := enc.Encode(&l); err != nil {
		t.Fatal(err)
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n"))
}

// appendEvent writes what encoding/json writes.
func TestAppendEventMatchesJSON(t *testing.T) {
	for _, e := range []Event{
		{Kind: KindOpen, Endpoint: "e", TargetVariant: "v", InvocationPath: "a/b", QueryString: "x=1&y=<2>"},
		{Kind: KindResponse, T: 1500 * time.Nanosecond, Status: 424, ErrorType: "ModelError", RequestID: "r", Body: `{"Message":"a \"b\"\n"}`},
		{Kind: KindSend, Type: bidi.DataTypeUTF8, Complete: true, Size: 3, Padding: 61, Data: []byte("a\tb")},
		{Kind: KindRecv, Type: bidi.DataTypeBinary, Size: 4, Padding: -1, Data: []byte{0, 1, 2, 3}},
		{Kind: KindRecv, Size: 0, Padding: -1, Data: nil, Redacted: true},
		{Kind: KindError, Code: "c\x01", Message: "m\u2028\u2029\xff\b\f"},
		{Kind: KindEnd, Reason: "exception", CloseCode: 1011, Err: "é✓"},
		{Kind: KindEnd, Reason: "completed", CloseCode: 1000, CloseReason: "bye \"now\""},
	} {
		got := appendEvent(nil, &e)
		if want := jsonLine(t, &e); !bytes.Equal(got, want) {
			t.Errorf("appendEvent:\n%s\nencoding/json:\n%s", got, want)
		}
	}
}

// FuzzAppendEvent checks appendEvent against encoding/json on any
// strings and payloads.
func FuzzAppendEvent(f *testing.F) {
	f.Add("x=1", []byte("hello"), "boom \"1011\"")
	f.Add("\u2028", []byte{0xff, 0}, "\x7f")
	f.Fuzz(func(t *testing.T, s string, data []byte, body string) {
		for _, e := range []Event{
			{Kind: KindOpen, Endpoint: s, QueryString: body},
			{Kind: KindRecv, Type: bidi.DataTypeUTF8, Size: len(data), Padding: -1, Data: data},
			{Kind: KindException, ExceptionType: s, Body: body},
			{Kind: KindEnd, Reason: s, CloseCode: len(data), CloseReason: body},
		} {
			got := appendEvent(nil, &e)
			if want := jsonLine(t, &e); !bytes.Equal(got, want) {
				t.Fatalf("appendEvent:\n%q\nencoding/json:\n%q", got, want)
			}
		}
	})
}
