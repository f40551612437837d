package wire

import (
	"bytes"
	"encoding/hex"
	"errors"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/sagemaker-bidi/sagemaker-bidi/eventstream"
)

// The inner message of event 1 in vectors.txt chain 1 (docs/wire.md §6.4).
const vectorEvent1 = "000000a500000083a9541d15084461746154797065070004555446380f436f6d706c6574696f6e53746174650700075041525449414c0b3a6576656e742d7479706507000b5061796c6f6164506172740d3a6d6573736167652d747970650700056576656e740d3a636f6e74656e742d747970650700186170706c69636174696f6e2f6f637465742d73747265616d7b22696e70757473223a2248656c6c6f227da256813c"

func TestPartHeadersMatchVector(t *testing.T) {
	p := Part{Bytes: []byte(`{"inputs":"Hello"}`), DataType: DataTypeUTF8, CompletionState: CompletionPartial}
	m := eventstream.Message{Headers: AppendPartHeaders(nil, &p), Payload: p.Bytes}
	got, err := eventstream.AppendMessage(nil, &m)
	if err != nil {
		t.Fatal(err)
	}
	if hex.EncodeToString(got) != vectorEvent1 {
		t.Fatalf("encoded\n%x\nwant\n%s", got, vectorEvent1)
	}
	var back eventstream.Message
	if err := eventstream.Unmarshal(got, &back); err != nil {
		t.Fatal(err)
	}
	if k := Classify(&back); k != KindPayloadPart {
		t.Fatalf("Classify = %v, want PayloadPart", k)
	}
	var q Part
	ParsePart(&back, &q)
	if !q.Valid() || !q.UTF8() || q.Complete() || !bytes.Equal(q.Bytes, p.Bytes) || q.Padding != nil {
		t.Fatalf("ParsePart = %+v", q)
	}
}

func TestParsePartDefaultsAndLenient(t *testing.T) {
	m := eventstream.Message{Headers: eventstream.Headers{
		{Name: MessageTypeHeader, Value: eventstream.StringValue("event")},
		{Name: EventTypeHeader, Value: eventstream.StringValue("PayloadPart")},
	}, Payload: []byte{1}}
	var p Part
	ParsePart(&m, &p)
	if !p.Valid() || p.UTF8() || !p.Complete() {
		t.Fatalf("absent headers: got %+v, want valid BINARY COMPLETE", p)
	}
	// Values outside the enums are parsed leniently (anything but UTF8 is
	// binary, anything but PARTIAL complete) and reported by Valid.
	for _, tc := range []struct {
		dt, cs      string
		utf8, compl bool
	}{
		{"TEXT", "PARTIAL", false, false},
		{"utf8", "PARTIAL", false, false},
		{"UTF8", "DONE", true, true},
		{"", "", false, true},
	} {
		m.Headers.Set(DataTypeHeader, eventstream.StringValue(tc.dt))
		m.Headers.Set(CompletionStateHeader, eventstream.StringValue(tc.cs))
		ParsePart(&m, &p)
		if p.Valid() || p.UTF8() != tc.utf8 || p.Complete() != tc.compl {
			t.Errorf("DataType %q CompletionState %q: Valid %v UTF8 %v Complete %v, want false %v %v",
				tc.dt, tc.cs, p.Valid(), p.UTF8(), p.Complete(), tc.utf8, tc.compl)
		}
	}
}

