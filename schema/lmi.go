package schema

import "encoding/json"

// This file holds the LMI (Large Model Inference container) payloads of
// seed 001: requests, responses, stream lines, the TGI-compatible array
// form and dynamic-batch outputs.

// LMIRequest is the body of an LMI request, for rolling (continuous) and
// dynamic (static) batching alike.
type LMIRequest struct {
	// Inputs is the prompt, or a batch of prompts (dynamic batching).
	Inputs Inputs `json:"inputs"`
	// Parameters control decoding; nil means the container's defaults.
	Parameters *GenerationParameters `json:"parameters,omitempty"`
	// Stream asks for a token-by-token response (rolling batching).
	Stream bool `json:"stream,omitempty"`
}

// Inputs is the LMI "inputs" field: one prompt, encoded as a JSON string,
// or a batch of prompts, encoded as a JSON array of strings.
type Inputs struct {
	// Text is the prompt when Batch is nil.
	Text string
	// Batch holds the prompts of a batch; when non-nil it is encoded
	// instead of Text, even if empty.
	Batch []string
}

// MarshalJSON encodes Batch as an array when it is non-nil, else Text as
// a string.
func (in Inputs) MarshalJSON() ([]byte, error) { return marshalEither(in.Text, in.Batch) }

// UnmarshalJSON accepts a string, an array of strings, or null.
func (in *Inputs) UnmarshalJSON(b []byte) error {
	*in = Inputs{}
	return unmarshalEither(b, &in.Text, &in.Batch)
}

// GenerationParameters are the LMI decoding parameters: those every
// rolling-batch backend accepts, then those specific to lmi-dist, vLLM and
// TensorRT-LLM. A field whose zero value is also the documented default is
// a plain value omitted when zero; a field for which zero means something
// else than the default is a pointer, omitted when nil.
type GenerationParameters struct {
	// DoSample enables sampling (required for it up to LMI 0.31).
	DoSample bool `json:"do_sample,omitempty"`
	// Seed makes sampling reproducible.
	Seed *int64 `json:"seed,omitempty"`
	// Temperature scales the logits (default 1.0).
	Temperature *float64 `json:"temperature,omitempty"`
	// RepetitionPenalty penalises repeated tokens (default 1.0).
	RepetitionPenalty *float64 `json:"repetition_penalty,omitempty"`
	// TopK keeps the K most likely tokens (default 0, or -1 in vLLM and
	// lmi-dist: all).
	TopK *int `json:"top_k,omitempty"`
	// TopP keeps the most likely tokens up to this probability mass.
	TopP *float64 `json:"top_p,omitempty"`
	// MaxNewTokens bounds the generated tokens (default 30).
	MaxNewTokens int `json:"max_new_tokens,omitempty"`
	// Details asks for [Details] in the response (rolling batch only).
	Details bool `json:"details,omitempty"`
	// ReturnFullText prefixes the prompt to the generated text.
	ReturnFullText bool `json:"return_full_text,omitempty"`
	// StopSequences end generation when generated.
	StopSequences []string `json:"stop_sequences,omitempty"`
	// DecoderInputDetails asks for the prompt tokens in Details.Prefill
	// (vLLM, lmi-dist).
	DecoderInputDetails bool `json:"decoder_input_details,omitempty"`

	// TypicalP is the typical-decoding mass (lmi-dist, default 1.0).
	TypicalP *float64 `json:"typical_p,omitempty"`
	// Truncate keeps only this many prompt tokens (lmi-dist).
	Truncate int `json:"truncate,omitempty"`
	// IgnoreEOSToken keeps generating after the end-of-sequence token.
	IgnoreEOSToken bool `json:"ignore_eos_token,omitempty"`
	// MinP drops tokens less likely than this fraction of the most
	// likely one.
	MinP float64 `json:"min_p,omitempty"`
	// PresencePenalty penalises tokens already present.
	PresencePenalty float64 `json:"presence_penalty,omitempty"`
	// FrequencyPenalty penalises tokens by their frequency so far.
	FrequencyPenalty float64 `json:"frequency_penalty,omitempty"`
	// N is the number of sequences to return (non-streaming only).
	N int `json:"n,omitempty"`
	// BestOf is the number of sequences to generate, of which N return.
	BestOf int `json:"best_of,omitempty"`
	// NumBeams enables beam search above 1 (non-streaming only).
	NumBeams int `json:"num_beams,omitempty"`
	// LengthPenalty is the beam-search length penalty (default 1.0).
	LengthPenalty *float64 `json:"length_penalty,omitempty"`
	// EarlyStopping stops beam search when enough candidates end.
	EarlyStopping bool `json:"early_stopping,omitempty"`
	// StopTokenIDs end generation when generated.
	StopTokenIDs []int `json:"stop_token_ids,omitempty"`
	// IncludeStopStrInOutput keeps the stop sequence in the output.
	IncludeStopStrInOutput bool `json:"include_stop_str_in_output,omitempty"`
	// Logprobs is the number of log probabilities per generated token.
	Logprobs *int `json:"logprobs,omitempty"`
	// PromptLogprobs is the number of log probabilities per prompt token.
	PromptLogprobs *int `json:"prompt_logprobs,omitempty"`
	// SkipSpecialTokens drops special tokens from the text (default true).
	SkipSpecialTokens *bool `json:"skip_special_tokens,omitempty"`
	// SpacesBetweenSpecialTokens separates special tokens with spaces
	// (default true).
	SpacesBetweenSpecialTokens *bool `json:"spaces_between_special_tokens,omitempty"`

	// MinLength is the minimum number of generated tokens (TensorRT-LLM).
	MinLength int `json:"min_length,omitempty"`
	// BadSequences must not be generated (TensorRT-LLM).
	BadSequences []string `json:"bad_sequences,omitempty"`
	// Stop is TensorRT-LLM's boolean stop parameter.
	Stop *bool `json:"stop,omitempty"`
}

