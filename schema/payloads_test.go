package schema

import (
	"encoding/json"
	"reflect"
	"testing"
)

func TestInputs(t *testing.T) {
	for _, tt := range []struct {
		json string
		in   Inputs
	}{
		{`"What is Deep Learning"`, Inputs{Text: "What is Deep Learning"}},
		{`["What is Deep Learning","How many ways can I peel an orange"]`, Inputs{Batch: []string{"What is Deep Learning", "How many ways can I peel an orange"}}},
		{`[]`, Inputs{Batch: []string{}}},
	} {
		var got Inputs
		if err := json.Unmarshal([]byte(tt.json), &got); err != nil || !reflect.DeepEqual(got, tt.in) {
			t.Errorf("decode %s: %+v, %v", tt.json, got, err)
		}
		if b, err := json.Marshal(tt.in); err != nil || string(b) != tt.json {
			t.Errorf("encode %+v: %s, %v", tt.in, b, err)
		}
	}
	var bad Inputs
	if err := json.Unmarshal([]byte(`{"a":1}`), &bad); err == nil {
		t.Error("an object accepted as inputs")
	}
}

func TestGenerationParametersEncoding(t *testing.T) {
	zero, temp := 0, 0.0
	p := GenerationParameters{MaxNewTokens: 256, TopK: &zero, Temperature: &temp, StopSequences: []string{"\n"}}
	b, _ := json.Marshal(LMIRequest{Inputs: Inputs{Text: "q"}, Parameters: &p, Stream: true})
	want := `{"inputs":"q","parameters":{"temperature":0,"top_k":0,"max_new_tokens":256,"stop_sequences":["\n"]},"stream":true}`
	if string(b) != want {
		t.Errorf("got  %s\nwant %s", b, want)
	}
}

func TestDetailsFinishReasonSpellings(t *testing.T) {
	for _, in := range []string{`{"finish_reason":"length"}`, `{"finish reason":"length"}`, `{"finish_reason":"length","finish reason":"eos_token"}`} {
		var d Details
		var s BestOfSequence
		if err := json.Unmarshal([]byte(in), &d); err != nil || d.FinishReason != "length" {
			t.Errorf("Details %s: %+v, %v", in, d, err)
		}
		if err := json.Unmarshal([]byte(in), &s); err != nil || s.FinishReason != "length" {
			t.Errorf("BestOfSequence %s: %+v, %v", in, s, err)
		}
	}
	var d Details
	in := `{"finish_reason":"length","generated_tokens":3,"inputs":"q","prefill":[{"id":1,"text":"q","log_prob":0}],` +
		`"best_of_sequences":[{"finish reason":"eos_token","generated_tokens":2,"generated_text":"ab","tokens":[]}],"unknown":{"x":[1]}}`
	if err := json.Unmarshal([]byte(in), &d); err != nil || len(d.Prefill) != 1 || d.BestOfSequences[0].FinishReason != "eos_token" ||
		d.BestOfSequences[0].GeneratedText != "ab" {
		t.Errorf("details %+v, %v", d, err)
	}
	if err := json.Unmarshal([]byte(`{"finish_reason":1}`), &d); err == nil {
		t.Error("a number accepted as finish_reason")
	}
}

func TestMessageContentAndStop(t *testing.T) {
	var req ChatCompletionRequest
	in := `{"messages":[{"role":"user","content":[{"type":"text","text":"hi"}]},{"role":"assistant","content":null}],"stop":"END","unknown":[1,{"x":2}]}`
	if err := json.Unmarshal([]byte(in), &req); err != nil {
		t.Fatal(err)
	}
	if req.Messages[0].Content.Parts[0].Text != "hi" || !reflect.DeepEqual(req.Messages[1].Content, MessageContent{}) || !reflect.DeepEqual(req.Stop, StopSequences{"END"}) {
		t.Errorf("got %+v", req)
	}
	if err := json.Unmarshal([]byte(`{"messages":[],"stop":["a","b"]}`), &req); err != nil || !reflect.DeepEqual(req.Stop, StopSequences{"a", "b"}) {
		t.Errorf("stop array: %+v, %v", req.Stop, err)
	}
	temp := 0.0
	b, _ := json.Marshal(ChatCompletionRequest{Messages: []ChatMessage{{Role: "user", Content: TextContent("hi")}}, Stream: true,
		StreamOptions: &StreamOptions{IncludeUsage: true}, Temperature: &temp, Stop: StopSequences{"x"}})
	want := `{"messages":[{"role":"user","content":"hi"}],"stop":["x"],"stream":true,"stream_options":{"include_usage":true},"temperature":0}`
	if string(b) != want {
		t.Errorf("got  %s\nwant %s", b, want)
	}
}

