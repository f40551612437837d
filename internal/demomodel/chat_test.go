package demomodel

import (
	"slices"
	"strings"
	"testing"
)

func TestTokens(t *testing.T) {
	for _, s := range []string{"", "You said: hi", "  lead and trail  ", "a\n\nb", "héllo wörld"} {
		toks := tokens(s)
		if strings.Join(toks, "") != s {
			t.Errorf("tokens(%q) = %q do not rebuild it", s, toks)
		}
	}
	if got, want := tokens("You said: hi"), []string{"You", " said:", " hi"}; !slices.Equal(got, want) {
		t.Errorf("tokens = %q, want %q", got, want)
	}
}
