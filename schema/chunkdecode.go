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

// str reads field n, a string, into *dst, reusing last's string when it
// repeats.
func (f *fields) str(n int, dst *string, last *recent) {
	if f.first(n) {
		*dst = last.get(f.r.str())
	}
}

// null reads field n, which the decoder handles only as null: any other
// value fails.
func (f *fields) null(n int) {
	if f.first(n) && !f.r.null() {
		f.r.fail()
	}
}

// readInt reads field n of f, an integer, into *dst.
func readInt[T int | int64](f *fields, n int, dst *T) {
	if f.first(n) {
		*dst = T(f.r.integer())
	}
}

// readList reads field n of f, an array, into *list, which is empty (its
// storage is reused), with elem reading each element into the zero value
// appended for it. An empty array decodes as an empty list, not nil, as
// with encoding/json.
func readList[T any](f *fields, n int, list *[]T, elem func(*T)) {
	if !f.first(n) {
		return
	}
	r := f.r
	if *list == nil && r.ws() == '[' {
		*list = []T{}
	}
	r.array(func() {
		*list = append(*list, *new(T))
		elem(&(*list)[len(*list)-1])
	})
}

// members reads an object whose known fields are names, tracked by f,
// calling member for each key (with the reader before its value); member
// reads the value of a key it knows and reports whether it did. Other
// keys are checked and skipped (see fields.unknown).
//
// The callbacks of the decoder take no *fields: f would escape through
// them. They use the one their caller declared.
func (d *chunkDecoder) members(f *fields, names []string, member func(key []byte) bool) {
	d.r.object(func(key []byte) {
		if !member(key) {
			f.unknown(key, names)
		}
	})
}

// chunkHead points at the fields that chat and text chunks share, other
// than choices.
type chunkHead struct {
	id, object, model, tier, fingerprint *string
	created                              *int64
	usage                                **Usage
}

// decodeChunk decodes data, a chat or text chunk whose fields are names,
// tracked by f, and reports whether it could: the fields the two share
// into h, the others (choices among them) with rest, which reads the
// value of a key it knows and reports whether it did.
func (d *chunkDecoder) decodeChunk(data []byte, h chunkHead, f *fields, names []string, rest func(key []byte) bool) bool {
	d.r.reset(data)
	d.members(f, names, func(key []byte) bool {
		switch string(key) {
		case "id":
			f.str(0, h.id, &d.id)
		case "object":
			f.str(1, h.object, &d.object)
		case "created":
			readInt(f, 2, h.created)
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
			return rest(key)
		}
		return true
	})
	return d.r.end()
}

// decodeChat decodes data into c, which must be empty, and reports whether
// it could.
func (d *chunkDecoder) decodeChat(data []byte, c *ChatCompletionChunk) bool {
	f := fields{r: &d.r}
	return d.decodeChunk(data, c.fields(), &f, headFields, func(key []byte) bool {
		if string(key) != "choices" {
			return false
		}
		readList(&f, 4, &c.Choices, d.chatChoice)
		return true
	})
}

// decodeText decodes data into c, which must be empty, and reports whether
// it could.
func (d *chunkDecoder) decodeText(data []byte, c *TextCompletion) bool {
	f := fields{r: &d.r}
	return d.decodeChunk(data, c.fields(), &f, textHeadFields, func(key []byte) bool {
		switch string(key) {
		case "choices":
			readList(&f, 4, &c.Choices, d.textChoice)
		case "kv_transfer_params":
			f.null(8)
		default:
			return false
		}
		return true
	})
}

// readUsage reads a usage object into the decoder's storage; null reads
// as nil.
func (d *chunkDecoder) readUsage() *Usage {
	if d.r.null() {
		return nil
	}
	d.usage = Usage{}
	u := &d.usage
	f := fields{r: &d.r}
	d.members(&f, usageFields, func(key []byte) bool {
		switch string(key) {
		case "prompt_tokens":
			readInt(&f, 0, &u.PromptTokens)
		case "completion_tokens":
			readInt(&f, 1, &u.CompletionTokens)
		case "total_tokens":
			readInt(&f, 2, &u.TotalTokens)
		case "prompt_tokens_details":
			if f.first(3) && !d.r.null() {
				d.details = PromptTokensDetails{}
				u.PromptTokensDetails = &d.details
				g := fields{r: &d.r}
				d.members(&g, detailsFields, func(key []byte) bool {
					if string(key) != "cached_tokens" {
						return false
					}
					readInt(&g, 0, &d.details.CachedTokens)
					return true
				})
			}
		default:
			return false
		}
		return true
	})
	return u
}

// choice reads a chat or text choice whose fields are names, tracked by
// f: the fields the two share into index, finish and stop (logprobs only
// as null), the others with rest, which reads the value of a key it knows
// and reports whether it did.
func (d *chunkDecoder) choice(f *fields, names []string, index *int, finish *string, stop *StringOrNumber, rest func(key []byte) bool) {
	d.members(f, names, func(key []byte) bool {
		switch string(key) {
		case "index":
			readInt(f, 0, index)
		case "logprobs":
			f.null(2)
		case "finish_reason":
			f.str(3, finish, &d.finish)
		case "stop_reason":
			if f.first(4) {
				*stop = d.stopReason()
			}
		default:
			return rest(key)
		}
		return true
	})
}

// chatChoice reads one choice of a chat chunk into ch, which is empty.
func (d *chunkDecoder) chatChoice(ch *ChatChunkChoice) {
	f := fields{r: &d.r}
	d.choice(&f, chatChoiceField, &ch.Index, &ch.FinishReason, &ch.StopReason, func(key []byte) bool {
		if string(key) != "delta" {
			return false
		}
		if f.first(1) {
			d.delta(&ch.Delta)
		}
		return true
	})
}

// textChoice reads one choice of a text chunk into ch, which is empty.
func (d *chunkDecoder) textChoice(ch *TextChoice) {
	f := fields{r: &d.r}
	d.choice(&f, textChoiceField, &ch.Index, &ch.FinishReason, &ch.StopReason, func(key []byte) bool {
		switch string(key) {
		case "text":
			f.str(1, &ch.Text, &d.text)
		case "prompt_logprobs":
			f.null(5)
		default:
			return false
		}
		return true
	})
}

// delta reads the delta of a chat choice into dl, which is empty.
func (d *chunkDecoder) delta(dl *ChatDelta) {
	f := fields{r: &d.r}
	d.members(&f, deltaFields, func(key []byte) bool {
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
			f.null(4)
		case "tool_calls":
			// Only an empty list decodes here; a tool call fails.
			readList(&f, 5, &dl.ToolCalls, func(*ToolCallDelta) { d.r.fail() })
		default:
			return false
		}
		return true
	})
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
