package wire

import (
	"bytes"
	"encoding/hex"
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
