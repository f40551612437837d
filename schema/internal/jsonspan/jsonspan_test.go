package jsonspan

import "testing"

func TestString(t *testing.T) {
	for _, tt := range []struct {
		in   string
		want int
	}{
		{"", 0}, {"abc", 3}, {"abcdefghij\"", 10}, {"abcdefgh\\", 8}, {"abcdefghijklmnop\x01", 16},
		{"\"", 0}, {"caf\xc3\xa9 \xf0\x9f\x98\x80 x\"", 12}, {"1234567\n", 7},
		{"1234567\x7f\x80\xff\"", 10}, {"\x1f", 0},
	} {
		if got := String([]byte(tt.in)); got != tt.want {
			t.Errorf("String(%q) = %d, want %d", tt.in, got, tt.want)
		}
	}
}

func TestASCII(t *testing.T) {
	for _, tt := range []struct {
		in   string
		want int
	}{
		{"", 0}, {"abc", 3}, {"abcdefghij\"", 10}, {"abcdefgh\\", 8}, {"abcdefghijklmnop\x01", 16},
		{"\"", 0}, {"caf\xc3\xa9", 3}, {"1234567\x7f\x80", 8}, {"12345678\xff", 8}, {"\x1f", 0},
	} {
		if got := ASCII([]byte(tt.in)); got != tt.want {
			t.Errorf("ASCII(%q) = %d, want %d", tt.in, got, tt.want)
		}
	}
}

// TestSpansMatchByteByByte compares both spans with a plain loop over every
// byte value at every position of a 20-byte input, so that the eight-byte
// path and the tail both meet each value.
func TestSpansMatchByteByByte(t *testing.T) {
	for pos := 0; pos < 20; pos++ {
		for c := 0; c < 256; c++ {
			b := []byte("abcdefghijklmnopqrst")
			b[pos] = byte(c)
			for _, fn := range []struct {
				name  string
				span  func([]byte) int
				ascii bool
			}{{"String", String, false}, {"ASCII", ASCII, true}} {
				want := 0
				for ; want < len(b); want++ {
					c := b[want]
					if c < 0x20 || c == '"' || c == '\\' || fn.ascii && c >= 0x80 {
						break
					}
				}
				if got := fn.span(b); got != want {
					t.Fatalf("%s with %#x at %d = %d, want %d", fn.name, c, pos, got, want)
				}
			}
		}
	}
}
