package schema

import "testing"

func TestPlainSpan(t *testing.T) {
	for _, tt := range []struct {
		in   string
		want int
	}{
		{"", 0}, {"abc", 3}, {"abcdefghij\"", 10}, {"abcdefgh\\", 8}, {"abcdefghijklmnop\x01", 16},
		{"\"", 0}, {"caf\xc3\xa9", 3}, {"1234567\x7f\x80", 8}, {"12345678\xff", 8}, {"\x1f", 0},
	} {
		if got := plainSpan([]byte(tt.in)); got != tt.want {
			t.Errorf("plainSpan(%q) = %d, want %d", tt.in, got, tt.want)
		}
	}
}