// TestPartHeadersEmptyPayload: like aws-sdk-go-v2, a part without payload
// carries no :content-type (docs/wire.md §4.1).
func TestPartHeadersEmptyPayload(t *testing.T) {
	for _, payload := range [][]byte{nil, {}} {
		p := Part{Bytes: payload, DataType: DataTypeBinary, CompletionState: CompletionComplete, Padding: []byte("pp")}
		h := AppendPartHeaders(nil, &p)
		var names []string
		for _, x := range h {
			names = append(names, x.Name)
		}
		want := []string{DataTypeHeader, CompletionStateHeader, PaddingHeader, EventTypeHeader, MessageTypeHeader}
		if !slices.Equal(names, want) {
			t.Fatalf("payload %v: headers %v, want %v", payload, names, want)
		}
		m := eventstream.Message{Headers: h, Payload: payload}
		b, err := eventstream.AppendMessage(nil, &m)
		if err != nil {
			t.Fatal(err)
		}
		var back eventstream.Message
		if err := eventstream.Unmarshal(b, &back); err != nil {
			t.Fatal(err)
		}
		if Classify(&back) != KindPayloadPart || len(back.Payload) != 0 {
			t.Fatalf("decoded %v", back)
		}
		if _, ok := EmptyValue(&back); ok {
			t.Fatal("EmptyValue found an empty header")
		}
	}
	m := eventstream.Message{Headers: eventstream.Headers{
		{Name: MessageTypeHeader, Value: eventstream.StringValue("event")},
		{Name: PaddingHeader, Value: eventstream.StringValue("")},
	}}
	if name, ok := EmptyValue(&m); !ok || name != PaddingHeader {
		t.Fatalf("EmptyValue = %q, %v; want P", name, ok)
	}
}

func TestClassify(t *testing.T) {
	for _, tc := range []struct {
		h    eventstream.Headers
		want Kind
	}{
		{nil, KindInvalid},
		{eventstream.Headers{{Name: MessageTypeHeader, Value: eventstream.Int32Value(1)}}, KindInvalid},
		{ExceptionHeaders("ModelStreamError"), KindException},
		{ErrorHeaders("X", "y"), KindError},
		{eventstream.Headers{{Name: MessageTypeHeader, Value: eventstream.StringValue("event")}, {Name: EventTypeHeader, Value: eventstream.StringValue("Other")}}, KindUnknownEvent},
		{eventstream.Headers{{Name: MessageTypeHeader, Value: eventstream.StringValue("gossip")}}, KindUnknown},
	} {
		m := eventstream.Message{Headers: tc.h}
		if got := Classify(&m); got != tc.want {
			t.Errorf("Classify(%v) = %v, want %v", tc.h, got, tc.want)
		}
	}
	m := eventstream.Message{Headers: ErrorHeaders("Code", "msg")}
	if String(&m, ErrorCodeHeader) != "Code" || String(&m, ErrorMessageHeader) != "msg" || String(&m, "absent") != "" {
		t.Fatal("String returned wrong values")
	}
}

// TestClassifyPartMatchesLookups compares the one-pass ClassifyPart (and
// Classify, ParsePart) with header lookups by name (Headers.Get, the last
// header of a name) on random header lists: repeated names, values of
// other types, empty and missing values, unrelated headers.
func TestClassifyPartMatchesLookups(t *testing.T) {
	// The reference finds each header by name (Headers.Get), as the
	// lookups the scan replaced did; the kind and fields follow from it.
	ref := func(h eventstream.Headers) eventFields {
		get := func(name string) *eventstream.Value {
			if v, ok := h.Get(name); ok {
				return &v
			}
			return nil
		}
		return eventFields{get(MessageTypeHeader), get(EventTypeHeader), get(DataTypeHeader), get(CompletionStateHeader), get(PaddingHeader)}
	}
	names := []string{MessageTypeHeader, EventTypeHeader, DataTypeHeader, CompletionStateHeader, PaddingHeader, ContentTypeHeader, "x"}
	values := []eventstream.Value{
		eventstream.StringBytesValue(MessageTypeEvent), eventstream.StringBytesValue(EventTypePayloadPart),
		eventstream.StringBytesValue(MessageTypeError), eventstream.StringBytesValue(DataTypeUTF8),
		eventstream.StringBytesValue(CompletionPartial), eventstream.StringValue(""), eventstream.StringValue("pad"),
		eventstream.Int32Value(7), eventstream.BytesValue([]byte("event")),
	}
	r := rand.New(rand.NewPCG(1, 2))
	for range 20000 {
		var h eventstream.Headers
		for range r.IntN(8) {
			h = append(h, eventstream.Header{Name: names[r.IntN(len(names))], Value: values[r.IntN(len(values))]})
		}
		m := eventstream.Message{Headers: h, Payload: []byte("payload")}
		f := ref(h)
		want := f.kind()
		var p Part
		got := ClassifyPart(&m, &p)
		if got != want || Classify(&m) != want {
			t.Fatalf("%v: ClassifyPart %v, Classify %v, want %v", h, got, Classify(&m), want)
		}
		if want != KindPayloadPart {
			continue
		}
		var q Part
		ParsePart(&m, &q)
		dt, _ := stringHeader(h, DataTypeHeader)
		cs, _ := stringHeader(h, CompletionStateHeader)
		pad, _ := stringHeader(h, PaddingHeader)
		for _, x := range []Part{p, q} {
			if !bytes.Equal(x.Bytes, m.Payload) || !sameBytes(x.DataType, dt) || !sameBytes(x.CompletionState, cs) || !sameBytes(x.Padding, pad) {
				t.Fatalf("%v: parsed %+v, want DataType %q CompletionState %q P %q", h, x, dt, cs, pad)
			}
		}
	}
}

