package schema

import (
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/sagemaker-bidi/sagemaker-bidi/schema/framing"
)

// feedChat adds the given chunk payloads (and [DONE] for "[DONE]") to a
// new accumulator through AddEvent.
func feedChat(t *testing.T, payloads ...string) *ChatAccumulator {
	t.Helper()
	var acc ChatAccumulator
	for _, p := range payloads {
		ev := framing.Event{Data: json.RawMessage(p)}
		if p == "[DONE]" {
			ev = framing.Event{Done: true}
		}
		if err := acc.AddEvent(ev); err != nil {
			t.Fatalf("%s: %v", p, err)
		}
	}
	return &acc
}

func TestChatAccumulatorToolCallsAndChoices(t *testing.T) {
	acc := feedChat(t,
		`{"id":"c1","object":"chat.completion.chunk","created":5,"model":"m","choices":[{"index":1,"delta":{"role":"assistant","content":"B"}},{"index":0,"delta":{"role":"assistant","tool_calls":[{"index":0,"id":"call_a","type":"function","function":{"name":"get_weather","arguments":""}}]}}]}`,
		`{"id":"c1","choices":[{"index":0,"delta":{"tool_calls":[{"index":1,"id":"call_b","type":"function","function":{"name":"get_time","arguments":"{\"tz\":"}}]}}]}`,
		`{"id":"c1","choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"{\"city\":"}}]}}]}`,
		`{"id":"c1","choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"\"Paris\"}"}},{"index":1,"function":{"arguments":"\"UTC\"}"}}]},"finish_reason":"tool_calls"}]}`,
		`{"id":"c1","choices":[{"index":1,"delta":{"content":"ye","refusal":"no"},"finish_reason":"stop","stop_reason":128001}]}`,
		`{"id":"c1","choices":[],"usage":{"prompt_tokens":3,"completion_tokens":4,"total_tokens":7},"system_fingerprint":"fp","service_tier":"default"}`,
	)
	if !acc.Complete() || acc.Done() {
		t.Errorf("Complete=%v Done=%v, want a response finished by its finish reasons", acc.Complete(), acc.Done())
	}
	got, err := acc.Result()
	if err != nil {
		t.Fatal(err)
	}
	want := &ChatCompletion{
		ID: "c1", Object: "chat.completion", Created: 5, Model: "m", SystemFingerprint: "fp", ServiceTier: "default",
		Usage: &Usage{PromptTokens: 3, CompletionTokens: 4, TotalTokens: 7},
		Choices: []ChatChoice{
			{Index: 0, FinishReason: "tool_calls", Message: ChatCompletionMessage{Role: "assistant", ToolCalls: []ToolCall{
				{ID: "call_a", Type: "function", Function: FunctionCall{Name: "get_weather", Arguments: `{"city":"Paris"}`}},
				{ID: "call_b", Type: "function", Function: FunctionCall{Name: "get_time", Arguments: `{"tz":"UTC"}`}},
			}}},
			{Index: 1, FinishReason: "stop", StopReason: "128001", Message: ChatCompletionMessage{Role: "assistant", Content: "Bye", Refusal: "no"}},
		},
	}
	if !reflect.DeepEqual(got, want) {
		g, _ := json.Marshal(got)
		w, _ := json.Marshal(want)
		t.Errorf("got  %s\nwant %s", g, w)
	}
}

func TestChatAccumulatorLegacyFunctionCallAndLogprobs(t *testing.T) {
	acc := feedChat(t,
		`{"id":"x","choices":[{"index":0,"delta":{"function_call":{"name":"f","arguments":"{\"a\""}},"logprobs":{"content":[{"token":"{","logprob":-0.1,"top_logprobs":[]}]}}]}`,
		`{"id":"x","choices":[{"index":0,"delta":{"function_call":{"arguments":":1}"}},"logprobs":[{"content":[{"token":"a","logprob":-0.2,"top_logprobs":[{"token":7,"logprob":-0.2}]}]}]}]}`,
		"[DONE]",
	)
	got, err := acc.Result()
	if err != nil {
		t.Fatal(err)
	}
	c := got.Choices[0]
	if *c.Message.FunctionCall != (FunctionCall{Name: "f", Arguments: `{"a":1}`}) {
		t.Errorf("function call %+v", c.Message.FunctionCall)
	}
	if lp := c.Logprobs.Content; len(lp) != 2 || lp[0].Token != "{" || lp[1].TopLogprobs[0].Token != "7" {
		t.Errorf("logprobs %+v", c.Logprobs)
	}
}

