package demomodel

import (
	"slices"
	"strings"
	"testing"
)

func TestTokens(t *testing.T) {
	for _, s := range []string{"", "You said: hi", "  lead and trail  ", "a\n\nb", "héllo wörld"} {
		toks := tokens(s)
		if strings.Join(toks, "") != s {
			t.Errorf("tokens(%q) = %q do not rebuild it", s, toks)
		}
	}
	if got, want := tokens("You said: hi"), []string{"You", " said:", " hi"}; !slices.Equal(got, want) {
		t.Errorf("tokens = %q, want %q", got, want)
	}
}

// TestWireFormat pins the bytes the toy model writes, the way vLLM writes
// them: null reasons and logprobs until the last chunk, the usage on the
// last chunk only, and the non-streamed message with its reasoning.
func TestWireFormat(t *testing.T) {
	req, ok := ParseChatRequest([]byte(`{"messages":[{"role":"user","content":"hi there"}]}`))
	if !ok {
		t.Fatal("ParseChatRequest failed")
	}
	c := NewCompletion(req, "id1", 42)
	evs := c.Events()
	const head = `data: {"id":"id1","object":"chat.completion.chunk","created":42,"model":"/opt/ml/model","choices":[{"index":0,"delta":`
	for _, tt := range []struct {
		i    int
		want string
	}{
		{0, head + `{"role":"assistant","content":""},"logprobs":null,"finish_reason":null,"stop_reason":null}]}` + "\n\n"},
		{1, head + `{"reasoning_content":"Okay,"},"logprobs":null,"finish_reason":null,"stop_reason":null}]}` + "\n\n"},
		{len(evs) - 2, head + `{"content":""},"logprobs":null,"finish_reason":"stop","stop_reason":null}],"usage":{"prompt_tokens":2,"completion_tokens":15,"total_tokens":17}}` + "\n\n"},
		{len(evs) - 1, "data: [DONE]\n\n"},
	} {
		if got := string(evs[tt.i]); got != tt.want {
			t.Errorf("event %d:\n got %s\nwant %s", tt.i, got, tt.want)
		}
	}
	const want = `{"id":"id1","object":"chat.completion","created":42,"model":"/opt/ml/model","choices":[{"index":0,"message":{"role":"assistant","content":"You said: hi there","reasoning_content":"Okay, the user wrote \"hi there\". I should repeat it back."},"logprobs":null,"finish_reason":"stop","stop_reason":null}],"usage":{"prompt_tokens":2,"completion_tokens":15,"total_tokens":17}}`
	if got := string(c.Message()); got != want {
		t.Errorf("Message:\n got %s\nwant %s", got, want)
	}
}
