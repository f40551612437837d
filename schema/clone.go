package schema

import (
	"maps"
	"slices"
)

// The clone functions below return deep copies, so that what an
// accumulator keeps and what its Result returns share no memory: a
// caller may change a result, or a chunk it added, without changing the
// next result. nil stays nil and empty stays empty.

func cloneUsage(u *Usage) *Usage {
	if u == nil {
		return nil
	}
	c := *u
	if d := u.PromptTokensDetails; d != nil {
		dc := *d
		c.PromptTokensDetails = &dc
	}
	return &c
}

// cloneJSONObject copies an object decoded into a map by encoding/json,
// with the objects and arrays it contains. Values of other types are
// immutable when encoding/json produced them, and copied as they are.
func cloneJSONObject(m map[string]any) map[string]any {
	if m == nil {
		return nil
	}
	c := make(map[string]any, len(m))
	for k, v := range m {
		c[k] = cloneJSON(v)
	}
	return c
}

func cloneJSON(v any) any {
	switch v := v.(type) {
	case map[string]any:
		return cloneJSONObject(v)
	case []any:
		if v == nil {
			return v
		}
		c := make([]any, len(v))
		for i, e := range v {
			c[i] = cloneJSON(e)
		}
		return c
	}
	return v
}

func clonePromptLogprobs(p []map[string]PromptLogprob) []map[string]PromptLogprob {
	if p == nil {
		return nil
	}
	c := make([]map[string]PromptLogprob, len(p))
	for i, m := range p {
		c[i] = maps.Clone(m)
	}
	return c
}

func (l *Logprobs) clone() *Logprobs {
	if l == nil {
		return nil
	}
	return &Logprobs{Content: cloneTokenLogprobs(l.Content), Refusal: cloneTokenLogprobs(l.Refusal)}
}

func cloneTokenLogprobs(s []TokenLogprob) []TokenLogprob {
	s = slices.Clone(s)
	for i := range s {
		t := &s[i]
		t.Bytes = slices.Clone(t.Bytes)
		t.TopLogprobs = slices.Clone(t.TopLogprobs)
		for j := range t.TopLogprobs {
			t.TopLogprobs[j].Bytes = slices.Clone(t.TopLogprobs[j].Bytes)
		}
	}
	return s
}

func (l *CompletionLogprobs) clone() *CompletionLogprobs {
	if l == nil {
		return nil
	}
	c := &CompletionLogprobs{
		TextOffset:    slices.Clone(l.TextOffset),
		TokenLogprobs: slices.Clone(l.TokenLogprobs),
		Tokens:        slices.Clone(l.Tokens),
		TopLogprobs:   slices.Clone(l.TopLogprobs),
	}
	for i, m := range c.TopLogprobs {
		c.TopLogprobs[i] = maps.Clone(m)
	}
	return c
}

func (d *Details) clone() *Details {
	if d == nil {
		return nil
	}
	c := *d
	c.Tokens = slices.Clone(d.Tokens)
	c.Prefill = slices.Clone(d.Prefill)
	c.BestOfSequences = slices.Clone(d.BestOfSequences)
	for i := range c.BestOfSequences {
		c.BestOfSequences[i].Tokens = slices.Clone(c.BestOfSequences[i].Tokens)
	}
	return &c
}