func TestChatAccumulatorIncomplete(t *testing.T) {
	var empty ChatAccumulator
	if _, err := empty.Result(); !errors.Is(err, ErrIncomplete) {
		t.Errorf("empty: %v", err)
	}
	acc := feedChat(t,
		`{"id":"x","choices":[{"index":0,"delta":{"content":"Hel"}},{"index":1,"delta":{"content":"A"},"finish_reason":"stop"}]}`,
	)
	got, err := acc.Result()
	if !errors.Is(err, ErrIncomplete) || acc.Complete() || !strings.Contains(err.Error(), "choice 0") {
		t.Fatalf("cut-off stream: %v", err)
	}
	if got.Choices[0].Message.Content != "Hel" {
		t.Errorf("partial result %+v", got)
	}
	// [DONE] is authoritative.
	acc.AddEvent(framing.Event{Done: true})
	if _, err := acc.Result(); err != nil {
		t.Errorf("after [DONE]: %v", err)
	}
}

func TestChatAccumulatorResultIsASnapshot(t *testing.T) {
	acc := feedChat(t, `{"id":"x","choices":[{"index":0,"delta":{"content":"a"},"logprobs":{"content":[{"token":"a","logprob":0}]}}],"usage":{"total_tokens":1}}`)
	first, _ := acc.Result()
	feedMore := `{"id":"x","choices":[{"index":0,"delta":{"content":"b"},"logprobs":{"content":[{"token":"b","logprob":0}]},"finish_reason":"stop"}],"usage":{"total_tokens":2}}`
	if err := acc.AddEvent(framing.Event{Data: json.RawMessage(feedMore)}); err != nil {
		t.Fatal(err)
	}
	second, _ := acc.Result()
	if first.Choices[0].Message.Content != "a" || len(first.Choices[0].Logprobs.Content) != 1 || first.Usage.TotalTokens != 1 {
		t.Errorf("earlier result changed: %+v", first)
	}
	if second.Choices[0].Message.Content != "ab" || second.Usage.TotalTokens != 2 {
		t.Errorf("later result %+v", second)
	}
}

func TestChatAccumulatorErrors(t *testing.T) {
	var acc ChatAccumulator
	var er *ErrorResponse
	err := acc.AddEvent(framing.Event{Data: json.RawMessage(`{"object":"error","message":"bad","type":"BadRequestError","code":400}`)})
	if !errors.As(err, &er) || *er != (ErrorResponse{Code: 400, Message: "bad", Type: "BadRequestError"}) {
		t.Errorf("vLLM error: %v", err)
	}
	err = acc.AddEvent(framing.Event{Data: json.RawMessage(`{"error":{"message":"overloaded","type":"server_error","code":"503"}}`)})
	if !errors.As(err, &er) || *er != (ErrorResponse{Code: 503, Message: "overloaded", Type: "server_error"}) {
		t.Errorf("OpenAI error: %v", err)
	}
	// Malformed data: a syntax error at its stream offset.
	err = acc.AddEvent(framing.Event{Data: json.RawMessage(`{"id":"x",}`), Offset: 100})
	var syn *framing.SyntaxError
	if !errors.As(err, &syn) || syn.Offset != 110 {
		t.Errorf("syntax: %v", err)
	}
	// A NUL byte after the value is not the end of the data (found by
	// FuzzChunkDecoder; testdata/fuzz/FuzzChunkDecoder/nul_after_value).
	err = acc.AddEvent(framing.Event{Data: json.RawMessage("{}\x00garbage"), Offset: 40})
	if !errors.As(err, &syn) || syn.Offset != 42 {
		t.Errorf("NUL after the value: %v", err)
	}
	var text CompletionAccumulator
	if err := text.AddEvent(framing.Event{Data: json.RawMessage("{}\x00")}); !errors.As(err, &syn) {
		t.Errorf("text completion, NUL after the value: %v", err)
	}
	// A type mismatch names the event offset.
	err = acc.AddEvent(framing.Event{Data: json.RawMessage(`{"choices":{}}`), Offset: 7})
	var typ *json.UnmarshalTypeError
	if !errors.As(err, &typ) || !strings.Contains(err.Error(), "offset 7") {
		t.Errorf("type mismatch: %v", err)
	}
}