// Token is one generated (or prompt) token.
type Token struct {
	// ID is the token ID of the model's tokenizer (-1 for an error).
	ID int `json:"id"`
	// Text is the token's text.
	Text string `json:"text"`
	// LogProb is the token's log probability (closer to 0 is likelier).
	LogProb float64 `json:"log_prob"`
	// SpecialToken marks a special token, such as an error token.
	SpecialToken bool `json:"special_token,omitempty"`
}

// Details is the generation detail LMI returns when parameters.details is
// true. Seed 001's examples also spell finish_reason "finish reason"; both
// spellings decode into FinishReason.
type Details struct {
	// FinishReason is "length", "eos_token", "stop_sequence", or "error"
	// when generation failed.
	FinishReason string `json:"finish_reason"`
	// GeneratedTokens is the number of generated tokens (0 for null).
	GeneratedTokens int `json:"generated_tokens"`
	// Inputs is the prompt.
	Inputs string `json:"inputs,omitempty"`
	// Tokens are the generated tokens (non-streaming responses).
	Tokens []Token `json:"tokens,omitempty"`
	// Prefill are the prompt tokens, when decoder_input_details is set.
	Prefill []Token `json:"prefill,omitempty"`
	// BestOfSequences are the other sequences, when best_of or num_beams
	// is above 1.
	BestOfSequences []BestOfSequence `json:"best_of_sequences,omitempty"`
}

// UnmarshalJSON decodes d, accepting "finish reason" for finish_reason.
func (d *Details) UnmarshalJSON(b []byte) error {
	type plain Details
	return unmarshalFinishReason(b, (*plain)(d), &d.FinishReason)
}

// BestOfSequence is one of the other sequences generated when best_of or
// num_beams is above 1.
type BestOfSequence struct {
	// FinishReason is why the sequence ended, as in [Details].
	FinishReason string `json:"finish_reason"`
	// GeneratedTokens is the number of tokens of the sequence.
	GeneratedTokens int `json:"generated_tokens"`
	// Tokens are the sequence's tokens.
	Tokens []Token `json:"tokens,omitempty"`
	// GeneratedText is the sequence's text.
	GeneratedText string `json:"generated_text"`
}

// UnmarshalJSON decodes s, accepting "finish reason" for finish_reason.
func (s *BestOfSequence) UnmarshalJSON(b []byte) error {
	type plain BestOfSequence
	return unmarshalFinishReason(b, (*plain)(s), &s.FinishReason)
}

// unmarshalFinishReason decodes b into *v, which it replaces whole, and
// then, if the finish reason *finish (a field of *v) is empty, reads it
// from the "finish reason" member, if any. P is a type without methods,
// so that decoding it does not call back into UnmarshalJSON.
func unmarshalFinishReason[P any](b []byte, v *P, finish *string) error {
	var p P
	if err := json.Unmarshal(b, &p); err != nil {
		return err
	}
	*v = p
	if *finish != "" {
		return nil
	}
	var spaced struct {
		FinishReason *string `json:"finish reason"`
	}
	if err := json.Unmarshal(b, &spaced); err != nil {
		return err
	}
	if spaced.FinishReason != nil {
		*finish = *spaced.FinishReason
	}
	return nil
}

// LMIResponse is a non-streaming LMI response, and one element of the
// TGI-compatible and dynamic-batch array forms.
type LMIResponse struct {
	// GeneratedText is the result of the generation.
	GeneratedText string `json:"generated_text"`
	// Details is set when parameters.details was true.
	Details *Details `json:"details,omitempty"`
}

// Err returns a [*GenerationError] if the response reports a failed
// generation (details.finish_reason "error"), else nil.
func (r *LMIResponse) Err() error {
	if r.Details != nil && r.Details.FinishReason == finishError {
		return &GenerationError{Details: *r.Details}
	}
	return nil
}

// LMIResponses is a list of LMI responses: the TGI-compatible form
// (tgi_compat) and the dynamic-batch response, one element per prompt. It
// also accepts a single object, so callers need not know whether
// tgi_compat is on.
type LMIResponses []LMIResponse

// UnmarshalJSON accepts an array of responses or a single response.
func (rs *LMIResponses) UnmarshalJSON(b []byte) error {
	return unmarshalList(b, '{', (*[]LMIResponse)(rs))
}

// LMIStreamLine is one line of an LMI rolling-batch stream (JSON Lines or
// SSE): a token, and on the last line the generated text and details.
type LMIStreamLine struct {
	// Token is the token this line adds.
	Token Token `json:"token"`
	// GeneratedText is set on the last line only.
	GeneratedText *string `json:"generated_text,omitempty"`
	// Details is set on the last line only, when details were requested.
	Details *Details `json:"details,omitempty"`
}

// Final reports whether this is the last line of the response.
func (l *LMIStreamLine) Final() bool { return l.GeneratedText != nil || l.Details != nil }

// Err returns a [*GenerationError] if the line reports that generation
// failed mid-stream (details.finish_reason "error"), else nil.
func (l *LMIStreamLine) Err() error {
	if l.Details != nil && l.Details.FinishReason == finishError {
		return &GenerationError{Details: *l.Details, Token: l.Token}
	}
	return nil
}

const finishError = "error"

// DynamicBatchOutput is one line of a dynamic-batch stream
// (option.enable_streaming): the next piece of output for each prompt of
// the batch, by position.
type DynamicBatchOutput struct {
	// Outputs holds the next piece of text of each prompt.
	Outputs []string `json:"outputs"`
}
