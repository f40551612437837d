package framing

import (
	"bytes"
	"encoding/json"
	"io"
	"math/rand/v2"
	"testing"
)

// fuzzMax is a small event limit, so that fuzzing reaches it.
const fuzzMax = 256

// fuzzLimit returns the event limit FuzzFraming uses with a seed: for one
// seed in 16, a tiny limit, from 1 to 32, so that the limit falls inside
// the values, fields and blanks of short inputs; else fuzzMax.
func fuzzLimit(seed uint64) int {
	if seed%16 != 15 {
		return fuzzMax
	}
	return 1 + int(seed/16%32)
}

// FuzzFraming frames arbitrary input whole and in random fragments: the
// outcomes must be identical, bounded and consistent, and nothing may
// panic or grow past the limits.
func FuzzFraming(f *testing.F) {
	for _, s := range []string{
		"data: {\"a\":1}\n\ndata: [DONE]\n\n",
		"data:{\n  \"b\": [1, 2]\n}\ndata: 3\r\n\r\n",
		"\xEF\xBB\xBFevent: e\nid: 1\nretry: 5\n: c\ndata: \"x\"\n\n",
		"{\"a\":1}{\"b\":2}\n[\n1\n]\n\"s\" 12 true\n",
		"{\"a\":1}}\n... more\n{\"c\":[{}]}",
		"data: {\"a\" 1}\ndata: 2\n\n",
		"data: {\"a\":1}\nevent: late\nid: 9\n\ndata: 2\nid: 3\ndata: 4\n",
		"data: {\"a\":\r\n: keep-alive\r\nevent: e\r\ndata: 1}\r\n\r\n",
	} {
		for format := range 3 {
			f.Add([]byte(s), uint8(format), format == 1, uint64(len(s)))
			f.Add([]byte(s), uint8(format), format == 1, uint64(16*len(s)+15))
		}
	}
	f.Fuzz(func(t *testing.T, input []byte, format uint8, resync bool, seed uint64) {
		limit := fuzzLimit(seed)
		opts := []func(*Options){withFormat(Format(format % 3)), withMax(limit)}
		if resync {
			opts = append(opts, withResync)
		}
		whole := readAll(input, opts...)
		frags := randomSplit(rand.New(rand.NewPCG(seed, 1)), input)
		if got := pushAll(frags, opts...); !equalRecords(got, whole) {
			t.Fatalf("fragments %q:\n got %v\nwant %v", frags, got, whole)
		}
		last := whole[len(whole)-1]
		if last.Err == "" {
			t.Fatalf("no end: %v", last)
		}
		if len(whole) > len(input)+1 {
			t.Fatalf("%d outcomes from %d bytes", len(whole), len(input))
		}
		prev := int64(-1)
		for _, r := range whole {
			if r.Err != "" {
				continue
			}
			if r.Offset <= prev || r.Offset >= int64(len(input)) {
				t.Fatalf("offset %d after %d, input %d bytes", r.Offset, prev, len(input))
			}
			prev = r.Offset
			if len(r.Data) > limit {
				t.Fatalf("event of %d bytes", len(r.Data))
			}
			if r.Done {
				continue
			}
			// Data is the value's bytes from the stream; a value the
			// framer found by scanning (always, in JSON Lines) is valid.
			if format%3 == 2 && !json.Valid([]byte(r.Data)) {
				t.Fatalf("invalid JSON event %q", r.Data)
			}
			if !bytes.Contains(input, []byte(r.Data[:1])) {
				t.Fatalf("event %q not from the input", r.Data)
			}
		}
		// The buffers stay bounded.
		d := NewDecoder(opts...)
		for _, p := range frags {
			d.Write(p)
			for {
				_, err := d.Next()
				if err == ErrNeedInput || err != nil && !resync || err == io.EOF {
					break
				}
			}
			if c := cap(d.in.f.val); c > 4*limit+64 {
				t.Fatalf("event buffer grew to %d", c)
			}
		}
	})
}

// FuzzScanner checks the JSON scanner against encoding/json.
func FuzzScanner(f *testing.F) {
	for _, c := range scanCases {
		f.Add([]byte(c))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		if got, want := scanWhole(b), json.Valid(b); got != want {
			t.Fatalf("%q: scanner accepts=%v, encoding/json valid=%v", b, got, want)
		}
	})
}