// sameBytes is bytes.Equal that also tells nil (absent) from empty.
func sameBytes(a, b []byte) bool { return (a == nil) == (b == nil) && bytes.Equal(a, b) }

// TestAppendPartMessageMatchesAppendMessage: AppendPartMessage writes the
// bytes AppendMessage writes for AppendPartHeaders and the payload, for
// parts with and without each header and payload, small and large
// padding, after existing bytes; PartMessageLen is their length; and a
// part too large for the format fails the same way, leaving dst alone.
func TestAppendPartMessageMatchesAppendMessage(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	types := [][]byte{nil, DataTypeUTF8, DataTypeBinary, []byte("OTHER")}
	states := [][]byte{nil, CompletionPartial, CompletionComplete}
	for i := range 3000 {
		p := Part{
			DataType:        types[r.IntN(len(types))],
			CompletionState: states[r.IntN(len(states))],
		}
		if n := r.IntN(3); n > 0 {
			p.Bytes = bytes.Repeat([]byte{byte(i)}, []int{0, 1 + r.IntN(100), 1 + r.IntN(70000)}[n])
		}
		if r.IntN(2) == 1 {
			p.Padding = bytes.Repeat([]byte{'p'}, 1+r.IntN([]int{64, 32767}[r.IntN(2)]))
		}
		prefix := []byte("existing")
		want, err := eventstream.AppendMessage(bytes.Clone(prefix), &eventstream.Message{Headers: AppendPartHeaders(nil, &p), Payload: p.Bytes})
		if err != nil {
			t.Fatal(err)
		}
		got, err := AppendPartMessage(bytes.Clone(prefix), &p)
		if err != nil || !bytes.Equal(got, want) {
			t.Fatalf("part %d (%q %q, %d bytes, %d padding): %v, bytes differ", i, p.DataType, p.CompletionState, len(p.Bytes), len(p.Padding), err)
		}
		if n := PartMessageLen(&p); n != len(want)-len(prefix) {
			t.Fatalf("PartMessageLen = %d, want %d", n, len(want)-len(prefix))
		}
	}
	big := Part{Bytes: make([]byte, eventstream.DefaultMaxPayloadLen+1)}
	got, err := AppendPartMessage([]byte("x"), &big)
	var le *eventstream.LengthError
	if !errors.As(err, &le) || !errors.Is(err, eventstream.ErrPayloadTooLarge) || string(got) != "x" {
		t.Fatalf("oversize payload: %v, dst %d bytes", err, len(got))
	}
	if _, err := AppendPartMessage(nil, &Part{Padding: make([]byte, 1<<16)}); err == nil {
		t.Fatal("AppendPartMessage accepted a P header over 32767 bytes")
	}
}

// TestAppendPartMessageAllocs: into a buffer with room, encoding a part
// allocates nothing.
func TestAppendPartMessageAllocs(t *testing.T) {
	p := Part{Bytes: make([]byte, 640), DataType: DataTypeBinary, CompletionState: CompletionComplete, Padding: bytes.Repeat([]byte{'p'}, 64)}
	buf := make([]byte, 0, 4096)
	if n := testing.AllocsPerRun(100, func() {
		if _, err := AppendPartMessage(buf[:0], &p); err != nil {
			t.Fatal(err)
		}
	}); n != 0 {
		t.Fatalf("AppendPartMessage allocates %v times", n)
	}
}
