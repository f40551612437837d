package schema

// Logprobs is the log probability information of a chat choice. It
// decodes both shapes servers send: an object with "content" (OpenAI,
// vLLM) and an array of such objects (LMI, seed 002), whose entries it
// concatenates.
type Logprobs struct {
	// Content are the log probabilities of the content's tokens.
	Content []TokenLogprob `json:"content"`
	// Refusal are the log probabilities of the refusal's tokens.
	Refusal []TokenLogprob `json:"refusal,omitempty"`
}

// UnmarshalJSON accepts an object or an array of objects.
func (l *Logprobs) UnmarshalJSON(b []byte) error {
	type plain Logprobs
	*l = Logprobs{}
	return unmarshalConcat(b, func(one *plain) { l.append((*Logprobs)(one)) })
}

// append adds the entries of m after those of l.
func (l *Logprobs) append(m *Logprobs) {
	l.Content = append(l.Content, m.Content...)
	l.Refusal = append(l.Refusal, m.Refusal...)
}

// TokenLogprob is the log probability of one generated token.
type TokenLogprob struct {
	// Token is the token text; see [StringOrNumber].
	Token StringOrNumber `json:"token"`
	// Logprob is the token's log probability.
	Logprob float64 `json:"logprob"`
	// Bytes are the UTF-8 bytes of the token, or nil.
	Bytes []int `json:"bytes,omitempty"`
	// TopLogprobs are the most likely tokens at this position.
	TopLogprobs []TopLogprob `json:"top_logprobs"`
}

// TopLogprob is one of the most likely tokens at a position. Seed 002
// shows servers that send Token as a number.
type TopLogprob struct {
	// Token is the token text; see [StringOrNumber].
	Token StringOrNumber `json:"token"`
	// Logprob is the token's log probability.
	Logprob float64 `json:"logprob"`
	// Bytes are the UTF-8 bytes of the token, or nil.
	Bytes []int `json:"bytes,omitempty"`
}

// CompletionLogprobs is the log probability information of a text
// completion choice, in the legacy completions shape. An array of such
// objects decodes too, concatenated.
type CompletionLogprobs struct {
	// TextOffset are the positions of the tokens in the text.
	TextOffset []int `json:"text_offset"`
	// TokenLogprobs are the tokens' log probabilities (0 for null).
	TokenLogprobs []float64 `json:"token_logprobs"`
	// Tokens are the tokens' texts.
	Tokens []string `json:"tokens"`
	// TopLogprobs maps, per position, each likely token to its log
	// probability.
	TopLogprobs []map[string]float64 `json:"top_logprobs"`
}

// UnmarshalJSON accepts an object or an array of objects.
func (l *CompletionLogprobs) UnmarshalJSON(b []byte) error {
	type plain CompletionLogprobs
	*l = CompletionLogprobs{}
	return unmarshalConcat(b, func(one *plain) { l.append((*CompletionLogprobs)(one)) })
}

// append adds the entries of m after those of l.
func (l *CompletionLogprobs) append(m *CompletionLogprobs) {
	l.TextOffset = append(l.TextOffset, m.TextOffset...)
	l.TokenLogprobs = append(l.TokenLogprobs, m.TokenLogprobs...)
	l.Tokens = append(l.Tokens, m.Tokens...)
	l.TopLogprobs = append(l.TopLogprobs, m.TopLogprobs...)
}

// PromptLogprob is vLLM's log probability entry for a prompt token.
type PromptLogprob struct {
	// Logprob is the token's log probability.
	Logprob float64 `json:"logprob"`
	// Rank is the token's rank among the likely tokens, from 1.
	Rank int `json:"rank"`
	// DecodedToken is the token's text.
	DecodedToken string `json:"decoded_token"`
}
