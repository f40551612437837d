// Package clitest holds what the example programs' tests share.
package clitest

import (
	"math/rand/v2"
	"strings"
)

// RandomPrompts returns n prompts (n ≥ 2) of 1 to 30 characters, some of
// them multi-byte, quotes or backslashes; the first two are the
// 1-character prompts "a" and "é". The same seed gives the same prompts.
func RandomPrompts(seed uint64, n int) []string {
	rng := rand.New(rand.NewPCG(seed, 7))
	alphabet := []rune(`abcXYZ 019?!"\é漢字🙂ß`)
	prompts := []string{"a", "é"}
	for len(prompts) < n {
		r := make([]rune, 1+rng.IntN(30))
		for i := range r {
			r[i] = alphabet[rng.IntN(len(alphabet))]
		}
		if p := strings.TrimSpace(string(r)); p != "" {
			prompts = append(prompts, p)
		}
	}
	return prompts
}
