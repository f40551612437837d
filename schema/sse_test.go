package schema

import (
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"
	"time"
)

// outcomes frames input with a Reader and summarises each result:
// the data, "<DONE>", "EOF", or "syntax@N", "eof@N", "toolarge@N" for
// errors at stream offset N.
func outcomes(t *testing.T, input string, optFns ...func(*Options)) []string {
	t.Helper()
	r := NewReader(strings.NewReader(input), optFns...)
	resync := buildOptions(optFns).Resync
	var out []string
	for len(out) < 1000 {
		ev, err := r.Next()
		var syn *SyntaxError
		var big *EventTooLargeError
		switch {
		case err == io.EOF:
			return append(out, "EOF")
		case errors.As(err, &syn) && errors.Is(err, io.ErrUnexpectedEOF):
			return append(out, fmt.Sprintf("eof@%d", syn.Offset))
		case errors.As(err, &syn):
			out = append(out, fmt.Sprintf("syntax@%d", syn.Offset))
		case errors.As(err, &big):
			if !errors.Is(err, ErrEventTooLarge) {
				t.Fatalf("%v does not match ErrEventTooLarge", err)
			}
			out = append(out, fmt.Sprintf("toolarge@%d", big.Offset))
		case err != nil:
			t.Fatalf("unexpected error type %T: %v", err, err)
		case ev.Done:
			out = append(out, "<DONE>")
		default:
			out = append(out, string(ev.Data))
		}
		if err != nil && !resync {
			// Without Resync the error is final: the next call repeats it.
			if _, again := r.Next(); again == nil || again.Error() != err.Error() {
				t.Fatalf("error %v not final: next call gave %v", err, again)
			}
			return out
		}
	}
	t.Fatal("no end")
	return nil
}

