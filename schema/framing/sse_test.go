package framing

import (
	"errors"
	"fmt"
	"io"
	"strconv"
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

// sseFramingTests are the cases of TestSSEFraming; their inputs also
// feed TestSSESplitInvarianceSmallLimits.
var sseFramingTests = []struct {
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
	{"BOM only once", "\xEF\xBB\xBF\xEF\xBB\xBFdata: 1\n\n", []func(*Options){withFormat(FormatSSE)}, []string{"syntax@3"}},
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

	// Trailing blanks are not data, whether the data is framed by the
	// fast path or scanned, so they never count towards the limit.
	{"trailing blanks within the limit", "data: {\"a\":12}        \n\ndata: 1\n\n", []func(*Options){withMax(12)}, []string{`{"a":12}`, "1", "EOF"}},
	{"trailing blanks of malformed data within the limit", "data: data: \n\n", []func(*Options){withMax(5)}, []string{"data:", "EOF"}},
	{"trailing blanks of a held value within the limit", "data: {\"a\":12} \t \nid: 1\n\n", []func(*Options){withMax(8)}, []string{`{"a":12}`, "EOF"}},
	{"blanks inside multi-line data are data", "data: [1,  \ndata:  \t\ndata: 2] \n\n", nil, []string{"[1,  \n  \t\n 2]", "EOF"}},
	{"blanks inside multi-line data count", "data: [1,  \ndata: 2] \n\n", []func(*Options){withMax(8)}, []string{"toolarge@6"}},
	{"blanks inside multi-line data at the limit", "data: [1,  \ndata: 2] \n\n", []func(*Options){withMax(9)}, []string{"[1,  \n 2]", "EOF"}},

	// Fields after a complete value belong to its event (see
	// TestSSEFieldsAfterData for their values).
	{"fields after a value", "data: {\"a\":1}\nevent: late\nid: 9\n: c\nretry: 5\nx-unknown: 1\n\ndata: 2\n\n", nil, []string{`{"a":1}`, "2", "EOF"}},
	{"garbage after a held value", "data: 1\nevent: e\n}\ndata: 2\n", nil, []string{"1", "syntax@17"}},
	{"field line too large after a held value", "data: 1\nevent: " + strings.Repeat("x", 20) + "\ndata: 2\n", []func(*Options){withMax(10), withResync}, []string{"1", "toolarge@8", "2", "EOF"}},

	// Comments and fields inside an unfinished value.
	{"comment inside a value", "data: {\"a\":\n: keep-alive\ndata: 1}\n\n", nil, []string{"{\"a\":\n 1}", "EOF"}},
	{"fields inside a value", "data: {\"a\":\r\nevent: x\r\nid\r\nretry: 10\r\ndata: 1}\r\n\r\n", nil, []string{"{\"a\":\n 1}", "EOF"}},
	{"fields inside a value without blank line", "data: [1,\nid: 2\n3]\ndata: 4\n", nil, []string{"[1,\n3]", "4", "EOF"}},
	{"colon awaited by the value", "data: {\"a\"\n:1}\n\n", nil, []string{"{\"a\"\n:1}", "EOF"}},
	{"quoted field name continues a value", "data: {\"a\":1,\n\"event\": 2}\ndata: 3\n", nil, []string{"{\"a\":1,\n\"event\": 2}", "3", "EOF"}},
	{"indented field name continues a value", "data: {\"a\":\n event: 2}\ndata: 3\n", nil, []string{"syntax@13"}},
	{"other name continues a value", "data: [1,\nevents: 2]\ndata: 3\n", nil, []string{"syntax@10"}},
}

func TestSSEFraming(t *testing.T) {
	for _, tt := range sseFramingTests {
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
	want := `framing: syntax error at offset 8: unexpected text outside an event: "... more tokens"`
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
		// The event is held until its block ends, here at the end of input.
		d.Close()
		for _, err := d.Next(); err == nil; _, err = d.Next() {
			n++
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

// TestSSEFieldsAfterData checks where the fields around a complete value
// go: into its event when a blank line (or the end of input) ends its
// block, as WHATWG prescribes; into the next event when a data line
// follows without a blank line, as in compact streams.
func TestSSEFieldsAfterData(t *testing.T) {
	tests := []struct {
		name  string
		input string
		want  []record
	}{
		{"blank line", "data: {\"a\":1}\nevent: late\nid: 9\n\n", []record{
			{Data: `{"a":1}`, Type: "late", ID: "9", Offset: 6}}},
		{"comment, retry and unknown field", "event: a\ndata: 1\n: c\nretry: 5\nfoo: bar\n\ndata: 2\n\n", []record{
			{Data: "1", Type: "a", Retry: 5, Offset: 15}, {Data: "2", Retry: 5, Offset: 46}}},
		{"empty event field resets the type", "event: a\ndata: 1\nevent\n\n", []record{
			{Data: "1", Offset: 15}}},
		{"end of input", "data: 1\nid: 7", []record{{Data: "1", ID: "7", Offset: 6}}},
		{"garbage line", "data: 1\nid: 7\n}\n", []record{{Data: "1", ID: "7", Offset: 6}, {Err: "framing: syntax error at offset 14: unexpected text outside an event: \"}\""}}},
		{"compact stream", "event: a\ndata: 1\nevent: b\ndata: 2\nid: 3\ndata: 4\ndata: [DONE]\n", []record{
			{Data: "1", Type: "a", Offset: 15},
			{Data: "2", Type: "b", Offset: 32},
			{Data: "4", ID: "3", Offset: 46},
			{Done: true, ID: "3", Offset: 54}}},
		{"compact stream, type not repeated", "event: a\ndata: 1\ndata: 2\n", []record{
			{Data: "1", Type: "a", Offset: 15}, {Data: "2", Offset: 23}}},
		{"compact stream with ids before data", "id: 1\ndata: 1\nid: 2\ndata: 2\nid: 3\ndata: 3\n", []record{
			{Data: "1", ID: "1", Offset: 12}, {Data: "2", ID: "2", Offset: 26}, {Data: "3", ID: "3", Offset: 40}}},
		{"DONE after a held value", "id: 1\ndata: 1\nid: 2\ndata: [DONE]\n\n", []record{
			{Data: "1", ID: "1", Offset: 12}, {Done: true, ID: "2", Offset: 26}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := checkSplitInvariance(t, []byte(tt.input), 30)
			want := tt.want
			if want[len(want)-1].Err == "" {
				want = append(want, record{Err: io.EOF.Error()})
			}
			if !equalRecords(got, want) {
				t.Errorf("got  %v\nwant %v", got, want)
			}
		})
	}
}

// TestSSEHeldEventLatency shows when a Decoder fed whole messages returns
// an event: at once when a blank line ends it or the stream is known to
// be compact, else when the next message shows its block ended.
func TestSSEHeldEventLatency(t *testing.T) {
	type step struct {
		write string // "" closes the decoder
		want  []string
	}
	run := func(t *testing.T, steps []step) {
		d := NewDecoder()
		for i, s := range steps {
			if s.write == "" {
				d.Close()
			} else {
				d.Write([]byte(s.write))
			}
			var got []string
			for {
				ev, err := d.Next()
				if err == ErrNeedInput || err == io.EOF {
					break
				}
				if err != nil {
					t.Fatal(err)
				}
				got = append(got, string(ev.Data))
			}
			if strings.Join(got, ",") != strings.Join(s.want, ",") {
				t.Fatalf("step %d (%q): got %q, want %q", i, s.write, got, s.want)
			}
		}
	}
	t.Run("standard", func(t *testing.T) {
		run(t, []step{{"data: 1\n\n", []string{"1"}}, {"data: 2\n\n", []string{"2"}}})
	})
	t.Run("compact", func(t *testing.T) {
		run(t, []step{
			{"data: 1\n", nil}, // fields may follow
			{"data: 2\n", []string{"1", "2"}},
			{"data: 3\n", []string{"3"}},     // compact: at once
			{"data: [DONE]\n", []string{""}}, // the marker, which has no data
			{"", nil},
		})
	})
	t.Run("held until closed", func(t *testing.T) {
		run(t, []step{{"data: 1\n", nil}, {"", []string{"1"}}})
	})
}

// TestSSESplitInvarianceSmallLimits frames the inputs of TestSSEFraming
// and more with every small event limit, whole, byte by byte, in random
// fragments and cut in two at every position: every way must give the
// same outcomes, whichever path (the blank-line fast path or scanning)
// frames the data.
func TestSSESplitInvarianceSmallLimits(t *testing.T) {
	inputs := []string{
		"data: {\"a\":12}        \n\ndata: 1\n\n",
		"data: data: \n\n",
		"data:  \t {\"a\":[1, 2]} \t \r\n\r\ndata: \"x y\"  \ndata: 3\t\n\n",
		"data: [1,  \ndata:  \t\ndata: 2] \n\nevent: e  \ndata: 1 \nid: 2 \n\n",
		"data: {\"a\" 1}   \n\ndata: 1 2  \n\ndata: [DONE]  \n\n",
		"data: {\"a\":1}  \nevent: late\nid: 9\n\ndata: 2 \ndata: 3  \n",
		"data: {\"a\":\n: keep-alive\ndata: 1}  \n\n",
	}
	for _, tt := range sseFramingTests {
		inputs = append(inputs, tt.input)
	}
	d := NewDecoder()
	for _, in := range inputs {
		if len(in) > 200 {
			continue
		}
		for limit := 1; limit <= min(len(in), 40); limit++ {
			for _, resync := range []bool{false, true} {
				opts := []func(*Options){withMax(limit)}
				if resync {
					opts = append(opts, withResync)
				}
				want := checkSplitInvariance(t, []byte(in), 3, opts...)
				for k := 1; k < len(in); k++ {
					if got := pushAllTo(d, [][]byte{[]byte(in[:k]), []byte(in[k:])}, opts...); !equalRecords(got, want) {
						t.Fatalf("%q, limit %d, resync %v, cut at %d:\n got %v\nwant %v", in, limit, resync, k, got, want)
					}
				}
			}
		}
	}
}

// TestEventDecodeOffsets checks where Decode reports a syntax error: at
// its exact stream offset in the first line of the data, else at the
// event's start, naming the line. (Only SSE data that a blank line ends
// is not validated while framed.)
func TestEventDecodeOffsets(t *testing.T) {
	tests := []struct {
		name, input string
		want        int64
		line        int // 0: none named
	}{
		{"single line", "data: {\"a\":1}\n\ndata:  {\"a\":1,}  \n\n", 29, 0},
		{"single line, CRLF", "data: 1\r\n\r\ndata: [1,,2]\r\n\r\n", 20, 0},
		{"later line", "data: {\"a\":\r\n: c\r\nevent: e\r\ndata: [1,\r\ndata:  2 x]}\r\n\r\n", 6, 3},
		{"later line with blanks", "data: [1,  \ndata:  \t\ndata: 2 x] \n\n", 6, 3},
		{"end of data", "data: [1,\ndata: 2\n\n", 6, 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for _, src := range []io.Reader{strings.NewReader(tt.input), &oneByteReader{tt.input}} {
				r := NewReader(src)
				var first error
				for {
					ev, err := r.Next()
					if err == io.EOF {
						break
					}
					if err != nil {
						t.Fatal(err)
					}
					if err := ev.Decode(new(any)); err != nil && first == nil {
						first = err
					}
				}
				var syn *SyntaxError
				if !errors.As(first, &syn) || syn.Offset != tt.want {
					t.Fatalf("got %v, want a syntax error at offset %d", first, tt.want)
				}
				if named := strings.Contains(syn.Msg, "(line "); named != (tt.line > 0) || named && !strings.Contains(syn.Msg, "(line "+strconv.Itoa(tt.line)+" ") {
					t.Errorf("message %q, want line %d named", syn.Msg, tt.line)
				}
			}
		})
	}
	// An event built by hand maps alike.
	for _, c := range []struct {
		data string
		want int64
	}{{"[1,,2]", 103}, {"[1,,\n2]", 103}, {"[1,\n,2]", 100}} {
		err := Event{Data: []byte(c.data), Offset: 100}.Decode(new(any))
		var syn *SyntaxError
		if !errors.As(err, &syn) || syn.Offset != c.want {
			t.Errorf("%q: got %v, want offset %d", c.data, err, c.want)
		}
	}
}
