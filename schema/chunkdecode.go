package schema

import "bytes"

// chunkDecoder decodes the chat and text completion chunks of a stream
// without encoding/json, for the accumulators. It reads the fields of the
// chunk types directly with a [jsonReader], and decodes exactly what
// encoding/json would decode, or gives up (decodeChat and decodeText
// return false) so that the caller uses encoding/json: on payloads it does
// not fully understand (log probabilities and tool calls among them, see
// jsonReader for the rest), nothing changes but the speed.
//
// The strings of a chunk are reused from the previous chunk where they
// repeat (id, object, model, role, finish reason, ...), so that in a
// stream only the text of each delta is a new string: a chunk costs about
// one allocation.
type chunkDecoder struct {
	r jsonReader
	// The strings of the previous chunk, by field.
	id, object, model, tier, fingerprint, role, finish, stop, text recent
	// Storage for the usage of the chunk being decoded.
	usage   Usage
	details PromptTokensDetails
}

// recent is the last string of a field.
type recent string

// get returns b as a string: the last one if b is the same.
func (s *recent) get(b []byte) string {
	if string(b) != string(*s) {
		*s = recent(b)
	}
	return string(*s)
}

// The fields of each object the decoders read, for the check that
// rejects keys that match them only case-insensitively.
var (
	headFields      = []string{"id", "object", "created", "model", "choices", "service_tier", "system_fingerprint", "usage"}
	textHeadFields  = append(headFields[:len(headFields):len(headFields)], "kv_transfer_params")
	chatChoiceField = []string{"index", "delta", "logprobs", "finish_reason", "stop_reason"}
	textChoiceField = []string{"index", "text", "logprobs", "finish_reason", "stop_reason", "prompt_logprobs"}
	deltaFields     = []string{"role", "content", "reasoning_content", "refusal", "function_call", "tool_calls"}
	usageFields     = []string{"prompt_tokens", "completion_tokens", "total_tokens", "prompt_tokens_details"}
	detailsFields   = []string{"cached_tokens"}
)

// fields tracks the members of one object: it fails the reader on a
// duplicate known key (encoding/json would merge, or overwrite, the two
// values) and on an unknown key that encoding/json would match to a field
// case-insensitively, and skips the values of other unknown keys.
type fields struct {
	r    *jsonReader
	seen uint64
}

// first reports whether the known field n (its index in its list) is met
// for the first time, failing otherwise.
func (f *fields) first(n int) bool {
	if f.seen&(1<<n) != 0 {
		f.r.fail()
		return false
	}
	f.seen |= 1 << n
	return true
}

// str reads field n, a string, into *dst, reusing last's string when
// the value repeats it.
func (f *fields) str(n int, dst *string, last *recent) {
	if f.first(n) {
		*dst = last.get(f.r.str())
	}
}

// integer reads field n, an integer, into *dst.
func (f *fields) integer(n int, dst *int) {
	if f.first(n) {
		*dst = int(f.r.integer())
	}
}

// onlyNull reads field n, which this decoder understands only as null:
// any other value gives up on the chunk.
func (f *fields) onlyNull(n int) {
	if f.first(n) && !f.r.null() {
		f.r.fail()
	}
}

// unknown handles a key that is none of names.
func (f *fields) unknown(key []byte, names []string) {
	for _, n := range names {
		if bytes.EqualFold(key, []byte(n)) {
			f.r.fail()
			return
		}
	}
	f.r.skip()
}

// decodeChat decodes data into c, which must be empty, and reports whether
// it could.
func (d *chunkDecoder) decodeChat(data []byte, c *ChatCompletionChunk) bool {
	r := &d.r
	r.reset(data)
	f := fields{r: r}
	h := chunkHead{&c.ID, &c.Object, &c.Model, &c.ServiceTier, &c.SystemFingerprint, &c.Created, &c.Usage}
	r.object(func(key []byte) {
		if d.head(key, &f, h) {
			return
		}
		if string(key) == "choices" {
			readChoices(&f, &c.Choices, d.chatChoice)
			return
		}
		f.unknown(key, headFields)
	})
	return r.end()
}

// decodeText decodes data into c, which must be empty, and reports whether
// it could.
func (d *chunkDecoder) decodeText(data []byte, c *TextCompletion) bool {
	r := &d.r
	r.reset(data)
	f := fields{r: r}
	h := chunkHead{&c.ID, &c.Object, &c.Model, &c.ServiceTier, &c.SystemFingerprint, &c.Created, &c.Usage}
	r.object(func(key []byte) {
		if d.head(key, &f, h) {
			return
		}
		switch string(key) {
		case "choices":
			readChoices(&f, &c.Choices, d.textChoice)
		case "kv_transfer_params":
			f.onlyNull(8)
		default:
			f.unknown(key, textHeadFields)
		}
	})
	return r.end()
}