func TestChatAccumulatorTooManyChoices(t *testing.T) {
	var acc ChatAccumulator
	var b strings.Builder
	b.WriteString(`{"id":"x","choices":[`)
	for i := 0; i <= maxEntries; i++ {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(`{"index":` + itoa(i) + `,"delta":{}}`)
	}
	b.WriteString(`]}`)
	if err := acc.AddEvent(framing.Event{Data: json.RawMessage(b.String())}); !errors.Is(err, ErrTooManyChoices) {
		t.Errorf("got %v", err)
	}
}

func itoa(i int) string { b, _ := json.Marshal(i); return string(b) }

func TestChatAccumulatorReset(t *testing.T) {
	acc := feedChat(t, `{"id":"a","choices":[{"index":0,"delta":{"content":"one"},"finish_reason":"stop"}]}`, "[DONE]")
	acc.Reset()
	if acc.Done() || acc.Complete() {
		t.Fatal("Reset kept state")
	}
	acc.AddEvent(framing.Event{Data: json.RawMessage(`{"id":"b","choices":[{"index":0,"delta":{"content":"two"},"finish_reason":"stop"}]}`)})
	got, err := acc.Result()
	if err != nil || got.ID != "b" || got.Choices[0].Message.Content != "two" {
		t.Errorf("after Reset: %+v, %v", got, err)
	}
}

func TestChatAccumulatorRebuildsNonStreamingResult(t *testing.T) {
	// Seed 004's non-streaming completion, streamed the way vLLM streams
	// it, rebuilds to the same struct.
	var want ChatCompletion
	if err := json.Unmarshal(seedFile(t, "004_chat.json"), &want); err != nil {
		t.Fatal(err)
	}
	m := want.Choices[0].Message
	chunk := func(delta, finish string) string {
		f := "null"
		if finish != "" {
			f = `"` + finish + `"`
		}
		return `{"id":"` + want.ID + `","object":"chat.completion.chunk","created":` + itoa(int(want.Created)) + `,"model":"` + want.Model +
			`","choices":[{"index":0,"delta":` + delta + `,"logprobs":null,"finish_reason":` + f + `,"stop_reason":null}]}`
	}
	payloads := []string{chunk(`{"role":"assistant","content":""}`, "")}
	for _, piece := range splitWords(m.ReasoningContent) {
		payloads = append(payloads, chunk(`{"reasoning_content":`+quote(piece)+`}`, ""))
	}
	for _, piece := range splitWords(m.Content) {
		payloads = append(payloads, chunk(`{"content":`+quote(piece)+`}`, ""))
	}
	payloads = append(payloads, chunk(`{"content":""}`, "stop"),
		`{"id":"`+want.ID+`","object":"chat.completion.chunk","created":1,"model":"x","choices":[],"usage":{"prompt_tokens":234,"completion_tokens":1613,"total_tokens":1847,"prompt_tokens_details":null}}`,
		"[DONE]")
	got, err := feedChat(t, payloads...).Result()
	if err != nil {
		t.Fatal(err)
	}
	want.Choices[0].Message.ToolCalls = nil // "tool_calls": [] is no tool call
	if !reflect.DeepEqual(got, &want) {
		g, _ := json.Marshal(got)
		w, _ := json.Marshal(want)
		t.Errorf("got  %s\nwant %s", g, w)
	}
}

// splitWords cuts s before each space, keeping every byte.
func splitWords(s string) []string {
	var out []string
	for len(s) > 0 {
		i := strings.IndexByte(s[1:], ' ') + 1
		if i == 0 {
			i = len(s)
		}
		out = append(out, s[:i])
		s = s[i:]
	}
	return out
}

