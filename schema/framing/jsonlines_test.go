package framing

import (
	"strings"
	"testing"
)

func TestJSONLinesFraming(t *testing.T) {
	jl := withFormat(FormatJSONLines)
	tests := []struct {
		name  string
		input string
		opts  []func(*Options)
		want  []string
	}{
		{"one per line", "{\"a\":1}\n{\"b\":2}\n", nil, []string{`{"a":1}`, `{"b":2}`, "EOF"}},
		{"no final newline", "{\"a\":1}", nil, []string{`{"a":1}`, "EOF"}},
		{"several on one line", "{\"a\":1}{\"b\":2} [3]\t\"s\" 4 true\n", nil, []string{`{"a":1}`, `{"b":2}`, "[3]", `"s"`, "4", "true", "EOF"}},
		{"pretty-printed", "{\n  \"a\": [\n    1\n  ]\n}\n{\n}\n", nil, []string{"{\n  \"a\": [\n    1\n  ]\n}", "{\n}", "EOF"}},
		{"CRLF inside a value", "{\r\n\"a\":1\r\n}\r\n", nil, []string{"{\n\"a\":1\n}", "EOF"}},
		{"blank lines and BOM", "\xEF\xBB\xBF\n\n  {\"a\":1}\n\n\n", nil, []string{`{"a":1}`, "EOF"}},
		{"numbers end at the delimiter", "1 -2.5e+3\n0", nil, []string{"1", "-2.5e+3", "0", "EOF"}},
		{"stray closing brace (seed 001)", "{\"a\":1}}\n{\"b\":2}\n", []func(*Options){jl}, []string{`{"a":1}`, "syntax@7"}},
		{"stray brace resync", "{\"a\":1}}\n{\"b\":2}\n", []func(*Options){jl, withResync}, []string{`{"a":1}`, "syntax@7", `{"b":2}`, "EOF"}},
		{"garbage line resync", "{\"a\":1}\n... more\n{\"b\":2}\n", []func(*Options){withResync}, []string{`{"a":1}`, "syntax@8", `{"b":2}`, "EOF"}},
		{"resync waits for a value in column 0", "{\"a\": x,\n  \"b\": {\n  }\n}\n{\"c\":3}\n", []func(*Options){withResync}, []string{"syntax@6", `{"c":3}`, "EOF"}},
		{"SSE in a JSON Lines stream", "data: 1\n", []func(*Options){jl}, []string{"syntax@0"}},
		{"truncated", "{\"a\": [1", nil, []string{"eof@8"}},
		{"truncated literal", "[tru", nil, []string{"eof@4"}},
		{"bad literal", "[trux]", nil, []string{"syntax@4"}},
		{"raw newline in string", "\"a\nb\"", nil, []string{"syntax@2"}},
		{"too large", "[1,2,3,4,5,6]\n[1]\n", []func(*Options){withMax(8), withResync}, []string{"toolarge@0", "[1]", "EOF"}},
		{"exactly at the limit", "[1,2,3,4]\n", []func(*Options){withMax(9)}, []string{"[1,2,3,4]", "EOF"}},
		{"deep nesting", strings.Repeat("[", maxDepth+1), nil, []string{"syntax@10000"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := outcomes(t, tt.input, tt.opts...)
			if strings.Join(got, " | ") != strings.Join(tt.want, " | ") {
				t.Errorf("got  %q\nwant %q", got, tt.want)
			}
			checkSplitInvariance(t, []byte(tt.input), 20, tt.opts...)
		})
	}
}

func TestFormatDetection(t *testing.T) {
	tests := []struct {
		input string
		want  Format
	}{
		{"data: 1\n", FormatSSE},
		{"\xEF\xBB\xBF\r\n : comment\n", FormatSSE},
		{"event: x\n", FormatSSE},
		{"{\"a\":1}\n", FormatJSONLines},
		{"\n\n  [1]", FormatJSONLines},
		{"-1", FormatJSONLines},
		{"null", FormatJSONLines},
		{"\"s\"", FormatJSONLines},
	}
	for _, tt := range tests {
		r := NewReader(strings.NewReader(tt.input))
		if r.Format() != FormatAuto {
			t.Fatalf("format known before reading: %v", r.Format())
		}
		r.Next()
		if got := r.Format(); got != tt.want {
			t.Errorf("%q: detected %v, want %v", tt.input, got, tt.want)
		}
	}
	// An explicit choice is kept, even when the bytes suggest otherwise.
	r := NewReader(strings.NewReader("{\"a\":1}\n"), withFormat(FormatSSE))
	if _, err := r.Next(); err == nil {
		t.Error("JSON Lines input accepted as SSE")
	}
	if r.Format() != FormatSSE {
		t.Errorf("format = %v", r.Format())
	}
}

func TestFormatString(t *testing.T) {
	for f, want := range map[Format]string{FormatAuto: "auto", FormatSSE: "sse", FormatJSONLines: "jsonlines"} {
		if f.String() != want {
			t.Errorf("%d: %q, want %q", f, f.String(), want)
		}
	}
}
