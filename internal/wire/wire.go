// Package wire holds the layout of SageMaker's bidirectional event
// messages (docs/wire.md §4.1 and §5.3), shared by the client in package bidi
// and the test server in package biditest: PayloadPart events, modeled
// exceptions and unmodeled error messages.
package wire

import (
	"bytes"
	"slices"

	"github.com/sagemaker-bidi/sagemaker-bidi/eventstream"
)

// Header names.
const (
	MessageTypeHeader     = ":message-type"
	EventTypeHeader       = ":event-type"
	ContentTypeHeader     = ":content-type"
	ExceptionTypeHeader   = ":exception-type"
	ErrorCodeHeader       = ":error-code"
	ErrorMessageHeader    = ":error-message"
	DataTypeHeader        = "DataType"
	CompletionStateHeader = "CompletionState"
	PaddingHeader         = "P"
)

// Header values, as byte slices so that encoding allocates nothing. They
// must not be modified.
var (
	MessageTypeEvent     = []byte("event")
	MessageTypeException = []byte("exception")
	MessageTypeError     = []byte("error")
	EventTypePayloadPart = []byte("PayloadPart")
	ContentTypeOctets    = []byte("application/octet-stream")
	ContentTypeJSON      = []byte("application/json")
	DataTypeUTF8         = []byte("UTF8")
	DataTypeBinary       = []byte("BINARY")
	CompletionPartial    = []byte("PARTIAL")
	CompletionComplete   = []byte("COMPLETE")
)

// Part is one PayloadPart as headers and payload. DataType and
// CompletionState hold the header values, or nil when the header is absent
// (absent DataType means BINARY, absent CompletionState means COMPLETE).
type Part struct {
	Bytes           []byte
	DataType        []byte
	CompletionState []byte
	Padding         []byte
}

// UTF8 reports whether the part is text: DataType is UTF8. Any other
// value, or none, means binary.
func (p *Part) UTF8() bool { return bytes.Equal(p.DataType, DataTypeUTF8) }

// Complete reports whether the part ends a message: CompletionState is
// anything but PARTIAL, or absent.
func (p *Part) Complete() bool { return !bytes.Equal(p.CompletionState, CompletionPartial) }

// AppendPartHeaders appends the headers of a PayloadPart event to h in the
// order the AWS SDKs use: DataType, CompletionState and P when set, then
// :event-type, :message-type and, when p.Bytes is not empty,
// :content-type. Like aws-sdk-go-v2 (docs/wire.md §4.1), a part without payload
// carries no :content-type. The values alias p.
func AppendPartHeaders(h eventstream.Headers, p *Part) eventstream.Headers {
	h = appendLeadHeaders(h, p)
	if len(p.Bytes) == 0 {
		return append(h, trailerHeaders[:2]...)
	}
	return append(h, trailerHeaders...)
}

// appendLeadHeaders appends the headers of p that vary: DataType,
// CompletionState and P, each when set.
func appendLeadHeaders(h eventstream.Headers, p *Part) eventstream.Headers {
	if len(p.DataType) > 0 {
		h = append(h, eventstream.Header{Name: DataTypeHeader, Value: eventstream.StringBytesValue(p.DataType)})
	}
	if len(p.CompletionState) > 0 {
		h = append(h, eventstream.Header{Name: CompletionStateHeader, Value: eventstream.StringBytesValue(p.CompletionState)})
	}
	if len(p.Padding) > 0 {
		h = append(h, eventstream.Header{Name: PaddingHeader, Value: eventstream.StringBytesValue(p.Padding)})
	}
	return h
}

// trailerHeaders are the headers that follow the varying ones in every
// PayloadPart: :event-type, :message-type and, for a part with a payload,
// :content-type. They are shared and must not be modified.
var trailerHeaders = eventstream.Headers{
	{Name: EventTypeHeader, Value: eventstream.StringBytesValue(EventTypePayloadPart)},
	{Name: MessageTypeHeader, Value: eventstream.StringBytesValue(MessageTypeEvent)},
	{Name: ContentTypeHeader, Value: eventstream.StringBytesValue(ContentTypeOctets)},
}

// Kind classifies a received message by its :message-type.
type Kind uint8

