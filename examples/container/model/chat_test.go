package model

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/coder/websocket"
)

// chatRequestJSON is a streamed OpenAI chat request whose last user
// message is said.
func chatRequestJSON(said string, stream bool) []byte {
	b, _ := json.Marshal(map[string]any{
		"model": "toy",
		"messages": []map[string]any{
			{"role": "system", "content": "You are terse."},
			{"role": "user", "content": "first question"},
			{"role": "assistant", "content": "first answer"},
			{"role": "user", "content": []map[string]string{{"type": "text", "text": said}}},
		},
		"stream": stream,
	})
	return b
}

// wireChunk is a chat.completion.chunk as a client decodes it.
type wireChunk struct {
	ID      string `json:"id"`
	Object  string `json:"object"`
	Created int64  `json:"created"`
	Model   string `json:"model"`
	Choices []struct {
		Index int `json:"index"`
		Delta struct {
			Role             string  `json:"role"`
			Content          *string `json:"content"`
			ReasoningContent *string `json:"reasoning_content"`
		} `json:"delta"`
		FinishReason *string `json:"finish_reason"`
	} `json:"choices"`
	Usage *struct {
		PromptTokens     int `json:"prompt_tokens"`
		CompletionTokens int `json:"completion_tokens"`
		TotalTokens      int `json:"total_tokens"`
	} `json:"usage"`
}

// readStream reads text messages until the bytes read end with the [DONE]
// event and returns the messages.
func readStream(t *testing.T, c *websocket.Conn) [][]byte {
	t.Helper()
	ctx := testContext(t)
	var msgs [][]byte
	var all []byte
	for {
		typ, p, err := c.Read(ctx)
		if err != nil {
			t.Fatalf("after %d messages: %v", len(msgs), err)
		}
		if typ != websocket.MessageText {
			t.Fatalf("message %d is %v, want text", len(msgs), typ)
		}
		msgs = append(msgs, p)
		all = append(all, p...)
		if bytes.HasSuffix(all, []byte("data: [DONE]\n\n")) {
			return msgs
		}
	}
}

// checkStream parses SSE events and checks the stream's shape: role, then
// reasoning deltas, then content deltas, then stop with usage, then [DONE].
// It returns the rebuilt reasoning and content.
func checkStream(t *testing.T, sse []byte) (reasoning, content string) {
	t.Helper()
	events := strings.Split(string(sse), "\n\n")
	if last := events[len(events)-1]; last != "" {
		t.Fatalf("stream does not end with a blank line: %q", last)
	}
	events = events[:len(events)-1]
	if got := events[len(events)-1]; got != "data: [DONE]" {
		t.Fatalf("last event = %q, want data: [DONE]", got)
	}
	const (
		stRole = iota
		stReasoning
		stContent
		stStopped
	)
	state := stRole
	var rsb, csb strings.Builder
	var id string
	for i, ev := range events[:len(events)-1] {
		data, ok := strings.CutPrefix(ev, "data: ")
		if !ok {
			t.Fatalf("event %d = %q, want a data: line", i, ev)
		}
		var ch wireChunk
		if err := json.Unmarshal([]byte(data), &ch); err != nil {
			t.Fatalf("event %d: %v: %s", i, err, data)
		}
		if i == 0 {
			id = ch.ID
		}
		if ch.ID != id || ch.Object != "chat.completion.chunk" || ch.Created != fixedTime.Unix() || ch.Model != "toy" || len(ch.Choices) != 1 {
			t.Fatalf("event %d header: %s", i, data)
		}
		d := ch.Choices[0].Delta
		switch {
		case state == stRole:
			if d.Role != "assistant" || d.Content == nil || *d.Content != "" || ch.Choices[0].FinishReason != nil {
				t.Fatalf("first event = %s, want the assistant role with empty content", data)
			}
			state = stReasoning
		case ch.Choices[0].FinishReason != nil:
			if *ch.Choices[0].FinishReason != "stop" || ch.Usage == nil || state != stContent {
				t.Fatalf("event %d = %s: finish after state %d", i, data, state)
			}
			state = stStopped
		case state == stStopped:
			t.Fatalf("event %d after the stop chunk: %s", i, data)
		case d.ReasoningContent != nil:
			if state != stReasoning || d.Content != nil {
				t.Fatalf("reasoning delta %d out of order: %s", i, data)
			}
			rsb.WriteString(*d.ReasoningContent)
		case d.Content != nil:
			if state == stReasoning {
				if rsb.Len() == 0 {
					t.Fatalf("content before any reasoning: %s", data)
				}
				state = stContent
			}
			csb.WriteString(*d.Content)
		default:
			t.Fatalf("event %d has no delta: %s", i, data)
		}
	}
	if state != stStopped {
		t.Fatalf("stream has no stop chunk")
	}
	return rsb.String(), csb.String()
}

