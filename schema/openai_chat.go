package schema

import "encoding/json"

// This file holds the OpenAI-compatible chat payloads of seeds 002 and 004:
// the request, the completion and the streamed chunk.

// ChatCompletionRequest is an OpenAI-compatible chat completions request,
// as LMI and vLLM containers accept it. A field whose zero value is also
// the server's default is omitted when zero; Seed, Temperature and TopP
// are pointers because zero is meaningful for them.
type ChatCompletionRequest struct {
	// Messages are the conversation so far.
	Messages []ChatMessage `json:"messages"`
	// Model names the model; containers serving one model ignore it.
	Model string `json:"model,omitempty"`
	// FrequencyPenalty, between -2 and 2, penalises frequent tokens.
	FrequencyPenalty float64 `json:"frequency_penalty,omitempty"`
	// LogitBias maps token IDs to a bias added to their logits.
	LogitBias map[string]float64 `json:"logit_bias,omitempty"`
	// Logprobs asks for the log probabilities of the generated tokens.
	Logprobs bool `json:"logprobs,omitempty"`
	// TopLogprobs, between 0 and 20, is the number of likely tokens
	// returned per position when Logprobs is set.
	TopLogprobs int `json:"top_logprobs,omitempty"`
	// MaxTokens bounds the generated tokens.
	MaxTokens int `json:"max_tokens,omitempty"`
	// N is the number of choices to generate.
	N int `json:"n,omitempty"`
	// PresencePenalty, between -2 and 2, penalises present tokens.
	PresencePenalty float64 `json:"presence_penalty,omitempty"`
	// Seed makes sampling reproducible.
	Seed *int64 `json:"seed,omitempty"`
	// Stop are sequences that end generation.
	Stop StopSequences `json:"stop,omitempty"`
	// Stream asks for a streamed response of [ChatCompletionChunk]s.
	Stream bool `json:"stream,omitempty"`
	// StreamOptions configure a streamed response.
	StreamOptions *StreamOptions `json:"stream_options,omitempty"`
	// Temperature, between 0 and 2, scales the logits.
	Temperature *float64 `json:"temperature,omitempty"`
	// TopP keeps the most likely tokens up to this probability mass.
	TopP *float64 `json:"top_p,omitempty"`
	// User identifies the end user.
	User string `json:"user,omitempty"`
	// IgnoreEOS keeps generating after the end-of-sequence token (LMI).
	IgnoreEOS bool `json:"ignore_eos,omitempty"`
}

// StreamOptions configure a streamed response.
type StreamOptions struct {
	// IncludeUsage asks for a last chunk carrying the usage.
	IncludeUsage bool `json:"include_usage"`
}

// StopSequences is the "stop" field: a string or an array of strings. It
// decodes both and encodes as an array.
type StopSequences []string

// UnmarshalJSON accepts a string, an array of strings, or null.
func (s *StopSequences) UnmarshalJSON(b []byte) error {
	return unmarshalList(b, '"', (*[]string)(s))
}

// ChatMessage is a message of a chat request.
type ChatMessage struct {
	// Role is "system", "user", "assistant" or "tool".
	Role string `json:"role"`
	// Content is text or multimodal content parts.
	Content MessageContent `json:"content"`
	// Name optionally names the participant.
	Name string `json:"name,omitempty"`
	// ToolCalls are the tool calls of an earlier assistant message.
	ToolCalls []ToolCall `json:"tool_calls,omitempty"`
	// ToolCallID is the call a "tool" message answers.
	ToolCallID string `json:"tool_call_id,omitempty"`
}

// MessageContent is the content of a [ChatMessage]: a string, or an array
// of content parts for vision models.
type MessageContent struct {
	// Text is the content when Parts is nil.
	Text string
	// Parts are multimodal content parts; when non-nil they are encoded
	// instead of Text.
	Parts []ContentPart
}

// TextContent returns content made of the text s.
func TextContent(s string) MessageContent { return MessageContent{Text: s} }

// MarshalJSON encodes Parts as an array when non-nil, else Text as a
// string.
func (c MessageContent) MarshalJSON() ([]byte, error) { return marshalEither(c.Text, c.Parts) }

// UnmarshalJSON accepts a string, an array of parts, or null.
func (c *MessageContent) UnmarshalJSON(b []byte) error {
	*c = MessageContent{}
	return unmarshalEither(b, &c.Text, &c.Parts)
}

// ContentPart is one part of multimodal content.
type ContentPart struct {
	// Type is "text" or "image_url".
	Type string `json:"type"`
	// Text is the text of a "text" part.
	Text string `json:"text,omitempty"`
	// ImageURL is the image of an "image_url" part.
	ImageURL *ImageURL `json:"image_url,omitempty"`
}