// Message kinds.
const (
	KindInvalid      Kind = iota // no or mistyped :message-type
	KindPayloadPart              // event PayloadPart
	KindUnknownEvent             // event of another :event-type
	KindException                // modeled or unmodeled exception
	KindError                    // unmodeled error
	KindUnknown                  // another :message-type
)

// Classify returns the kind of m.
func Classify(m *eventstream.Message) Kind {
	var f eventFields
	f.scan(m.Headers)
	return f.kind()
}

// ParsePart reads the PayloadPart fields of m into p. The slices alias m.
// It accepts any value: UTF8 and Complete interpret values outside the
// model's enums leniently, as clients must (docs/wire.md §2.3); Valid tells
// whether the values conform, for a receiver that checks its peer.
func ParsePart(m *eventstream.Message, p *Part) {
	var f eventFields
	f.scan(m.Headers)
	f.part(m, p)
}

// ClassifyPart is Classify and, for a PayloadPart, ParsePart, in one pass
// over m's headers: what a receiver does with every message.
func ClassifyPart(m *eventstream.Message, p *Part) Kind {
	var f eventFields
	f.scan(m.Headers)
	k := f.kind()
	if k == KindPayloadPart {
		f.part(m, p)
	}
	return k
}

// eventFields holds the headers that classifying a message and parsing a
// PayloadPart read (nil when absent): the last of each name, as
// Headers.Get finds them.
type eventFields struct {
	messageType, eventType, dataType, completion, padding *eventstream.Value
}

func (f *eventFields) scan(h eventstream.Headers) {
	for i := range h {
		var slot **eventstream.Value
		switch h[i].Name {
		case MessageTypeHeader:
			slot = &f.messageType
		case EventTypeHeader:
			slot = &f.eventType
		case DataTypeHeader:
			slot = &f.dataType
		case CompletionStateHeader:
			slot = &f.completion
		case PaddingHeader:
			slot = &f.padding
		default:
			continue
		}
		*slot = &h[i].Value
	}
}

func (f *eventFields) kind() Kind {
	mt, ok := stringOf(f.messageType)
	if !ok {
		return KindInvalid
	}
	switch {
	case bytes.Equal(mt, MessageTypeEvent):
		if et, ok := stringOf(f.eventType); ok && bytes.Equal(et, EventTypePayloadPart) {
			return KindPayloadPart
		}
		return KindUnknownEvent
	case bytes.Equal(mt, MessageTypeException):
		return KindException
	case bytes.Equal(mt, MessageTypeError):
		return KindError
	}
	return KindUnknown
}

func (f *eventFields) part(m *eventstream.Message, p *Part) {
	*p = Part{Bytes: m.Payload}
	p.DataType, _ = stringOf(f.dataType)
	p.CompletionState, _ = stringOf(f.completion)
	p.Padding, _ = stringOf(f.padding)
}

// Valid reports whether DataType and CompletionState are absent or hold
// one of the model's values (UTF8 or BINARY, PARTIAL or COMPLETE).
func (p *Part) Valid() bool {
	return (p.DataType == nil || bytes.Equal(p.DataType, DataTypeUTF8) || bytes.Equal(p.DataType, DataTypeBinary)) &&
		(p.CompletionState == nil || bytes.Equal(p.CompletionState, CompletionPartial) || bytes.Equal(p.CompletionState, CompletionComplete))
}

// EmptyValue returns the name of the first string or byte-array header of
// m whose value is empty, which the event-stream format forbids (docs/wire.md
// §2.2), and reports whether there is one.
func EmptyValue(m *eventstream.Message) (string, bool) {
	for i := range m.Headers {
		v := &m.Headers[i].Value
		if (v.Type == eventstream.TypeString || v.Type == eventstream.TypeBytes) && len(v.Bytes) == 0 {
			return m.Headers[i].Name, true
		}
	}
	return "", false
}

// String returns the value of a string header, or "" when absent.
func String(m *eventstream.Message, name string) string {
	v, _ := stringHeader(m.Headers, name)
	return string(v)
}

func stringHeader(h eventstream.Headers, name string) ([]byte, bool) {
	v, ok := h.Get(name)
	if !ok {
		return nil, false
	}
	return stringOf(&v)
}

