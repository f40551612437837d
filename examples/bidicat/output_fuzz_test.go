package main

import (
	"bytes"
	"encoding/json"
	"io"
	"strings"
	"testing"

	"github.com/sagemaker-bidi/sagemaker-bidi/bidi"
)

// FuzzOutputMessages feeds the model's output, cut into messages at the
// bytes of cuts, to -o events and -o answer with -json, as the receiver
// does: nothing panics, the bytes kept for the live check stay bounded,
// the output is JSON lines, and no decode error is reported twice (once
// live by checkLive, once more by the stream's decoder).
func FuzzOutputMessages(f *testing.F) {
	f.Add([]byte("hi there"), []byte{})
	f.Add([]byte("hello"), []byte{2})
	f.Add([]byte("data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"a\"}}]}\n\ndata: [DONE]\n\n"), []byte{10, 30})
	f.Add([]byte("{\"a\":1}\n{\"b\":"), []byte{4})
	f.Add([]byte(": keepalive\nhi there\ndata: x\n\n"), []byte{12})
	f.Fuzz(func(t *testing.T, data, cuts []byte) {
		for _, mode := range []string{modeEvents, modeAnswer} {
			var stdout bytes.Buffer
			o := &options{mode: mode, json: true}
			st := newStatus(io.Discard, false, false, false)
			out := newOutput(o, &stdout, st)
			rest := data
			for _, c := range cuts {
				n := min(int(c), len(rest))
				out.part(bidi.Part{Data: rest[:n], Type: bidi.DataTypeUTF8, Complete: true})
				rest = rest[n:]
				if len(out.head) > maxHead {
					t.Fatalf("%d bytes kept for the live check", len(out.head))
				}
			}
			out.part(bidi.Part{Data: rest, Type: bidi.DataTypeUTF8, Complete: true})
			out.end()
			seen := map[string]bool{}
			for line := range strings.Lines(stdout.String()) {
				var p jsonProblem
				if err := json.Unmarshal([]byte(line), &p); err != nil {
					t.Fatalf("-o %s: not a JSON line: %q", mode, line)
				}
				if p.Type != "decode_error" {
					continue
				}
				msg := strings.TrimSuffix(p.Error, "; try -o raw")
				if seen[msg] {
					t.Fatalf("-o %s: %q reported twice:\n%s", mode, msg, stdout.String())
				}
				seen[msg] = true
			}
		}
	})
}
