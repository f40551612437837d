// Package demomodel is the toy OpenAI-compatible chat model shared by the
// examples and tests: the sample container serves it over WebSocket and the
// quick-start demo over an in-process biditest server. Its answers are
// deterministic: it "reasons" about the last user message, then repeats it.
package demomodel

import (
	"encoding/json"
	"strings"
	"unicode"
)

// defaultModelName is what SageMaker-hosted OpenAI-compatible servers report
// as the model when the request names none.
const defaultModelName = "/opt/ml/model"

// ChatRequest is the part of an OpenAI chat completion request the toy
// model reads.
type ChatRequest struct {
	Model    string        `json:"model"`
	Messages []chatMessage `json:"messages"`
	Stream   bool          `json:"stream"`
}

// chatMessage holds content as raw JSON: a string, or an array of parts
// such as {"type":"text","text":"..."}.
type chatMessage struct {
	Role    string          `json:"role"`
	Content json.RawMessage `json:"content"`
}

// ParseChatRequest reports whether b is a JSON object with a "messages"
// array, the only thing the toy model needs to answer.
func ParseChatRequest(b []byte) (ChatRequest, bool) {
	var req ChatRequest
	if err := json.Unmarshal(b, &req); err != nil || req.Messages == nil {
		return ChatRequest{}, false
	}
	return req, true
}

// text returns the message's text: the string content, or the text parts
// of an array content joined with spaces.
func (m chatMessage) text() string {
	var s string
	if json.Unmarshal(m.Content, &s) == nil {
		return s
	}
	var parts []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}
	if json.Unmarshal(m.Content, &parts) != nil {
		return ""
	}
	var texts []string
	for _, p := range parts {
		if p.Type == "text" {
			texts = append(texts, p.Text)
		}
	}
	return strings.Join(texts, " ")
}

// Completion is the toy model's deterministic answer to one request: it
// "thinks" about the last user message, then repeats it.
type Completion struct {
	id        string
	created   int64
	model     string
	reasoning []string // tokens; their concatenation is the reasoning text
	content   []string // tokens; their concatenation is the answer
	usage     usage
}

// NewCompletion returns the answer to req, with the given completion id and
// creation time (Unix seconds) so that tests get known output.
func NewCompletion(req ChatRequest, id string, created int64) *Completion {
	c := &Completion{id: id, created: created, model: req.Model}
	if c.model == "" {
		c.model = defaultModelName
	}
	var said string
	prompt := 0
	for _, m := range req.Messages {
		t := m.text()
		prompt += len(tokens(t))
		if m.Role == "user" {
			said = t
		}
	}
	said = strings.TrimSpace(said)
	if said == "" {
		c.reasoning = tokens("Okay, the user sent no text. I should say so.")
		c.content = tokens("You said nothing.")
	} else {
		c.reasoning = tokens("Okay, the user wrote \"" + said + "\". I should repeat it back.")
		c.content = tokens("You said: " + said)
	}
	n := len(c.reasoning) + len(c.content)
	c.usage = usage{PromptTokens: prompt, CompletionTokens: n, TotalTokens: prompt + n}
	return c
}

// tokens cuts s before each run of white space that follows a word, so
// "You said: hi" gives "You", " said:", " hi". The tokens concatenate
// back to s.
func tokens(s string) []string {
	var out []string
	start := 0
	prevWord := false
	for i, r := range s {
		space := unicode.IsSpace(r)
		if space && prevWord && i > start {
			out = append(out, s[start:i])
			start = i
		}
		prevWord = !space
	}
	if start < len(s) {
		out = append(out, s[start:])
	}
	return out
}

type usage struct {
	PromptTokens     int `json:"prompt_tokens"`
	CompletionTokens int `json:"completion_tokens"`
	TotalTokens      int `json:"total_tokens"`
}

// completion is a chat.completion object, or one chat.completion.chunk
// event, fields in the order OpenAI-compatible servers write them.
type completion struct {
	ID      string   `json:"id"`
	Object  string   `json:"object"`
	Created int64    `json:"created"`
	Model   string   `json:"model"`
	Choices []choice `json:"choices"`
	Usage   *usage   `json:"usage,omitempty"`
}

// choice holds the message of a chat.completion, or the delta of a
// chunk; the reasons are null until the last chunk.
type choice struct {
	Index        int      `json:"index"`
	Delta        *delta   `json:"delta,omitempty"`
	Message      *message `json:"message,omitempty"`
	Logprobs     any      `json:"logprobs"`
	FinishReason *string  `json:"finish_reason"`
	StopReason   *string  `json:"stop_reason"`
}

type delta struct {
	Role             string  `json:"role,omitempty"`
	Content          *string `json:"content,omitempty"`
	ReasoningContent *string `json:"reasoning_content,omitempty"`
}

type message struct {
	Role             string `json:"role"`
	Content          string `json:"content"`
	ReasoningContent string `json:"reasoning_content"`
}

// head returns the object with c's id, creation time and model, and one
// choice.
func (c *Completion) head(object string, ch choice) completion {
	return completion{ID: c.id, Object: object, Created: c.created, Model: c.model, Choices: []choice{ch}}
}

// Events returns the streamed answer as SSE events ("data: {...}\n\n"): a
// first chunk with the role, the reasoning_content deltas, the content
// deltas, a last chunk with finish_reason "stop" and the usage, and
// "data: [DONE]".
func (c *Completion) Events() [][]byte {
	evs := make([][]byte, 0, len(c.reasoning)+len(c.content)+3)
	add := func(d delta, final bool) {
		ch := c.head("chat.completion.chunk", choice{Delta: &d})
		if final {
			stop := "stop"
			ch.Choices[0].FinishReason = &stop
			u := c.usage
			ch.Usage = &u
		}
		evs = append(evs, sseEvent(ch))
	}
	empty := ""
	add(delta{Role: "assistant", Content: &empty}, false)
	for _, t := range c.reasoning {
		add(delta{ReasoningContent: &t}, false)
	}
	for _, t := range c.content {
		add(delta{Content: &t}, false)
	}
	add(delta{Content: &empty}, true)
	return append(evs, []byte("data: [DONE]\n\n"))
}

func sseEvent(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		panic("demomodel: marshal chunk: " + err.Error()) // only plain structs are marshaled
	}
	out := make([]byte, 0, len(b)+8)
	out = append(out, "data: "...)
	out = append(out, b...)
	return append(out, "\n\n"...)
}

// Message returns the non-streamed answer, a chat.completion object.
func (c *Completion) Message() []byte {
	stop := "stop"
	v := c.head("chat.completion", choice{
		Message: &message{
			Role:             "assistant",
			Content:          strings.Join(c.content, ""),
			ReasoningContent: strings.Join(c.reasoning, ""),
		},
		FinishReason: &stop,
	})
	v.Usage = &c.usage
	b, err := json.Marshal(v)
	if err != nil {
		panic("demomodel: marshal Completion: " + err.Error())
	}
	return b
}