func TestCompletionMessageParam(t *testing.T) {
	m := ChatCompletionMessage{Role: "assistant", Content: "4", ReasoningContent: "2+2", ToolCalls: []ToolCall{{ID: "c"}}}
	want := ChatMessage{Role: "assistant", Content: TextContent("4"), ToolCalls: []ToolCall{{ID: "c"}}}
	if got := m.Param(); !reflect.DeepEqual(got, want) {
		t.Errorf("got %+v", got)
	}
}

func TestStringOrNumber(t *testing.T) {
	for in, want := range map[string]StringOrNumber{`"a b"`: "a b", `-4.5e-3`: "-4.5e-3", `128001`: "128001", `null`: "", `"\u00e9"`: "é"} {
		var s StringOrNumber
		if err := json.Unmarshal([]byte(in), &s); err != nil || s != want {
			t.Errorf("%s: %q, %v", in, s, err)
		}
	}
	for _, in := range []string{`true`, `{}`, `[1]`} {
		var s StringOrNumber
		if err := json.Unmarshal([]byte(in), &s); err == nil {
			t.Errorf("%s accepted", in)
		}
	}
	if b, _ := json.Marshal(StringOrNumber("7")); string(b) != `"7"` {
		t.Errorf("encodes as %s", b)
	}
}

func TestLogprobsShapes(t *testing.T) {
	var lp Logprobs
	if err := json.Unmarshal([]byte(`[{"content":[{"token":"a","logprob":-1}]},null,{"content":[{"token":"b","logprob":-2}],"refusal":[{"token":"r","logprob":0}]}]`), &lp); err != nil {
		t.Fatal(err)
	}
	if len(lp.Content) != 2 || lp.Content[1].Token != "b" || len(lp.Refusal) != 1 {
		t.Errorf("array form: %+v", lp)
	}
	var choice ChatChunkChoice
	if err := json.Unmarshal([]byte(`{"index":0,"delta":{},"logprobs":null}`), &choice); err != nil || choice.Logprobs != nil {
		t.Errorf("null: %+v, %v", choice, err)
	}
	if err := json.Unmarshal([]byte(`"x"`), &lp); err == nil {
		t.Error("a string accepted as logprobs")
	}
	var clp CompletionLogprobs
	if err := json.Unmarshal([]byte(`[{"tokens":["a"]},{"tokens":["b"],"token_logprobs":[null]}]`), &clp); err != nil ||
		!reflect.DeepEqual(clp.Tokens, []string{"a", "b"}) {
		t.Errorf("completion logprobs: %+v, %v", clp, err)
	}
}

func TestErrorResponseMessages(t *testing.T) {
	for in, want := range map[string]string{
		`{"error":"<error details>","code":424}`:                                      "schema: model error 424: <error details>",
		`{"code":424,"message":"invoke handler failure","error":"<error details"}`:    "schema: model error 424: invoke handler failure: <error details",
		`{"object":"error","message":"too long","type":"BadRequestError","code":400}`: "schema: model error 400: BadRequestError: too long",
		`{"error":{"message":"m","code":"invalid_api_key"}}`:                          "schema: model error: m",
	} {
		var e ErrorResponse
		if err := json.Unmarshal([]byte(in), &e); err != nil || e.Error() != want {
			t.Errorf("%s: %q, %v", in, e.Error(), err)
		}
	}
	var e ErrorResponse
	if err := json.Unmarshal([]byte(`{"error":{"message":1}}`), &e); err == nil {
		t.Error("bad nested error accepted")
	}
}

func TestUnknownFieldsNeverBreakDecoding(t *testing.T) {
	// Every payload type, with unknown members of every JSON type.
	extra := `"zz_new":{"a":[1,"x",null,true]},"zz_n":1.5e300,`
	for name, v := range map[string]any{
		`{` + extra + `"inputs":"q","parameters":{` + extra + `"top_k":1}}`:                              new(LMIRequest),
		`{` + extra + `"token":{` + extra + `"id":1},"details":{` + extra + `"finish_reason":"length"}}`: new(LMIStreamLine),
		`{` + extra + `"choices":[{` + extra + `"delta":{` + extra + `"content":"a"}}]}`:                 new(ChatCompletionChunk),
		`{` + extra + `"choices":[{` + extra + `"message":{` + extra + `"content":"a"}}]}`:               new(ChatCompletion),
		`{` + extra + `"choices":[{` + extra + `"text":"a"}],"usage":{` + extra + `"total_tokens":1}}`:   new(TextCompletion),
		`{` + extra + `"error":{` + extra + `"message":"m"}}`:                                            new(ErrorResponse),
		`{` + extra + `"outputs":["a"]}`:                                                                 new(DynamicBatchOutput),
	} {
		if err := json.Unmarshal([]byte(name), v); err != nil {
			t.Errorf("%T: %v", v, err)
		}
	}
}
