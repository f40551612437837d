package schema

// TextCompletion is an OpenAI-compatible text completion (object
// "text_completion"): a non-streaming response, one streamed chunk (whose
// choices carry the next piece of text), and what [CompletionAccumulator]
// rebuilds from a stream.
type TextCompletion struct {
	// ID identifies the completion ("cmpl-...").
	ID string `json:"id"`
	// Object is "text_completion", in chunks too.
	Object string `json:"object"`
	// Created is the Unix time, in seconds, of the completion.
	Created int64 `json:"created"`
	// Model is the model ("/opt/ml/model" on SageMaker).
	Model string `json:"model"`
	// Choices are the choices, one per prompt with several prompts.
	Choices []TextChoice `json:"choices"`
	// ServiceTier is the service tier, or "" for null.
	ServiceTier string `json:"service_tier,omitempty"`
	// SystemFingerprint identifies the backend, or "" for null.
	SystemFingerprint string `json:"system_fingerprint,omitempty"`
	// Usage is the token accounting; usually null in streamed chunks.
	Usage *Usage `json:"usage,omitempty"`
	// KVTransferParams are vLLM's disaggregated-prefill parameters.
	KVTransferParams map[string]any `json:"kv_transfer_params,omitempty"`
}

// TextChoice is one choice of a [TextCompletion]; with several prompts,
// one per prompt.
type TextChoice struct {
	// Index is the choice's position, from 0.
	Index int `json:"index"`
	// Text is the generated text (in a chunk, the next piece of it).
	Text string `json:"text"`
	// Logprobs is nil unless log probabilities were requested.
	Logprobs *CompletionLogprobs `json:"logprobs,omitempty"`
	// FinishReason is "stop" or "length"; "" until the last chunk.
	FinishReason string `json:"finish_reason"`
	// StopReason is the stop string or stop token ID that ended
	// generation (vLLM), or "".
	StopReason StringOrNumber `json:"stop_reason,omitempty"`
	// PromptLogprobs are the prompt's log probabilities, when requested.
	PromptLogprobs []map[string]PromptLogprob `json:"prompt_logprobs,omitempty"`
}