// ImageURL is an image given by URL or as a base64 data URL.
type ImageURL struct {
	// URL is an image URL or a data URL with base64 image data (which
	// spares the container a network call).
	URL string `json:"url"`
	// Detail is the image detail level: "auto", "low" or "high".
	Detail string `json:"detail,omitempty"`
}

// ChatCompletion is a non-streaming chat completion response, and what
// [ChatAccumulator] rebuilds from a stream.
type ChatCompletion struct {
	// ID identifies the completion ("chatcmpl-...").
	ID string `json:"id"`
	// Object is "chat.completion".
	Object string `json:"object"`
	// Created is the Unix time, in seconds, of the completion.
	Created int64 `json:"created"`
	// Model is the model ("/opt/ml/model" on SageMaker).
	Model string `json:"model"`
	// Choices are the generated choices, by index.
	Choices []ChatChoice `json:"choices"`
	// ServiceTier is the service tier, or "" for null.
	ServiceTier string `json:"service_tier,omitempty"`
	// SystemFingerprint identifies the backend, or "" for null.
	SystemFingerprint string `json:"system_fingerprint,omitempty"`
	// Usage is the token accounting.
	Usage *Usage `json:"usage,omitempty"`
	// PromptLogprobs are the prompt's log probabilities (vLLM), when
	// requested: one map per prompt token, from token ID to its entry;
	// the first token's map is nil.
	PromptLogprobs []map[string]PromptLogprob `json:"prompt_logprobs,omitempty"`
	// KVTransferParams are vLLM's disaggregated-prefill parameters.
	KVTransferParams map[string]any `json:"kv_transfer_params,omitempty"`
}

// ChatChoice is one choice of a [ChatCompletion].
type ChatChoice struct {
	// Index is the choice's position, from 0.
	Index int `json:"index"`
	// Message is the generated message.
	Message ChatCompletionMessage `json:"message"`
	// Logprobs is nil unless log probabilities were requested.
	Logprobs *Logprobs `json:"logprobs,omitempty"`
	// FinishReason is "stop", "length", "tool_calls", and so on.
	FinishReason string `json:"finish_reason"`
	// StopReason is the stop string or stop token ID that ended
	// generation (vLLM), or "".
	StopReason StringOrNumber `json:"stop_reason,omitempty"`
}

// ChatCompletionMessage is the message a model generated.
type ChatCompletionMessage struct {
	// Role is "assistant".
	Role string `json:"role"`
	// Content is the text of the reply ("" for null).
	Content string `json:"content"`
	// ReasoningContent is the reasoning of a reasoning model.
	ReasoningContent string `json:"reasoning_content,omitempty"`
	// Refusal is the model's refusal message, or "".
	Refusal string `json:"refusal,omitempty"`
	// Annotations annotate the content, or are nil.
	Annotations []Annotation `json:"annotations,omitempty"`
	// Audio is audio output, or nil.
	Audio *ChatAudio `json:"audio,omitempty"`
	// FunctionCall is a legacy function call, or nil.
	FunctionCall *FunctionCall `json:"function_call,omitempty"`
	// ToolCalls are the tools the model calls.
	ToolCalls []ToolCall `json:"tool_calls,omitempty"`
}

// Param returns m as a message for the next request of a conversation.
func (m ChatCompletionMessage) Param() ChatMessage {
	return ChatMessage{Role: m.Role, Content: TextContent(m.Content), ToolCalls: m.ToolCalls}
}

// Annotation annotates generated content, such as a URL citation.
type Annotation struct {
	// Type is the kind of annotation, such as "url_citation".
	Type string `json:"type"`
	// URLCitation is set for "url_citation".
	URLCitation *URLCitation `json:"url_citation,omitempty"`
}

// URLCitation cites a web page for a range of the content.
type URLCitation struct {
	// StartIndex is the index of the first character cited for.
	StartIndex int `json:"start_index"`
	// EndIndex is the index after the last character cited for.
	EndIndex int `json:"end_index"`
	// Title is the web page's title.
	Title string `json:"title"`
	// URL is the web page's URL.
	URL string `json:"url"`
}

// ChatAudio is audio output of a model.
type ChatAudio struct {
	// ID identifies the audio for later turns.
	ID string `json:"id"`
	// Data is the base64-encoded audio.
	Data string `json:"data"`
	// ExpiresAt is the Unix time after which ID is no longer valid.
	ExpiresAt int64 `json:"expires_at"`
	// Transcript is the audio's text.
	Transcript string `json:"transcript"`
}