func quote(s string) string { b, _ := json.Marshal(s); return string(b) }

func TestChatAccumulatorFinishReasonError(t *testing.T) {
	var acc ChatAccumulator
	err := acc.AddEvent(framing.Event{Data: json.RawMessage(`{"id":"x","choices":[{"index":0,"delta":{"role":"assistant","content":"Hel"}},{"index":1,"delta":{"content":"A"},"finish_reason":"stop"}]}`)})
	if err != nil {
		t.Fatal(err)
	}
	err = acc.AddEvent(framing.Event{Data: json.RawMessage(`{"id":"x","choices":[{"index":0,"delta":{"content":"lo"},"finish_reason":"error"}]}`)})
	var gen *GenerationError
	if !errors.As(err, &gen) || gen.Choice != 0 || gen.Details.FinishReason != "error" {
		t.Fatalf("AddEvent: got %v, want a *GenerationError for choice 0", err)
	}
	acc.AddEvent(framing.Event{Done: true})
	got, err := acc.Result()
	if !errors.As(err, &gen) || gen.Choice != 0 || errors.Is(err, ErrIncomplete) {
		t.Fatalf("Result: got %v, want a *GenerationError for choice 0", err)
	}
	if c := got.Choices[0]; c.Message.Content != "Hello" || c.FinishReason != "error" || got.Choices[1].Message.Content != "A" {
		t.Errorf("partial result %+v", got)
	}
	// A failed choice is reported before a missing finish reason.
	acc.Reset()
	err = acc.AddChunk(&ChatCompletionChunk{ID: "y", Choices: []ChatChunkChoice{{Index: 0}, {Index: 2, FinishReason: "error"}, {Index: 1, FinishReason: "error"}}})
	if !errors.As(err, &gen) || gen.Choice != 1 {
		t.Fatalf("AddChunk: got %v, want a *GenerationError for choice 1", err)
	}
	if _, err := acc.Result(); !errors.As(err, &gen) || gen.Choice != 1 {
		t.Fatalf("Result: got %v, want a *GenerationError for choice 1", err)
	}
}

func TestChatAccumulatorToolCallsWithoutIndex(t *testing.T) {
	call := func(id, name, args string) ToolCall {
		return ToolCall{ID: id, Type: "function", Function: FunctionCall{Name: name, Arguments: args}}
	}
	tests := []struct {
		name   string
		chunks []string
		want   []ToolCall
	}{
		{"complete calls in one chunk", []string{
			`{"id":"x","choices":[{"index":0,"delta":{"tool_calls":[{"id":"a","type":"function","function":{"name":"f","arguments":"{}"}},{"id":"b","type":"function","function":{"name":"g","arguments":"{\"x\":1}"}}]}}]}`,
		}, []ToolCall{call("a", "f", "{}"), call("b", "g", `{"x":1}`)}},
		{"complete calls without IDs in one chunk", []string{
			`{"id":"x","choices":[{"index":0,"delta":{"tool_calls":[{"type":"function","function":{"name":"f","arguments":"{}"}},{"index":null,"type":"function","function":{"name":"g","arguments":"{}"}}]}}]}`,
		}, []ToolCall{call("", "f", "{}"), call("", "g", "{}")}},
		{"calls streamed one after the other", []string{
			`{"id":"x","choices":[{"index":0,"delta":{"tool_calls":[{"id":"a","type":"function","function":{"name":"f","arguments":""}}]}}]}`,
			`{"id":"x","choices":[{"index":0,"delta":{"tool_calls":[{"function":{"arguments":"{\"c\":"}}]}}]}`,
			`{"id":"x","choices":[{"index":0,"delta":{"tool_calls":[{"function":{"arguments":"1}"}}]}}]}`,
			`{"id":"x","choices":[{"index":0,"delta":{"tool_calls":[{"id":"b","type":"function","function":{"name":"g","arguments":"{"}}]}}]}`,
			`{"id":"x","choices":[{"index":0,"delta":{"tool_calls":[{"id":"b","function":{"arguments":"}"}}]}}]}`,
		}, []ToolCall{call("a", "f", `{"c":1}`), call("b", "g", "{}")}},
		{"indexed and unindexed", []string{
			`{"id":"x","choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"a","type":"function","function":{"name":"f","arguments":"{"}}]}}]}`,
			`{"id":"x","choices":[{"index":0,"delta":{"tool_calls":[{"function":{"arguments":"}"}},{"id":"b","type":"function","function":{"name":"g","arguments":"[]"}}]}}]}`,
		}, []ToolCall{call("a", "f", "{}"), call("b", "g", "[]")}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, _ := feedChat(t, tt.chunks...).Result()
			if !reflect.DeepEqual(got.Choices[0].Message.ToolCalls, tt.want) {
				t.Errorf("got  %+v\nwant %+v", got.Choices[0].Message.ToolCalls, tt.want)
			}
		})
	}
	// A delta built in Go uses its Index, 0 included.
	var acc ChatAccumulator
	for _, d := range []ToolCallDelta{{Index: 1, ID: "b"}, {Index: 0, ID: "a"}, {Index: 1, Function: FunctionCall{Arguments: "x"}}} {
		acc.AddChunk(&ChatCompletionChunk{ID: "x", Choices: []ChatChunkChoice{{Delta: ChatDelta{ToolCalls: []ToolCallDelta{d}}}}})
	}
	got, _ := acc.Result()
	if calls := got.Choices[0].Message.ToolCalls; len(calls) != 2 || calls[0].ID != "a" || calls[1].ID != "b" || calls[1].Function.Arguments != "x" {
		t.Errorf("Go deltas: %+v", calls)
	}
}

