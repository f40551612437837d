package bidi

import (
	"testing"
	"unicode/utf8"
)

// TestUTF8StreamSplits: UTF-8 text split anywhere across fragments is
// accepted, including inside a character; invalid bytes, or text that
// ends inside a character, are refused wherever the split falls.
func TestUTF8StreamSplits(t *testing.T) {
	valid := "héllo, 世界 🎧 done"
	for cut1 := 0; cut1 <= len(valid); cut1++ {
		for cut2 := cut1; cut2 <= len(valid); cut2++ {
			var u utf8Stream
			ok := u.check([]byte(valid[:cut1]), false) && u.check([]byte(valid[cut1:cut2]), false) && u.check([]byte(valid[cut2:]), true)
			if !ok {
				t.Fatalf("valid text refused when cut at %d and %d", cut1, cut2)
			}
		}
	}
	for _, bad := range []string{"ab\xffcd", "caf\xc3", "\xe4\xb8", "x\xed\xa0\x80y" /* surrogate */} {
		for cut := 0; cut <= len(bad); cut++ {
			var u utf8Stream
			if u.check([]byte(bad[:cut]), false) && u.check([]byte(bad[cut:]), true) {
				t.Fatalf("%q accepted when cut at %d", bad, cut)
			}
		}
		if utf8.ValidString(bad) {
			t.Fatalf("test case %q is valid", bad)
		}
	}
	// A refused fragment leaves the stream as it was.
	var u utf8Stream
	u.check([]byte("ok \xe4"), false)
	if u.check([]byte("\xff"), false) {
		t.Fatal("accepted an invalid continuation")
	}
	if !u.check([]byte("\xb8\x96"), true) {
		t.Fatal("the stream changed after a refused fragment")
	}
}