// stringOf returns the value of a string header (empty, not nil, when it
// is empty), and false for nil or a value of another type.
func stringOf(v *eventstream.Value) ([]byte, bool) {
	if v == nil || v.Type != eventstream.TypeString {
		return nil, false
	}
	if v.Bytes == nil {
		return []byte{}, true
	}
	return v.Bytes, true
}

// ExceptionHeaders returns the headers of an exception message of the
// given type (for example "ModelStreamError") with a JSON payload.
func ExceptionHeaders(exceptionType string) eventstream.Headers {
	return eventstream.Headers{
		{Name: ExceptionTypeHeader, Value: eventstream.StringValue(exceptionType)},
		{Name: MessageTypeHeader, Value: eventstream.StringBytesValue(MessageTypeException)},
		{Name: ContentTypeHeader, Value: eventstream.StringBytesValue(ContentTypeJSON)},
	}
}

// ErrorHeaders returns the headers of an unmodeled error message.
func ErrorHeaders(code, message string) eventstream.Headers {
	h := eventstream.Headers{{Name: MessageTypeHeader, Value: eventstream.StringBytesValue(MessageTypeError)}}
	if code != "" {
		h = append(h, eventstream.Header{Name: ErrorCodeHeader, Value: eventstream.StringValue(code)})
	}
	if message != "" {
		h = append(h, eventstream.Header{Name: ErrorMessageHeader, Value: eventstream.StringValue(message)})
	}
	return h
}

// partTrailer and partTrailerNoPayload are trailerHeaders encoded, with
// and without :content-type.
var partTrailer, partTrailerNoPayload = func() ([]byte, []byte) {
	with, err := eventstream.AppendHeaders(nil, trailerHeaders)
	if err != nil {
		panic("wire: " + err.Error())
	}
	without, _ := eventstream.AppendHeaders(nil, trailerHeaders[:2])
	return with, without
}()

// AppendPartMessage appends the PayloadPart event for p to dst: the
// message eventstream.AppendMessage encodes from AppendPartHeaders and
// p.Bytes, byte for byte, built without a header list (the headers that
// never change are copied encoded). Errors are AppendMessage's.
func AppendPartMessage(dst []byte, p *Part) ([]byte, error) {
	var hb [3]eventstream.Header
	lead, trailer := partHeaders(p, &hb)
	start := len(dst)
	dst = slices.Grow(dst, PartMessageLen(p))[:start+eventstream.PreludeLen]
	dst, err := eventstream.AppendHeaders(dst, lead)
	if err != nil {
		return dst[:start], err
	}
	dst = append(dst, trailer...)
	headersLen := len(dst) - start - eventstream.PreludeLen
	dst = append(dst, p.Bytes...)
	dst = append(dst, 0, 0, 0, 0)
	if err := eventstream.FinishMessage(dst[start:], headersLen); err != nil {
		return dst[:start], err
	}
	return dst, nil
}

// PartMessageLen returns the length of the message AppendPartMessage
// appends for p, when p can be encoded (AppendPartMessage says when it
// cannot).
func PartMessageLen(p *Part) int {
	n := eventstream.Overhead + len(p.Bytes) +
		stringHeaderLen(DataTypeHeader, p.DataType) +
		stringHeaderLen(CompletionStateHeader, p.CompletionState) +
		stringHeaderLen(PaddingHeader, p.Padding)
	if len(p.Bytes) == 0 {
		return n + len(partTrailerNoPayload)
	}
	return n + len(partTrailer)
}

// stringHeaderLen returns the encoded length of a string header named
// name with value v, or 0 when v is empty (such a header is not sent):
// its name's length, the name, the type, the value's length (2 bytes)
// and the value. It takes no array of headers, so that PartMessageLen,
// on Send's signing path, adds nothing to its caller's stack frame.
func stringHeaderLen(name string, v []byte) int {
	if len(v) == 0 {
		return 0
	}
	return 1 + len(name) + 1 + 2 + len(v)
}

// partHeaders returns, in hb, the headers of p that vary (DataType,
// CompletionState and P, each when set) and the encoded headers that
// follow them.
func partHeaders(p *Part, hb *[3]eventstream.Header) (lead eventstream.Headers, trailer []byte) {
	lead = appendLeadHeaders(hb[:0], p)
	if len(p.Bytes) == 0 {
		return lead, partTrailerNoPayload
	}
	return lead, partTrailer
}
