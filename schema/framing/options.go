package framing

// DefaultMaxEventSize is the default for [Options.MaxEventSize]: 4 MiB,
// enough for a non-streaming completion with per-token details.
const DefaultMaxEventSize = 4 << 20

// Format is the framing of a byte stream.
type Format uint8

const (
	// FormatAuto detects the framing from the first byte that is not
	// whitespace or a byte order mark: a byte that can start a JSON value
	// ('{', '[', '"', a digit, '-', 't', 'f', 'n') selects JSON Lines,
	// anything else Server-Sent Events.
	FormatAuto Format = iota
	// FormatSSE is Server-Sent Events (text/event-stream) carrying one JSON
	// value per event, with the deviations LMI containers emit.
	FormatSSE
	// FormatJSONLines is a sequence of JSON values separated by optional
	// whitespace (application/jsonlines), pretty-printed or not.
	FormatJSONLines
)

// String returns the format's name.
func (f Format) String() string {
	switch f {
	case FormatSSE:
		return "sse"
	case FormatJSONLines:
		return "jsonlines"
	}
	return "auto"
}

// Options configure a [Reader] or [Decoder]. The zero value is ready to use.
type Options struct {
	// Format selects the framing. FormatAuto (the default) detects it.
	Format Format

	// MaxEventSize bounds the size in bytes of one JSON value and of one
	// SSE field line. A larger event fails with an [*EventTooLargeError].
	// The size of an event is that of its [Event.Data]: blanks and line
	// ends around SSE data do not count. Zero means DefaultMaxEventSize.
	MaxEventSize int

	// Resync makes malformed input recoverable: after reporting a
	// [*SyntaxError] or [*EventTooLargeError], the decoder skips to the
	// start of the next event and continues. SSE resumes at the next blank
	// line or line that starts with a known field (data, event, id, retry)
	// or a comment; JSON Lines resumes at the next line that starts with
	// '{' or '[' in its first column. Without Resync, such errors are final
	// and returned by every later call.
	Resync bool
}

func (o *Options) maxEventSize() int {
	if o.MaxEventSize <= 0 {
		return DefaultMaxEventSize
	}
	return o.MaxEventSize
}

func buildOptions(optFns []func(*Options)) Options {
	var o Options
	for _, fn := range optFns {
		fn(&o)
	}
	return o
}
