package span

import "testing"

func TestPlain(t *testing.T) {
	for _, tt := range []struct {
		in        string
		asciiOnly bool
		want      int
	}{
		{"", false, 0}, {"abc", false, 3}, {"abcdefghij\"", false, 10}, {"abcdefgh\\", false, 8},
		{"abcdefghijklmnop\x01", false, 16}, {"\"", false, 0},
		{"caf\xc3\xa9 \xf0\x9f\x98\x80 x\"", false, 12}, {"1234567\n", false, 7},
		{"", true, 0}, {"abc", true, 3}, {"abcdefghij\"", true, 10}, {"abcdefgh\\", true, 8},
		{"abcdefghijklmnop\x01", true, 16}, {"\"", true, 0}, {"caf\xc3\xa9", true, 3},
		{"1234567\x7f\x80", true, 8}, {"12345678\xff", true, 8}, {"\x1f", true, 0},
	} {
		if got := Plain([]byte(tt.in), tt.asciiOnly); got != tt.want {
			t.Errorf("Plain(%q, %v) = %d, want %d", tt.in, tt.asciiOnly, got, tt.want)
		}
	}
}

// FuzzPlain checks Plain against a byte-by-byte reading of the same rule.
func FuzzPlain(f *testing.F) {
	f.Add([]byte("abcdefgh\"ijklmnop"), false)
	f.Add([]byte("caf\xc3\xa9 \x7f\x80\\"), true)
	f.Fuzz(func(t *testing.T, b []byte, asciiOnly bool) {
		want := 0
		for want < len(b) {
			c := b[want]
			if c < 0x20 || c == '"' || c == '\\' || asciiOnly && c >= 0x80 {
				break
			}
			want++
		}
		if got := Plain(b, asciiOnly); got != want {
			t.Fatalf("Plain(%q, %v) = %d, want %d", b, asciiOnly, got, want)
		}
	})
}