func TestSSEFraming(t *testing.T) {
	sse := withFormat(FormatSSE)
	tests := []struct {
		name  string
		input string
		opts  []func(*Options)
		want  []string
	}{
		{"standard", "data: {\"a\":1}\n\ndata: {\"b\":2}\n\n", nil, []string{`{"a":1}`, `{"b":2}`, "EOF"}},
		{"no space after colon", "data:{\"a\":1}\n\n", nil, []string{`{"a":1}`, "EOF"}},
		{"blank-line-free", "data: {\"a\":1}\ndata:{\"b\":2}\ndata: [DONE]\n", nil, []string{`{"a":1}`, `{"b":2}`, "<DONE>", "EOF"}},
		{"no final newline", "data: {\"a\":1}", nil, []string{`{"a":1}`, "EOF"}},
		{"CRLF", "data: {\"a\":1}\r\n\r\ndata: {\"b\":2}\r\n\r\n", nil, []string{`{"a":1}`, `{"b":2}`, "EOF"}},
		{"CR", "data: {\"a\":1}\r\rdata: {\"b\":2}\r\r", nil, []string{`{"a":1}`, `{"b":2}`, "EOF"}},
		{"CR inside a line ends it", "data: {\"a\":\rdata: 1}\n\n", nil, []string{"{\"a\":\n 1}", "EOF"}},
		{"BOM", "\xEF\xBB\xBFdata: {\"a\":1}\n\n", nil, []string{`{"a":1}`, "EOF"}},
		{"BOM only once", "\xEF\xBB\xBF\xEF\xBB\xBFdata: 1\n\n", []func(*Options){sse}, []string{"syntax@3"}},
		{"comments and unknown fields", ": keep-alive\nfoo: bar\nx-trace\n   \ndata: 1\n\n", nil, []string{"1", "EOF"}},
		{"multi-line data", "data: {\"a\":\ndata: [1,\ndata: 2]}\n\n", nil, []string{"{\"a\":\n [1,\n 2]}", "EOF"}},
		{"continuation without data prefix (seed 001)", "data:{\n    \"a\": 1,\n    \"b\": [2]\n}\ndata:{\"c\":3}\n", nil, []string{"{\n    \"a\": 1,\n    \"b\": [2]\n}", `{"c":3}`, "EOF"}},
		{"scalar values", "data: 42\ndata: \"s\"\ndata: true\ndata: null\ndata: -1.5e3\n", nil, []string{"42", `"s"`, "true", "null", "-1.5e3", "EOF"}},
		{"trailing whitespace trimmed", "data:   {\"a\":1}  \t\n\n", nil, []string{`{"a":1}`, "EOF"}},
		{"empty data is no event", "data:\ndata\n\ndata: \n\n", nil, []string{"EOF"}},
		{"empty data is no event (CRLF)", "data:\r\n\r\ndata: \r\n\r\ndata\r\n\r\n", nil, []string{"EOF"}},
		{"blanks around DONE", "data:" + strings.Repeat(" ", 64) + "[DONE]" + strings.Repeat("\t", 64) + "\n", nil, []string{"<DONE>", "EOF"}},
		{"too many blanks before DONE", "data:" + strings.Repeat(" ", 65) + "[DONE]\n", nil, []string{"syntax@71"}},
		{"too many blanks after DONE", "data: [DONE]" + strings.Repeat(" ", 65) + "\n\n", nil, []string{"[DONE]", "EOF"}}, // data, not the marker
		{"data field without colon in a value", "data: [1,\ndata\ndata: 2]\n", nil, []string{"[1,\n\n 2]", "EOF"}},
		{"DONE variants", "data: [DONE]\ndata:[DONE]\ndata: [DONE]  \r\n\r\ndata: [DONE]", nil, []string{"<DONE>", "<DONE>", "<DONE>", "<DONE>", "EOF"}},
		{"DONE then more turns", "data: 1\n\ndata: [DONE]\n\ndata: 2\n\ndata: [DONE]\n\n", nil, []string{"1", "<DONE>", "2", "<DONE>", "EOF"}},
		{"DONE-like array is data", "data: [\"DONE\"]\n\n", nil, []string{`["DONE"]`, "EOF"}},
		{"malformed data before blank line is an event", "data: {\"a\" 1}\n\n", nil, []string{`{"a" 1}`, "EOF"}},
		{"malformed data without blank line", "data: {\"a\" 1}\ndata: 2\n", nil, []string{"syntax@11"}},
		{"malformed data at EOF", "data: {\"a\" 1}\n", nil, []string{"syntax@11"}},
		{"two values on one line", "data: 1 2\ndata: 3\n", nil, []string{"syntax@8"}},
		{"incomplete before blank line is an event", "data: {\"a\":\n\n", nil, []string{`{"a":`, "EOF"}},
		{"garbage line", "data: 1\n}\ndata: 2\n", nil, []string{"1", "syntax@8"}},
		{"garbage line resync", "data: 1\n}\ndata: 2\n", []func(*Options){withResync}, []string{"1", "syntax@8", "2", "EOF"}},
		{"resync skips continuation of a broken value", "data: {\"a\" x\n  \"b\": 1}\nevent: e\ndata: 3\n", []func(*Options){withResync}, []string{"syntax@11", "3", "EOF"}},
		{"truncated value", "data: {\"a\": [1, 2", nil, []string{"eof@17"}},
		{"truncated string", "data: {\"a\": \"xy", nil, []string{"eof@15"}},
		{"truncated number at EOF is complete", "data: 12", nil, []string{"12", "EOF"}},
		{"too large", "data: [1,2,3,4,5,6,7,8,9,10]\n\ndata: 1\n\n", []func(*Options){withMax(10)}, []string{"toolarge@6"}},
		{"too large resync", "data: [1,2,3,4,5,6,7,8,9,10]\n\ndata: 1\n\n", []func(*Options){withMax(10), withResync}, []string{"toolarge@6", "1", "EOF"}},
		{"too large scanned", "data: [1,2,3,4,5,\n6,7,8,9,10]\ndata: 1\n", []func(*Options){withMax(10), withResync}, []string{"toolarge@6", "1", "EOF"}},
		{"field line too large", "event: " + strings.Repeat("x", 20) + "\ndata: 1\n\n", []func(*Options){withMax(10), withResync}, []string{"toolarge@0", "1", "EOF"}},
		{"empty stream", "", nil, []string{"EOF"}},
		{"only whitespace", " \n\r\n\t", nil, []string{"EOF"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := outcomes(t, tt.input, tt.opts...)
			if strings.Join(got, " | ") != strings.Join(tt.want, " | ") {
				t.Errorf("got  %q\nwant %q", got, tt.want)
			}
			checkSplitInvariance(t, []byte(tt.input), 30, tt.opts...)
		})
	}
}

