package framing

import (
	"encoding/json"
	"testing"
)

// scanWhole scans b as one top-level value and reports whether the
// scanner accepts it: exactly one value, nothing but whitespace after.
func scanWhole(b []byte) bool {
	var s scanner
	i := 0
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r') {
		i++
	}
	if i == len(b) {
		return false
	}
	for {
		n, res := s.scan(b[i:])
		i += n
		switch res {
		case scanError:
			return false
		case scanLineEnd:
			i++ // whitespace inside a value
			continue
		case scanMore:
			if !s.endOfInput() {
				return false
			}
		}
		break
	}
	for ; i < len(b); i++ {
		if c := b[i]; c != ' ' && c != '\t' && c != '\n' && c != '\r' {
			return false
		}
	}
	return true
}

var scanCases = []string{
	`{}`, `[]`, `""`, `0`, `-0`, `1.5`, `-1.5e10`, `1E+2`, `1e-2`, `true`, `false`, `null`,
	`{"a":[1,{"b":null}],"c":"\u00e9\n\"\\\/\b\f\r\t"}`, "[1,\n2]", `"\ud83d\ude00"`,
	`{"a" : 1 , "b" : [ ] }`, "\"\xff\xfe\"", `"é"`,
	// invalid
	`{`, `}`, `[1,]`, `{"a":1,}`, `{"a"}`, `{"a":}`, `{1:2}`, `[1 2]`, `01`, `1.`, `.5`, `-`, `1e`, `1e+`,
	`tru`, `nul`, `True`, `"\x"`, `"\u12g4"`, "\"a\tb\"", `[}`, `{]`, `"abc`, `[1]]`, `+1`, `NaN`, `'a'`,
}

func TestScannerMatchesEncodingJSON(t *testing.T) {
	for _, c := range scanCases {
		if got, want := scanWhole([]byte(c)), json.Valid([]byte(c)); got != want {
			t.Errorf("%q: scanner accepts=%v, encoding/json valid=%v", c, got, want)
		}
	}
}
