package clitest

import (
	"slices"
	"testing"
	"unicode/utf8"
)

func TestRandomPrompts(t *testing.T) {
	p := RandomPrompts(3, 20)
	if len(p) != 20 || p[0] != "a" || p[1] != "é" {
		t.Fatalf("prompts = %q", p)
	}
	for _, s := range p {
		if n := utf8.RuneCountInString(s); n < 1 || n > 30 || !utf8.ValidString(s) {
			t.Errorf("prompt %q: %d runes", s, n)
		}
	}
	if !slices.Equal(p, RandomPrompts(3, 20)) {
		t.Error("the same seed gave other prompts")
	}
	if slices.Equal(p, RandomPrompts(4, 20)) {
		t.Error("another seed gave the same prompts")
	}
}
