package schema

import (
	"bytes"
	"encoding/json"
)

// Kind is what a payload is, as told by [DetectKind].
type Kind uint8

const (
	// KindUnknown is a payload none of the other kinds matches.
	KindUnknown Kind = iota
	// KindChatChunk is a [ChatCompletionChunk].
	KindChatChunk
	// KindChatCompletion is a [ChatCompletion].
	KindChatCompletion
	// KindTextCompletion is a [TextCompletion], streamed chunk or not.
	KindTextCompletion
	// KindLMIStreamLine is an [LMIStreamLine] (a line with a token).
	KindLMIStreamLine
	// KindLMIResponse is an [LMIResponse], or an array of them
	// ([LMIResponses]: TGI-compatible or dynamic-batch).
	KindLMIResponse
	// KindDynamicBatchOutput is a [DynamicBatchOutput] line.
	KindDynamicBatchOutput
	// KindError is an [ErrorResponse].
	KindError
)

// String returns the kind's name.
func (k Kind) String() string {
	switch k {
	case KindChatChunk:
		return "chat chunk"
	case KindChatCompletion:
		return "chat completion"
	case KindTextCompletion:
		return "text completion"
	case KindLMIStreamLine:
		return "LMI stream line"
	case KindLMIResponse:
		return "LMI response"
	case KindDynamicBatchOutput:
		return "dynamic-batch output"
	case KindError:
		return "error"
	}
	return "unknown"
}

// kindProbe holds the top-level members DetectKind looks at.
type kindProbe struct {
	Object        string          `json:"object"`
	Choices       json.RawMessage `json:"choices"`
	Token         json.RawMessage `json:"token"`
	GeneratedText json.RawMessage `json:"generated_text"`
	Outputs       json.RawMessage `json:"outputs"`
	Error         json.RawMessage `json:"error"`
	Code          json.RawMessage `json:"code"`
	Message       json.RawMessage `json:"message"`
}

// DetectKind tells what one payload (a [framing.Event]'s data) is, for callers
// that do not know what the endpoint runs. It looks at the "object" field
// first, then at which members are present; it never fails, returning
// KindUnknown for anything it does not recognise, including invalid JSON.
func DetectKind(data []byte) Kind {
	data = bytes.TrimLeft(data, " \t\r\n")
	if len(data) > 0 && data[0] == '[' {
		var list []json.RawMessage
		if json.Unmarshal(data, &list) != nil || len(list) == 0 {
			return KindUnknown
		}
		if DetectKind(list[0]) == KindLMIResponse {
			return KindLMIResponse
		}
		return KindUnknown
	}
	var p kindProbe
	if json.Unmarshal(data, &p) != nil {
		return KindUnknown
	}
	switch p.Object {
	case "chat.completion.chunk":
		return KindChatChunk
	case "chat.completion":
		return KindChatCompletion
	case "text_completion":
		return KindTextCompletion
	case "error":
		return KindError
	}
	switch {
	case present(p.Error) || present(p.Code) && present(p.Message):
		return KindError
	case present(p.Choices):
		return choicesKind(p.Choices)
	}
	return firstPresent(
		member{p.Token, KindLMIStreamLine},
		member{p.GeneratedText, KindLMIResponse},
		member{p.Outputs, KindDynamicBatchOutput},
	)
}

// choicesKind tells the kind from the first choice's members.
func choicesKind(raw json.RawMessage) Kind {
	var choices []struct {
		Delta   json.RawMessage `json:"delta"`
		Message json.RawMessage `json:"message"`
		Text    json.RawMessage `json:"text"`
	}
	if json.Unmarshal(raw, &choices) != nil || len(choices) == 0 {
		return KindUnknown
	}
	c := &choices[0]
	return firstPresent(
		member{c.Delta, KindChatChunk},
		member{c.Message, KindChatCompletion},
		member{c.Text, KindTextCompletion},
	)
}

// member is a member of a payload and the kind its presence tells.
type member struct {
	raw  json.RawMessage
	kind Kind
}

// firstPresent returns the kind of the first of members that is present,
// or KindUnknown.
func firstPresent(members ...member) Kind {
	for _, m := range members {
		if present(m.raw) {
			return m.kind
		}
	}
	return KindUnknown
}

// present reports whether a member was sent with a non-null value.
func present(raw json.RawMessage) bool { return len(raw) > 0 && string(raw) != "null" }
