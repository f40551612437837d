package schema

import (
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/sagemaker-bidi/sagemaker-bidi/schema/framing"
)

func TestCompletionAccumulator(t *testing.T) {
	var acc CompletionAccumulator
	for _, p := range []string{
		`{"id":"cmpl-1","object":"text_completion","created":9,"model":"m","choices":[{"index":1,"text":"Best","logprobs":{"tokens":["Best"],"token_logprobs":[-0.5],"text_offset":[0],"top_logprobs":[{"Best":-0.5}]},"finish_reason":null,"prompt_logprobs":[null,{"12":{"logprob":-1,"rank":1,"decoded_token":"x"}}]}],"usage":null}`,
		`{"id":"cmpl-1","object":"text_completion","created":9,"model":"m","choices":[{"index":0,"text":"To","finish_reason":null}],"usage":null}`,
		`{"id":"cmpl-1","object":"text_completion","created":9,"model":"m","choices":[{"index":1,"text":" care","logprobs":[{"tokens":[" care"],"token_logprobs":[-0.25],"text_offset":[4],"top_logprobs":[null]}],"finish_reason":"length"}]}`,
		`{"id":"cmpl-1","object":"text_completion","created":9,"model":"m","choices":[{"index":0,"text":" keep","finish_reason":"stop","stop_reason":"\n"}],"usage":{"prompt_tokens":2,"completion_tokens":4,"total_tokens":6},"kv_transfer_params":{"k":1}}`,
	} {
		if acc.Complete() {
			t.Fatal("complete too early")
		}
		if err := acc.AddEvent(framing.Event{Data: json.RawMessage(p)}); err != nil {
			t.Fatal(err)
		}
	}
	got, err := acc.Result()
	if err != nil {
		t.Fatal(err)
	}
	want := &TextCompletion{ID: "cmpl-1", Object: "text_completion", Created: 9, Model: "m",
		Usage:            &Usage{PromptTokens: 2, CompletionTokens: 4, TotalTokens: 6},
		KVTransferParams: map[string]any{"k": 1.0},
		Choices: []TextChoice{
			{Index: 0, Text: "To keep", FinishReason: "stop", StopReason: "\n"},
			{Index: 1, Text: "Best care", FinishReason: "length",
				Logprobs: &CompletionLogprobs{Tokens: []string{"Best", " care"}, TokenLogprobs: []float64{-0.5, -0.25},
					TextOffset: []int{0, 4}, TopLogprobs: []map[string]float64{{"Best": -0.5}, nil}},
				PromptLogprobs: []map[string]PromptLogprob{nil, {"12": {Logprob: -1, Rank: 1, DecodedToken: "x"}}}},
		},
	}
	if !reflect.DeepEqual(got, want) {
		g, _ := json.Marshal(got)
		w, _ := json.Marshal(want)
		t.Errorf("got  %s\nwant %s", g, w)
	}

	acc.Reset()
	acc.AddEvent(framing.Event{Data: json.RawMessage(`{"id":"c","choices":[{"index":0,"text":"If"}]}`)})
	if _, err := acc.Result(); !errors.Is(err, ErrIncomplete) {
		t.Errorf("cut off: %v", err)
	}
	if err := acc.AddEvent(framing.Event{Data: json.RawMessage(`{"error":"boom","code":424}`)}); err == nil || err.Error() != "schema: model error 424: boom" {
		t.Errorf("error payload: %v", err)
	}
	if err := acc.AddEvent(framing.Event{Done: true}); err != nil || !acc.Done() || !acc.Complete() {
		t.Errorf("[DONE]: %v", err)
	}
}

func TestLMIAccumulator(t *testing.T) {
	// Without details: generated_text only, from the tokens if the last
	// line does not repeat it; special tokens are not text.
	var acc LMIAccumulator
	for _, p := range []string{
		`{"token":{"id":1,"text":"<s>","log_prob":0,"special_token":true}}`,
		`{"token":{"id":2,"text":"Hi","log_prob":-0.1}}`,
		`{"token":{"id":3,"text":" there","log_prob":-0.2}}`,
	} {
		if err := acc.AddEvent(framing.Event{Data: json.RawMessage(p)}); err != nil {
			t.Fatal(err)
		}
	}
	got, err := acc.Result()
	if !errors.Is(err, ErrIncomplete) || got.GeneratedText != "Hi there" || got.Details != nil {
		t.Errorf("cut off: %+v, %v", got, err)
	}
	acc.AddEvent(framing.Event{Data: json.RawMessage(`{"token":{"id":4,"text":"!","log_prob":-0.3},"generated_text":"Hi there!"}`)})
	got, err = acc.Result()
	if err != nil || got.GeneratedText != "Hi there!" || got.Details != nil {
		t.Errorf("final: %+v, %v", got, err)
	}

	// Details listing tokens are kept as sent.
	acc.Reset()
	acc.AddEvent(framing.Event{Data: json.RawMessage(`{"token":{"id":4,"text":"!","log_prob":-0.3},"details":{"finish_reason":"eos_token","generated_tokens":1,"tokens":[{"id":9,"text":"x","log_prob":0}]}}`)})
	got, _ = acc.Result()
	if got.GeneratedText != "!" || len(got.Details.Tokens) != 1 || got.Details.Tokens[0].ID != 9 {
		t.Errorf("details with tokens: %+v", got)
	}
	if !acc.Complete() {
		t.Error("a line with details is the last line")
	}
}