// head reads the member key into h if it is one of the fields that chat
// and text chunks share (other than choices), and reports whether it was.
func (d *chunkDecoder) head(key []byte, f *fields, h chunkHead) bool {
	r := f.r
	switch string(key) {
	case "id":
		f.str(0, h.id, &d.id)
	case "object":
		f.str(1, h.object, &d.object)
	case "created":
		if f.first(2) {
			*h.created = r.integer()
		}
	case "model":
		f.str(3, h.model, &d.model)
	case "service_tier":
		f.str(5, h.tier, &d.tier)
	case "system_fingerprint":
		f.str(6, h.fingerprint, &d.fingerprint)
	case "usage":
		if f.first(7) {
			*h.usage = d.readUsage()
		}
	default:
		return false
	}
	return true
}

// chunkHead points at the fields that chat and text chunks (and
// completions) share, other than choices.
type chunkHead struct {
	id, object, model, tier, fingerprint *string
	created                              *int64
	usage                                **Usage
}

// readChoices reads the choices member of a chunk (field 4 of
// headFields) into *list, each element with read.
func readChoices[T any](f *fields, list *[]T, read func(*T)) {
	if !f.first(4) {
		return
	}
	r := f.r
	if *list == nil && r.ws() == '[' {
		*list = []T{} // [] decodes as empty, not nil
	}
	r.array(func() {
		*list = append(*list, *new(T))
		read(&(*list)[len(*list)-1])
	})
}

// readUsage reads a usage object into the decoder's storage; null reads
// as nil.
func (d *chunkDecoder) readUsage() *Usage {
	r := &d.r
	if r.null() {
		return nil
	}
	d.usage = Usage{}
	f := fields{r: r}
	r.object(func(key []byte) {
		u := &d.usage
		switch string(key) {
		case "prompt_tokens":
			f.integer(0, &u.PromptTokens)
		case "completion_tokens":
			f.integer(1, &u.CompletionTokens)
		case "total_tokens":
			f.integer(2, &u.TotalTokens)
		case "prompt_tokens_details":
			if f.first(3) && !r.null() {
				d.details = PromptTokensDetails{}
				u.PromptTokensDetails = &d.details
				g := fields{r: r}
				r.object(func(key []byte) {
					if string(key) == "cached_tokens" {
						g.integer(0, &d.details.CachedTokens)
						return
					}
					g.unknown(key, detailsFields)
				})
			}
		default:
			f.unknown(key, usageFields)
		}
	})
	return &d.usage
}

// chatChoice reads one choice of a chat chunk into ch, which is empty.
func (d *chunkDecoder) chatChoice(ch *ChatChunkChoice) {
	r := &d.r
	f := fields{r: r}
	r.object(func(key []byte) {
		switch {
		case d.choiceField(key, &f, &ch.Index, &ch.FinishReason, &ch.StopReason):
		case string(key) == "delta":
			if f.first(1) {
				d.delta(&ch.Delta)
			}
		default:
			f.unknown(key, chatChoiceField)
		}
	})
}

// delta reads the delta of a chat choice into dl, which is empty.
func (d *chunkDecoder) delta(dl *ChatDelta) {
	r := &d.r
	f := fields{r: r}
	r.object(func(key []byte) {
		switch string(key) {
		case "role":
			f.str(0, &dl.Role, &d.role)
		case "content":
			f.str(1, &dl.Content, &d.text)
		case "reasoning_content":
			f.str(2, &dl.ReasoningContent, &d.text)
		case "refusal":
			f.str(3, &dl.Refusal, &d.text)
		case "function_call":
			f.onlyNull(4)
		case "tool_calls":
			if f.first(5) {
				if r.ws() == '[' {
					dl.ToolCalls = []ToolCallDelta{} // [] decodes as empty, not nil
				}
				r.array(r.fail)
			}
		default:
			f.unknown(key, deltaFields)
		}
	})
}

// textChoice reads one choice of a text chunk into ch, which is empty.
func (d *chunkDecoder) textChoice(ch *TextChoice) {
	r := &d.r
	f := fields{r: r}
	r.object(func(key []byte) {
		switch {
		case d.choiceField(key, &f, &ch.Index, &ch.FinishReason, &ch.StopReason):
		case string(key) == "text":
			f.str(1, &ch.Text, &d.text)
		case string(key) == "prompt_logprobs":
			f.onlyNull(5)
		default:
			f.unknown(key, textChoiceField)
		}
	})
}

// choiceField reads the member key into the fields that chat and text
// choices share (index, logprobs, finish_reason and stop_reason, at the
// same places in chatChoiceField and textChoiceField) if it is one of
// them, and reports whether it was.
func (d *chunkDecoder) choiceField(key []byte, f *fields, index *int, finish *string, stop *StringOrNumber) bool {
	switch string(key) {
	case "index":
		f.integer(0, index)
	case "logprobs":
		f.onlyNull(2)
	case "finish_reason":
		f.str(3, finish, &d.finish)
	case "stop_reason":
		if f.first(4) {
			*stop = d.stopReason()
		}
	default:
		return false
	}
	return true
}

// stopReason reads a [StringOrNumber]: a string, a number kept as its
// literal text, or null.
func (d *chunkDecoder) stopReason() StringOrNumber {
	r := &d.r
	switch c := r.ws(); {
	case c == '"' || c == 'n':
		return StringOrNumber(d.stop.get(r.str()))
	case c == '-' || '0' <= c && c <= '9':
		return StringOrNumber(d.stop.get(r.number()))
	}
	r.fail()
	return ""
}