func TestChatAccumulatorResultSharesNoMemory(t *testing.T) {
	chunk := `{"id":"x","choices":[{"index":0,"delta":{"content":"a"},"logprobs":{"content":[{"token":"a","logprob":-1,"bytes":[97],"top_logprobs":[{"token":"a","logprob":-1,"bytes":[97]}]}],"refusal":[{"token":"r","logprob":-2,"top_logprobs":[]}]},"finish_reason":"stop"}],` +
		`"usage":{"prompt_tokens":1,"completion_tokens":1,"total_tokens":2,"prompt_tokens_details":{"cached_tokens":1}}}`
	for _, viaChunk := range []bool{false, true} {
		var acc ChatAccumulator
		var c ChatCompletionChunk
		if err := json.Unmarshal([]byte(chunk), &c); err != nil {
			t.Fatal(err)
		}
		if viaChunk {
			acc.AddChunk(&c)
			// Changing the chunk added does not change the accumulator.
			c.Usage.PromptTokensDetails.CachedTokens = 9
			lp := c.Choices[0].Logprobs.Content
			lp[0].Bytes[0], lp[0].TopLogprobs[0].Logprob, lp[0].TopLogprobs[0].Bytes[0] = 9, 9, 9
		} else {
			acc.AddEvent(framing.Event{Data: json.RawMessage(chunk)})
		}
		want := snapshot(acc.Result())
		first, _ := acc.Result()
		first.Usage.PromptTokensDetails.CachedTokens = 7
		lp := first.Choices[0].Logprobs
		lp.Content[0].Token = "z"
		lp.Content[0].Bytes[0] = 7
		lp.Content[0].TopLogprobs[0].Logprob = 7
		lp.Content[0].TopLogprobs[0].Bytes[0] = 7
		lp.Refusal[0].Token = "z"
		_ = append(lp.Content[:0], TokenLogprob{Token: "y"})
		if got := snapshot(acc.Result()); got != want {
			t.Errorf("viaChunk %v: changing a result changed the next:\n got %s\nwant %s", viaChunk, got, want)
		}
		if !strings.Contains(want, `"cached_tokens":1`) || !strings.Contains(want, `"bytes":[97]}]}]`) {
			t.Errorf("viaChunk %v: changing the chunk changed the result: %s", viaChunk, want)
		}
	}
}

// snapshot returns the JSON encoding of a result, which later changes to
// the result cannot alter.
func snapshot(v any, _ error) string {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return string(b)
}