// FunctionCall is a call of a function: its name and its JSON arguments.
type FunctionCall struct {
	// Name is the function's name.
	Name string `json:"name"`
	// Arguments are the arguments, as JSON text the model generated.
	Arguments string `json:"arguments"`
}

// ToolCall is a tool call of a generated message.
type ToolCall struct {
	// ID identifies the call, for the "tool" message that answers it.
	ID string `json:"id"`
	// Type is "function".
	Type string `json:"type"`
	// Function is the function called.
	Function FunctionCall `json:"function"`
}

// ChatCompletionChunk is one chunk of a streamed chat completion.
type ChatCompletionChunk struct {
	// ID identifies the completion; it is the same in every chunk.
	ID string `json:"id"`
	// Object is "chat.completion.chunk".
	Object string `json:"object"`
	// Created is the Unix time, in seconds, of the chunk.
	Created int64 `json:"created"`
	// Model is the model ("/opt/ml/model" on SageMaker).
	Model string `json:"model"`
	// Choices hold the increments of some choices; none in a usage chunk.
	Choices []ChatChunkChoice `json:"choices"`
	// ServiceTier is the service tier, if the server sends it.
	ServiceTier string `json:"service_tier,omitempty"`
	// SystemFingerprint identifies the backend, if the server sends it.
	SystemFingerprint string `json:"system_fingerprint,omitempty"`
	// Usage is set on the last chunk when stream_options.include_usage
	// was requested; servers may send null on other chunks.
	Usage *Usage `json:"usage,omitempty"`
}

// ChatChunkChoice is the part of a chunk for one choice.
type ChatChunkChoice struct {
	// Index is the position of the choice the delta belongs to.
	Index int `json:"index"`
	// Delta is what the chunk adds to the choice's message.
	Delta ChatDelta `json:"delta"`
	// Logprobs are the log probabilities of the delta's tokens.
	Logprobs *Logprobs `json:"logprobs,omitempty"`
	// FinishReason is "" until the choice's last chunk.
	FinishReason string `json:"finish_reason"`
	// StopReason is the stop string or stop token ID that ended
	// generation (vLLM), or "".
	StopReason StringOrNumber `json:"stop_reason,omitempty"`
}

// ChatDelta is the increment a chunk adds to a choice's message.
type ChatDelta struct {
	// Role is set on the first chunk only.
	Role string `json:"role,omitempty"`
	// Content is text to append to the message's content.
	Content string `json:"content,omitempty"`
	// ReasoningContent is text to append to the reasoning; reasoning
	// models stream it before the content.
	ReasoningContent string `json:"reasoning_content,omitempty"`
	// Refusal is text to append to the refusal.
	Refusal string `json:"refusal,omitempty"`
	// FunctionCall is a piece of a legacy function call.
	FunctionCall *FunctionCall `json:"function_call,omitempty"`
	// ToolCalls are pieces of tool calls.
	ToolCalls []ToolCallDelta `json:"tool_calls,omitempty"`
}

// ToolCallDelta is the increment of one tool call: the first delta of a
// call carries its ID, type and function name; later ones carry pieces of
// the arguments. Index identifies the call within the message.
type ToolCallDelta struct {
	// Index is the position of the call in the message.
	//
	// It is 0 when the server omits "index" (or sends null), as lax
	// servers do. [ChatAccumulator] then does not take the delta for a
	// piece of call 0: it merges it into the call with the same ID, or,
	// without an ID, into the call the previous delta went to if the
	// delta comes first in its chunk, and otherwise starts a new call, so
	// that several complete calls in one chunk stay apart. A delta built
	// in Go rather than decoded always uses Index.
	Index int `json:"index"`
	// ID is the call's ID, on its first delta.
	ID string `json:"id,omitempty"`
	// Type is "function", on the call's first delta.
	Type string `json:"type,omitempty"`
	// Function holds the name (first delta) and a piece of the arguments.
	Function FunctionCall `json:"function"`

	noIndex bool // decoded without an index
}

// UnmarshalJSON decodes d, recording whether the index was sent.
func (d *ToolCallDelta) UnmarshalJSON(b []byte) error {
	type plain ToolCallDelta
	var w struct {
		plain
		Index *int `json:"index"`
	}
	if err := json.Unmarshal(b, &w); err != nil {
		return err
	}
	*d = ToolCallDelta(w.plain)
	if w.Index != nil {
		d.Index = *w.Index
	} else {
		d.noIndex = true
	}
	return nil
}