func TestChatStream(t *testing.T) {
	srv, _ := newServer(t, Options{})
	c := dial(t, srv, "/invocations-bidirectional-stream")
	ctx := testContext(t)
	if err := c.Write(ctx, websocket.MessageText, chatRequestJSON("What is 2+2?", true)); err != nil {
		t.Fatal(err)
	}
	msgs := readStream(t, c)
	for i, m := range msgs {
		if !bytes.HasPrefix(m, []byte("data: ")) || !bytes.HasSuffix(m, []byte("\n\n")) || bytes.Count(m, []byte("\n\n")) != 1 {
			t.Fatalf("message %d = %q, want exactly one SSE event", i, m)
		}
	}
	reasoning, content := checkStream(t, bytes.Join(msgs, nil))
	if want := `Okay, the user wrote "What is 2+2?". I should repeat it back.`; reasoning != want {
		t.Errorf("reasoning = %q, want %q", reasoning, want)
	}
	if want := "You said: What is 2+2?"; content != want {
		t.Errorf("content = %q, want %q", content, want)
	}

	// The last chunk carries the usage; ids come from Options.Rand.
	var last wireChunk
	json.Unmarshal(bytes.TrimPrefix(msgs[len(msgs)-2], []byte("data: ")), &last)
	wantID := "chatcmpl-" + strings.Repeat("ab", 16)
	if last.ID != wantID || last.Usage == nil || last.Usage.PromptTokens != 10 ||
		last.Usage.CompletionTokens != len(msgs)-3 || last.Usage.TotalTokens != 10+len(msgs)-3 {
		t.Errorf("last chunk id %q usage %+v (%d messages)", last.ID, last.Usage, len(msgs))
	}

	// The session goes on: a second request gets a second stream.
	if err := c.Write(ctx, websocket.MessageText, chatRequestJSON("again", true)); err != nil {
		t.Fatal(err)
	}
	if _, content := checkStream(t, bytes.Join(readStream(t, c), nil)); content != "You said: again" {
		t.Errorf("second content = %q", content)
	}
}

// TestChatSplit re-cuts the SSE bytes into 7-byte messages: the bytes are
// the same as unsplit, no message ends inside a UTF-8 sequence.
func TestChatSplit(t *testing.T) {
	srv, _ := newServer(t, Options{})
	ctx := testContext(t)
	req := chatRequestJSON("héllo wörld €€", true)

	whole := dial(t, srv, "/invocations-bidirectional-stream")
	whole.Write(ctx, websocket.MessageText, req)
	want := bytes.Join(readStream(t, whole), nil)

	split := dial(t, srv, "/invocations-bidirectional-stream?split=7&delay=1ms")
	split.Write(ctx, websocket.MessageText, req)
	msgs := readStream(t, split)
	for i, m := range msgs {
		if !utf8.Valid(m) || len(m) > 7 {
			t.Fatalf("message %d = %q", i, m)
		}
	}
	got := bytes.Join(msgs, nil)
	if !bytes.Equal(got, want) {
		t.Fatalf("split stream differs:\n got %q\nwant %q", got, want)
	}
	if _, content := checkStream(t, got); content != "You said: héllo wörld €€" {
		t.Errorf("content = %q", content)
	}
}

func TestChatNotStreamed(t *testing.T) {
	srv, _ := newServer(t, Options{})
	c := dial(t, srv, "/invocations-bidirectional-stream")
	ctx := testContext(t)
	c.Write(ctx, websocket.MessageText, chatRequestJSON("hi", false))
	_, p, err := c.Read(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var resp struct {
		Object  string `json:"object"`
		Choices []struct {
			Message struct {
				Content          string `json:"content"`
				ReasoningContent string `json:"reasoning_content"`
			} `json:"message"`
			FinishReason string `json:"finish_reason"`
		} `json:"choices"`
	}
	if err := json.Unmarshal(p, &resp); err != nil {
		t.Fatal(err)
	}
	if resp.Object != "chat.completion" || resp.Choices[0].Message.Content != "You said: hi" || resp.Choices[0].FinishReason != "stop" {
		t.Fatalf("response = %s", p)
	}
}

func TestChatEchoMode(t *testing.T) {
	srv, _ := newServer(t, Options{})
	c := dial(t, srv, "/invocations-bidirectional-stream?mode=echo")
	ctx := testContext(t)
	req := chatRequestJSON("hi", true)
	c.Write(ctx, websocket.MessageText, req)
	if _, p, err := c.Read(ctx); err != nil || !bytes.Equal(p, req) {
		t.Fatalf("mode=echo answered %q, %v; want the request back", p, err)
	}
}

func TestCutUTF8(t *testing.T) {
	b := []byte("ab€cd") // € is 3 bytes
	for _, tc := range []struct{ n, want int }{{1, 1}, {2, 2}, {3, 2}, {4, 2}, {5, 5}, {9, 7}} {
		if got := cutUTF8(b, tc.n); got != tc.want {
			t.Errorf("cutUTF8(%q, %d) = %d, want %d", b, tc.n, got, tc.want)
		}
	}
	if got := cutUTF8([]byte("€x"), 1); got != 3 {
		t.Errorf("cut inside the first rune = %d, want its length 3", got)
	}
}