func TestCompletionAccumulatorFinishReasonError(t *testing.T) {
	var acc CompletionAccumulator
	if err := acc.AddEvent(framing.Event{Data: json.RawMessage(`{"id":"c","choices":[{"index":0,"text":"Hi"}]}`)}); err != nil {
		t.Fatal(err)
	}
	err := acc.AddEvent(framing.Event{Data: json.RawMessage(`{"id":"c","choices":[{"index":0,"text":"!","finish_reason":"error"}]}`)})
	var gen *GenerationError
	if !errors.As(err, &gen) || gen.Choice != 0 {
		t.Fatalf("AddEvent: got %v, want a *GenerationError", err)
	}
	acc.AddEvent(framing.Event{Done: true})
	got, err := acc.Result()
	if !errors.As(err, &gen) || gen.Choice != 0 || got.Choices[0].Text != "Hi!" || got.Choices[0].FinishReason != "error" {
		t.Fatalf("Result: %+v, %v", got, err)
	}
}

func TestCompletionAccumulatorResultSharesNoMemory(t *testing.T) {
	chunk := `{"id":"c","choices":[{"index":0,"text":"a","logprobs":{"tokens":["a"],"token_logprobs":[-1],"text_offset":[0],"top_logprobs":[{"a":-1}]},` +
		`"prompt_logprobs":[null,{"1":{"logprob":-1,"rank":1,"decoded_token":"p"}}],"finish_reason":"stop"}],` +
		`"usage":{"prompt_tokens":1,"completion_tokens":1,"total_tokens":2,"prompt_tokens_details":{"cached_tokens":1}},"kv_transfer_params":{"k":{"n":[1,{"m":2}]}}}`
	for _, viaChunk := range []bool{false, true} {
		var acc CompletionAccumulator
		var c TextCompletion
		if err := json.Unmarshal([]byte(chunk), &c); err != nil {
			t.Fatal(err)
		}
		if viaChunk {
			acc.AddChunk(&c)
			c.KVTransferParams["k"].(map[string]any)["n"].([]any)[0] = 9.0
			c.Choices[0].PromptLogprobs[1]["1"] = PromptLogprob{}
			c.Choices[0].Logprobs.TopLogprobs[0]["a"] = 9
		} else {
			acc.AddEvent(framing.Event{Data: json.RawMessage(chunk)})
		}
		want := snapshot(acc.Result())
		first, _ := acc.Result()
		first.Usage.PromptTokensDetails.CachedTokens = 7
		first.KVTransferParams["x"] = 1
		first.KVTransferParams["k"].(map[string]any)["n"].([]any)[1].(map[string]any)["m"] = 7.0
		ch := &first.Choices[0]
		ch.PromptLogprobs[1]["1"] = PromptLogprob{Rank: 7}
		ch.PromptLogprobs[0] = map[string]PromptLogprob{}
		ch.Logprobs.Tokens[0] = "z"
		ch.Logprobs.TopLogprobs[0]["a"] = 7
		if got := snapshot(acc.Result()); got != want {
			t.Errorf("viaChunk %v: changing a result changed the next:\n got %s\nwant %s", viaChunk, got, want)
		}
		for _, s := range []string{`"kv_transfer_params":{"k":{"n":[1,{"m":2}]}}`, `"top_logprobs":[{"a":-1}]`, `"rank":1`} {
			if !strings.Contains(want, s) {
				t.Errorf("viaChunk %v: changing the chunk changed the result: %s lacks %s", viaChunk, want, s)
			}
		}
	}
}

func TestLMIAccumulatorResultSharesNoMemory(t *testing.T) {
	line := `{"token":{"id":1,"text":"a","log_prob":-1},"generated_text":"a","details":{"finish_reason":"length","generated_tokens":1,` +
		`"tokens":[{"id":1,"text":"a","log_prob":-1}],"prefill":[{"id":2,"text":"p","log_prob":-2}],"best_of_sequences":[{"generated_text":"b","tokens":[{"id":3,"text":"b","log_prob":-3}]}]}}`
	var l LMIStreamLine
	if err := json.Unmarshal([]byte(line), &l); err != nil {
		t.Fatal(err)
	}
	var acc LMIAccumulator
	acc.AddLine(&l)
	l.Details.Tokens[0].Text = "x" // the line added is not kept
	want := snapshot(acc.Result())
	first, _ := acc.Result()
	first.Details.Tokens[0].Text = "z"
	first.Details.Prefill[0].Text = "z"
	first.Details.BestOfSequences[0].Tokens[0].Text = "z"
	first.Details.BestOfSequences[0].GeneratedText = "z"
	if got := snapshot(acc.Result()); got != want || strings.Contains(want, `"x"`) {
		t.Errorf("changing a result changed the next:\n got %s\nwant %s", got, want)
	}
}
