package schema

import (
	"cmp"
	"strings"

	"github.com/sagemaker-bidi/sagemaker-bidi/schema/framing"
)

// ChatAccumulator rebuilds, from the chunks of a streamed chat completion,
// the [ChatCompletion] a non-streaming call returns: per choice index the
// role, the content, reasoning content and refusal concatenated, tool
// calls merged by index with their argument strings concatenated, the
// finish and stop reasons, and the log probabilities; and the usage of the
// chunk that carries it.
//
// A choice whose finish_reason is "error" (LMI reports a generation that
// failed mid-stream that way) is a failure, not a result: AddChunk and
// AddEvent return a [*GenerationError] naming it, after merging the
// chunk, and so does Result, together with what was rebuilt.
//
// Tool call deltas are merged by their index. A server that omits the
// index gets its deltas merged by ID, else by position: see
// [ToolCallDelta].
//
// The zero value is ready to use. Feed it every event of one response,
// [DONE] included, then call Result; call Reset before the next response
// of the session. A ChatAccumulator is not safe for concurrent use.
type ChatAccumulator struct {
	core core[ChatCompletionChunk, *ChatCompletionChunk, chatChoice, *chatChoice]
}

type chatChoice struct {
	ending
	role      string
	content   strings.Builder
	reasoning strings.Builder
	refusal   strings.Builder
	function  *toolCall
	toolCalls []*toolCall
	lastCall  int // index of the tool call the last delta went to
	logprobs  *Logprobs
}

type toolCall struct {
	index int
	id    string
	typ   string
	name  string
	args  strings.Builder
}

func (t *toolCall) key() int { return t.index }

// merge adds a delta to the call: id, type and name are taken from the
// deltas that carry them, argument pieces are concatenated.
func (t *toolCall) merge(id, typ string, fn FunctionCall) {
	t.id = cmp.Or(id, t.id)
	t.typ = cmp.Or(typ, t.typ)
	t.name = cmp.Or(fn.Name, t.name)
	t.args.WriteString(fn.Arguments)
}

func (t *toolCall) function() FunctionCall {
	return FunctionCall{Name: t.name, Arguments: t.args.String()}
}

// AddEvent adds one event of the stream: a chunk, or the [DONE] marker.
// It returns the [*ErrorResponse] of an error payload, decoding errors as
// [framing.Event.Decode] does, and the errors of AddChunk.
func (a *ChatAccumulator) AddEvent(ev framing.Event) error {
	return a.core.addEvent(ev, a.merge)
}

// AddChunk merges one decoded chunk. It keeps no reference to c. It
// returns a [*GenerationError] if a choice of the chunk has finish reason
// "error", and an error matching [ErrTooManyChoices] for a chunk that
// would exceed the limit.
func (a *ChatAccumulator) AddChunk(c *ChatCompletionChunk) error {
	return a.core.add(c, false, a.merge)
}

// merge merges the choices of c (see core.add).
func (a *ChatAccumulator) merge(c *ChatCompletionChunk, owned bool) error {
	for i := range c.Choices {
		cc := &c.Choices[i]
		ch, err := a.core.choice(cc.Index)
		if err != nil {
			return err
		}
		d := &cc.Delta
		ch.role = cmp.Or(d.Role, ch.role)
		ch.content.WriteString(d.Content)
		ch.reasoning.WriteString(d.ReasoningContent)
		ch.refusal.WriteString(d.Refusal)
		if d.FunctionCall != nil {
			if ch.function == nil {
				ch.function = new(toolCall)
			}
			ch.function.merge("", "", *d.FunctionCall)
		}
		for j := range d.ToolCalls {
			td := &d.ToolCalls[j]
			index := td.Index
			if td.noIndex {
				index = ch.toolIndex(td.ID, j)
			}
			tc, err := entry(&ch.toolCalls, index, func(i int) *toolCall { return &toolCall{index: i} })
			if err != nil {
				return err
			}
			tc.merge(td.ID, td.Type, td.Function)
			ch.lastCall = index
		}
		mergeLogprobs(&ch.logprobs, cc.Logprobs, owned)
		a.core.endChoice(ch, cc.FinishReason, cc.StopReason)
	}
	return nil
}

// toolIndex returns the index of the tool call that a delta without an
// index belongs to, given its ID and its position among the deltas of
// the choice in its chunk: the call with that ID; without an ID, the call
// the previous delta went to if the delta comes first in its chunk (the
// rest of a call's arguments); else a new call.
func (ch *chatChoice) toolIndex(id string, pos int) int {
	if id != "" {
		for _, t := range ch.toolCalls {
			if t.id == id {
				return t.index
			}
		}
	} else if pos == 0 && len(ch.toolCalls) > 0 {
		return ch.lastCall
	}
	next := 0
	for _, t := range ch.toolCalls {
		next = max(next, t.index+1)
	}
	return next
}

// Done reports whether the [DONE] marker was added.
func (a *ChatAccumulator) Done() bool { return a.core.done }

// Complete reports whether the response ended: [DONE] was added, or
// every choice received its finish reason ("error" included).
func (a *ChatAccumulator) Complete() bool { return a.core.complete() }

// Result returns the completion rebuilt so far, choices in index order,
// with an error if it is not a successful result: a [*GenerationError]
// if a choice has finish reason "error" (the first such choice in index
// order), else, if the response is not [ChatAccumulator.Complete], an
// error matching [ErrIncomplete]: the stream was cut off. The returned
// completion shares no memory with the accumulator: chunks added later
// do not change it, and changing it does not change later results.
func (a *ChatAccumulator) Result() (*ChatCompletion, error) {
	out := ChatCompletion{Object: "chat.completion"}
	a.core.head.fill(chunkHead{&out.ID, &out.Object, &out.Model, &out.ServiceTier, &out.SystemFingerprint, &out.Created, &out.Usage})
	out.Choices = results(&a.core, func(c *chatChoice, ch *ChatChoice) {
		ch.Index = c.index
		ch.FinishReason = c.finish
		ch.StopReason = c.stop
		ch.Logprobs = c.logprobs.clone()
		m := &ch.Message
		m.Role = c.role
		m.Content = c.content.String()
		m.ReasoningContent = c.reasoning.String()
		m.Refusal = c.refusal.String()
		if c.function != nil {
			fn := c.function.function()
			m.FunctionCall = &fn
		}
		if len(c.toolCalls) > 0 {
			calls := sortedByIndex(c.toolCalls)
			m.ToolCalls = make([]ToolCall, len(calls))
			for j, t := range calls {
				m.ToolCalls[j] = ToolCall{ID: t.id, Type: t.typ, Function: t.function()}
			}
		}
	})
	return &out, a.core.err()
}

// Reset forgets the response, ready for the next one.
func (a *ChatAccumulator) Reset() { a.core.reset() }

// The methods of ChatCompletionChunk as the core's decoding buffer.

func (c *ChatCompletionChunk) clear() { clearChunk(c, &c.Choices) }

func (c *ChatCompletionChunk) decodeFast(d *chunkDecoder, data []byte) bool {
	return d.decodeChat(data, c)
}

func (c *ChatCompletionChunk) head() head {
	return head{c.ID, c.Created, c.Model, c.ServiceTier, c.SystemFingerprint, c.Usage}
}

func (c *ChatCompletionChunk) bare() bool {
	return c.Object == "error" || c.ID == "" && len(c.Choices) == 0 && c.Usage == nil
}
