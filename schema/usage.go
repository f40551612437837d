package schema

// Usage is the token accounting of a completion.
type Usage struct {
	// PromptTokens is the number of tokens of the prompt.
	PromptTokens int `json:"prompt_tokens"`
	// CompletionTokens is the number of generated tokens.
	CompletionTokens int `json:"completion_tokens"`
	// TotalTokens is their sum.
	TotalTokens int `json:"total_tokens"`
	// PromptTokensDetails is nil when the server sends null.
	PromptTokensDetails *PromptTokensDetails `json:"prompt_tokens_details,omitempty"`
}

// PromptTokensDetails breaks prompt tokens down.
type PromptTokensDetails struct {
	// CachedTokens is the number of prompt tokens served from the cache.
	CachedTokens int `json:"cached_tokens"`
}