func TestSSEFields(t *testing.T) {
	input := "retry: 1500\nid: 7\nevent: delta\ndata: 1\n\n" + // typed event
		"data: 2\n\n" + // type resets, id persists
		"event: delta\ndata: 3\n\n" + // same type again (cached string)
		"id\nretry: x\nevent: end\ndata: [DONE]\n\n" + // empty id; bad retry ignored
		"id: a\x00b\ndata: 4\n\n" // id with NUL ignored
	got := checkSplitInvariance(t, []byte(input), 20)
	want := []record{
		{Data: "1", Type: "delta", ID: "7", Retry: 1500, Offset: 37},
		{Data: "2", ID: "7", Retry: 1500, Offset: 46},
		{Data: "3", Type: "delta", ID: "7", Retry: 1500, Offset: 68},
		{Done: true, Type: "end", ID: "", Retry: 1500, Offset: 100},
		{Data: "4", Retry: 1500, Offset: 122},
		{Err: io.EOF.Error()},
	}
	if !equalRecords(got, want) {
		t.Errorf("got  %v\nwant %v", got, want)
	}
}

func TestSSEEventTypeWithoutData(t *testing.T) {
	// A blank line ends an event block: a type without data is dropped.
	got := outcomesTypes(t, "event: a\n\ndata: 1\n\nevent: b\ndata: 2\n\n")
	if want := []string{"1:", "2:b"}; strings.Join(got, ",") != strings.Join(want, ",") {
		t.Errorf("got %v, want %v", got, want)
	}
}

func outcomesTypes(t *testing.T, input string) []string {
	t.Helper()
	var out []string
	for _, r := range readAll([]byte(input)) {
		if r.Err == "" {
			out = append(out, r.Data+":"+r.Type)
		}
	}
	return out
}

func TestSSEErrorMessage(t *testing.T) {
	_, err := NewReader(strings.NewReader("data: 1\n... more tokens\n")).Next()
	if err != nil {
		t.Fatal(err)
	}
	r := NewReader(strings.NewReader("data: 1\n... more tokens\n"))
	r.Next()
	_, err = r.Next()
	want := `schema: syntax error at offset 8: unexpected text outside an event: "... more tokens"`
	if err == nil || err.Error() != want {
		t.Errorf("got %v, want %s", err, want)
	}
}

// TestSSELinearTime feeds inputs that a framer re-searching its pending
// bytes would need quadratic time for.
func TestSSELinearTime(t *testing.T) {
	var crOnly strings.Builder
	for range 40000 {
		crOnly.WriteString("data: {\"a\":[1,2,3]}\r\r")
	}
	longField := "event: " + strings.Repeat("x", 300<<10) + "\ndata: 1\n"
	done := make(chan []int, 1)
	go func() {
		var counts []int
		// One big message: CR-only lines, no LF anywhere.
		d := NewDecoder()
		d.Write([]byte(crOnly.String()))
		d.Close()
		n := 0
		for _, err := d.Next(); err == nil; _, err = d.Next() {
			n++
		}
		counts = append(counts, n)
		// A long field line, one byte per message.
		d = NewDecoder()
		n = 0
		for i := range len(longField) {
			d.Write([]byte{longField[i]})
			for _, err := d.Next(); err == nil; _, err = d.Next() {
				n++
			}
		}
		counts = append(counts, n)
		done <- counts
	}()
	select {
	case counts := <-done:
		if counts[0] != 40000 || counts[1] != 1 {
			t.Errorf("events: %v", counts)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("framing is not linear in the input")
	}
}
