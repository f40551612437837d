package schema

import "testing"

func TestDetectKind(t *testing.T) {
	tests := []struct {
		data string
		want Kind
	}{
		{`{"object":"chat.completion.chunk","choices":[]}`, KindChatChunk},
		{`{"id":"x","choices":[{"index":0,"delta":{"content":"a"}}]}`, KindChatChunk},
		{`{"object":"chat.completion"}`, KindChatCompletion},
		{`{"choices":[{"index":0,"message":{"role":"assistant","content":"a"}}]}`, KindChatCompletion},
		{`{"object":"text_completion","choices":[{"text":"a"}],"usage":null}`, KindTextCompletion},
		{` {"choices":[{"text":"a"}]}`, KindTextCompletion},
		{`{"token":{"id":1,"text":"a","log_prob":0}}`, KindLMIStreamLine},
		{`{"token":{"id":-1},"generated_text":"","details":{"finish_reason":"error"}}`, KindLMIStreamLine},
		{`{"generated_text":"a"}`, KindLMIResponse},
		{`[{"generated_text":"a","details":{"finish reason":"length"}}]`, KindLMIResponse},
		{`{"outputs":["a"]}`, KindDynamicBatchOutput},
		{`{"error":"bad input","code":424}`, KindError},
		{`{"code":424,"message":"invoke handler failure","error":"x"}`, KindError},
		{`{"code":500,"message":"internal"}`, KindError},
		{`{"object":"error","message":"m","type":"BadRequestError","code":400}`, KindError},
		{`{"error":{"message":"m"}}`, KindError},
		{`{"error":null,"generated_text":"a"}`, KindLMIResponse},
		{`{}`, KindUnknown},
		{`[]`, KindUnknown},
		{`[1]`, KindUnknown},
		{`{"choices":[]}`, KindUnknown},
		{`{"choices":"x"}`, KindUnknown},
		{`42`, KindUnknown},
		{`{"a":`, KindUnknown},
		{``, KindUnknown},
	}
	for _, tt := range tests {
		if got := DetectKind([]byte(tt.data)); got != tt.want {
			t.Errorf("DetectKind(%s) = %v, want %v", tt.data, got, tt.want)
		}
	}
}

func TestKindString(t *testing.T) {
	seen := map[string]bool{}
	for k := KindUnknown; k <= KindError; k++ {
		s := k.String()
		if s == "" || seen[s] {
			t.Errorf("Kind(%d).String() = %q, not unique", k, s)
		}
		seen[s] = true
	}
	if Kind(200).String() != "unknown" {
		t.Error("out-of-range kind")
	}
}
