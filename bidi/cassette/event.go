package cassette

import (
	"time"

	"github.com/sagemaker-bidi/sagemaker-bidi/bidi"
)

// Version is the version of the cassette format this package writes.
const Version = 1

// Magic is the value of the header's "cassette" member, which tells a
// cassette from any other JSON Lines file.
const Magic = "sagemaker-bidi"

// Header is the first line of a cassette.
type Header struct {
	// Version is the format version the cassette was written in.
	Version int
	// Recorded is when the session started (UTC, to the second).
	Recorded time.Time
	// Recorder names the program that wrote it: "gateway", "bidicat",
	// "library", "biditest", or an application's own name.
	Recorder string
}

// Kind says what an [Event] records.
type Kind string

// The kinds of events.
const (
	// KindOpen is the request that opened the session: Endpoint,
	// TargetVariant, InvocationPath and QueryString. Headers are not
	// recorded (Authorization is among them).
	KindOpen Kind = "open"
	// KindResponse is the response head: Status, Variant and RequestID,
	// and for an HTTP error ErrorType and Body.
	KindResponse Kind = "response"
	// KindSend is a part the client sent: Type, Complete, Size, Padding
	// and Data.
	KindSend Kind = "send"
	// KindSendEnd is the client's end of input (its end frame).
	KindSendEnd Kind = "send_end"
	// KindRecv is a part the model sent: Type, Complete, Size and Data.
	KindRecv Kind = "recv"
	// KindException is a mid-stream exception, modeled or not
	// (ModelStreamError, InternalStreamFailure): ExceptionType and Body,
	// the exception's JSON payload as sent.
	KindException Kind = "exception"
	// KindError is an unmodeled mid-stream error message: Code and
	// Message.
	KindError Kind = "error"
	// KindEnd is the end of the session: Reason, CloseCode and
	// CloseReason where known, and, for a failure without a modeled
	// error, Err.
	KindEnd Kind = "end"
)

// End reasons recorded in [Event.Reason].
const (
	EndCompleted = "completed"  // the stream ended cleanly
	EndException = "exception"  // the stream ended with an exception or error message
	EndHTTPError = "http_error" // the request was answered with an HTTP error
	EndReset     = "reset"      // the stream was reset or cut off (Err says how)
	EndClosed    = "closed"     // the client closed the session before its end
)

// Event is one line of a cassette after the header. Which fields are set
// depends on Kind (see the Kind constants); the others are zero.
type Event struct {
	Kind Kind
	// T is the time since the session started.
	T time.Duration

	// KindOpen.
	Endpoint, TargetVariant, InvocationPath, QueryString string

	// KindResponse.
	Status    int
	Variant   string
	RequestID string
	ErrorType string // HTTP errors: the X-Amzn-ErrorType

	// KindSend and KindRecv.
	Type     bidi.DataType
	Complete bool
	// Size is the payload's length as it travelled, even when Data was
	// redacted.
	Size int
	// Padding is the length of the part's padding (P), or -1 when not
	// known. Its contents are never recorded.
	Padding int
	// Data is the payload, or what the redaction hook left of it.
	Data []byte
	// Redacted reports that Data is not the payload that travelled.
	Redacted bool

	// KindException: the exception type and its JSON payload. KindResponse
	// of an HTTP error: the body.
	ExceptionType string
	Body          string

	// KindError.
	Code, Message string

	// KindEnd.
	Reason string
	// CloseCode is the WebSocket close code the session ended with, when
	// known, or 0: the one a ModelStreamError carried, or the close of the
	// model's WebSocket a gateway saw (1000 for a clean end, say).
	CloseCode int
	// CloseReason is the reason text of that close, when known.
	CloseReason string
	Err         string
}

// Part returns the part a KindSend or KindRecv event holds.
func (e *Event) Part() bidi.Part {
	return bidi.Part{Data: e.Data, Type: e.Type, Complete: e.Complete}
}
