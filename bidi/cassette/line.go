package cassette

import (
	"encoding/base64"
	"fmt"
	"time"
	"unicode/utf8"

	"github.com/sagemaker-bidi/sagemaker-bidi/bidi"
)

// headerLine is the JSON of a Header.
type headerLine struct {
	Cassette string `json:"cassette"`
	Version  int    `json:"version"`
	Recorded string `json:"recorded,omitempty"`
	Recorder string `json:"recorder,omitempty"`
}

// eventLine is the JSON of an Event, in the order a reader wants to see
// the members.
type eventLine struct {
	T    int64  `json:"t_us"`
	Kind string `json:"kind"`

	Endpoint       string `json:"endpoint,omitempty"`
	TargetVariant  string `json:"target_variant,omitempty"`
	InvocationPath string `json:"path,omitempty"`
	QueryString    string `json:"query,omitempty"`

	Status    int    `json:"status,omitempty"`
	Variant   string `json:"variant,omitempty"`
	RequestID string `json:"request_id,omitempty"`
	ErrorType string `json:"error_type,omitempty"`

	Type     string  `json:"type,omitempty"`
	State    string  `json:"state,omitempty"`
	Size     *int    `json:"size,omitempty"`
	Padding  *int    `json:"pad,omitempty"`
	Redacted bool    `json:"redacted,omitempty"`
	Text     *string `json:"text,omitempty"`
	B64      *string `json:"b64,omitempty"`

	Exception string `json:"exception,omitempty"`
	Body      string `json:"body,omitempty"`

	Code    string `json:"code,omitempty"`
	Message string `json:"message,omitempty"`

	Reason      string `json:"reason,omitempty"`
	CloseCode   int    `json:"close_code,omitempty"`
	CloseReason string `json:"close_reason,omitempty"`
	Err         string `json:"err,omitempty"`
}

// Wire names of DataType and CompletionState, as in the PayloadPart
// headers.
const (
	typeUTF8      = "UTF8"
	typeBinary    = "BINARY"
	statePartial  = "PARTIAL"
	stateComplete = "COMPLETE"
)

// isText reports whether b reads well as a JSON string: valid UTF-8
// without control characters other than tab, LF and CR (which JSON
// escapes compactly), so that the line is at most about twice as long as
// the payload.
func isText(b []byte) bool {
	for _, c := range b {
		if c < 0x20 && c != '\t' && c != '\n' && c != '\r' || c == 0x7f {
			return false
		}
	}
	return utf8.Valid(b)
}

// fromLine converts a decoded line, checking what the kind requires.
func fromLine(l *eventLine) (Event, error) {
	if l.T < 0 {
		return Event{}, fmt.Errorf("negative t_us %d", l.T)
	}
	e := Event{
		Kind: Kind(l.Kind), T: time.Duration(l.T) * time.Microsecond,
		Endpoint: l.Endpoint, TargetVariant: l.TargetVariant, InvocationPath: l.InvocationPath, QueryString: l.QueryString,
		Status: l.Status, Variant: l.Variant, RequestID: l.RequestID, ErrorType: l.ErrorType,
		ExceptionType: l.Exception, Body: l.Body,
		Code: l.Code, Message: l.Message,
		Reason: l.Reason, CloseCode: l.CloseCode, CloseReason: l.CloseReason, Err: l.Err,
		Padding: -1,
	}
	switch e.Kind {
	case KindSend, KindRecv:
	case KindResponse:
		if e.Status < 100 || e.Status > 999 {
			return Event{}, fmt.Errorf("response status %d out of range", e.Status)
		}
		return e, nil
	default:
		return e, nil
	}
	switch l.Type {
	case typeUTF8:
		e.Type = bidi.DataTypeUTF8
	case typeBinary:
		e.Type = bidi.DataTypeBinary
	default:
		return Event{}, fmt.Errorf("%s: type %q is not UTF8 or BINARY", e.Kind, l.Type)
	}
	switch l.State {
	case stateComplete:
		e.Complete = true
	case statePartial:
	default:
		return Event{}, fmt.Errorf("%s: state %q is not PARTIAL or COMPLETE", e.Kind, l.State)
	}
	switch {
	case l.Text != nil && l.B64 != nil:
		return Event{}, fmt.Errorf("%s: both text and b64", e.Kind)
	case l.Text != nil:
		e.Data = []byte(*l.Text)
	case l.B64 != nil:
		b, err := base64.StdEncoding.DecodeString(*l.B64)
		if err != nil {
			return Event{}, fmt.Errorf("%s: b64: %w", e.Kind, err)
		}
		e.Data = b
	default:
		e.Data = []byte{}
	}
	if l.Size == nil || *l.Size < 0 {
		return Event{}, fmt.Errorf("%s: missing or negative size", e.Kind)
	}
	e.Size = *l.Size
	e.Redacted = l.Redacted
	if !e.Redacted && e.Size != len(e.Data) {
		return Event{}, fmt.Errorf("%s: size %d but %d bytes of data", e.Kind, e.Size, len(e.Data))
	}
	if l.Padding != nil {
		if *l.Padding < 0 {
			return Event{}, fmt.Errorf("%s: negative pad", e.Kind)
		}
		e.Padding = *l.Padding
	}
	return e, nil
}
