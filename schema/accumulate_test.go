package schema

import (
	"encoding/json"
	"errors"
	"reflect"
	"testing"
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
		if err := acc.AddEvent(Event{Data: json.RawMessage(p)}); err != nil {
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
	acc.AddEvent(Event{Data: json.RawMessage(`{"id":"c","choices":[{"index":0,"text":"If"}]}`)})
	if _, err := acc.Result(); !errors.Is(err, ErrIncomplete) {
		t.Errorf("cut off: %v", err)
	}
	if err := acc.AddEvent(Event{Data: json.RawMessage(`{"error":"boom","code":424}`)}); err == nil || err.Error() != "schema: model error 424: boom" {
		t.Errorf("error payload: %v", err)
	}
	if err := acc.AddEvent(Event{Done: true}); err != nil || !acc.Done() || !acc.Complete() {
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
		if err := acc.AddEvent(Event{Data: json.RawMessage(p)}); err != nil {
			t.Fatal(err)
		}
	}
	got, err := acc.Result()
	if !errors.Is(err, ErrIncomplete) || got.GeneratedText != "Hi there" || got.Details != nil {
		t.Errorf("cut off: %+v, %v", got, err)
	}
	acc.AddEvent(Event{Data: json.RawMessage(`{"token":{"id":4,"text":"!","log_prob":-0.3},"generated_text":"Hi there!"}`)})
	got, err = acc.Result()
	if err != nil || got.GeneratedText != "Hi there!" || got.Details != nil {
		t.Errorf("final: %+v, %v", got, err)
	}

	// Details listing tokens are kept as sent.
	acc.Reset()
	acc.AddEvent(Event{Data: json.RawMessage(`{"token":{"id":4,"text":"!","log_prob":-0.3},"details":{"finish_reason":"eos_token","generated_tokens":1,"tokens":[{"id":9,"text":"x","log_prob":0}]}}`)})
	got, _ = acc.Result()
	if got.GeneratedText != "!" || len(got.Details.Tokens) != 1 || got.Details.Tokens[0].ID != 9 {
		t.Errorf("details with tokens: %+v", got)
	}
	if !acc.Complete() {
		t.Error("a line with details is the last line")
	}
}
