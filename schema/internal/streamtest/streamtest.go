// Package streamtest generates the synthetic chat streams that the tests
// and benchmarks of schema and schema/framing share, and measures
// allocations per unit of a benchmark loop. Only tests import it.
package streamtest

import (
	"bytes"
	"fmt"
	"runtime"
	"strconv"
	"testing"
)

// words are the pieces of text the chunks carry, with escapes, multi-byte
// characters and line ends among them.
var words = []string{" the", " best", " treatment", " for", " this", " pregnant", " woman", "...", "\n\n", " caf\u00e9", " \"quoted\"", " \u4f60\u597d", " \U0001F600"}

// ChatChunk returns chunk i of a synthetic chat stream of n chunks shaped
// like seed 004's: a role chunk, reasoning deltas (the first quarter),
// content deltas, and a final chunk with finish_reason "stop".
func ChatChunk(i, n int) string {
	const head = `{"id":"chatcmpl-2e46f7e56d474ad8874756df2b358a10","object":"chat.completion.chunk","created":1752128962,"model":"/opt/ml/model","choices":[{"index":0,"delta":`
	const tail = `,"logprobs":null,"finish_reason":%s,"stop_reason":null}]}`
	var delta, finish = "", "null"
	switch {
	case i == 0:
		delta = `{"role":"assistant","content":""}`
	case i == n-1:
		delta, finish = `{"content":""}`, `"stop"`
	case i < n/4:
		delta = `{"reasoning_content":` + strconv.Quote(words[i%len(words)]) + `}`
	default:
		delta = `{"content":` + strconv.Quote(words[i%len(words)]) + `}`
	}
	return head + delta + fmt.Sprintf(tail, finish)
}

// ChatText returns the reasoning and content that a chat stream of n
// chunks rebuilds to.
func ChatText(n int) (reasoning, content string) {
	var r, c bytes.Buffer
	for i := 1; i < n-1; i++ {
		if i < n/4 {
			r.WriteString(words[i%len(words)])
		} else {
			c.WriteString(words[i%len(words)])
		}
	}
	return r.String(), c.String()
}

// ChatSSE returns n chunks as standard SSE (a blank line after each
// event) followed by "data: [DONE]".
func ChatSSE(n int) []byte { return chatLines(n, "data: ", "\n\n", "data: [DONE]\n\n") }

// ChatSSECompact returns n chunks as SSE without blank lines, the way
// seed 004 shows them, followed by "data: [DONE]".
func ChatSSECompact(n int) []byte { return chatLines(n, "data: ", "\n", "data: [DONE]\n") }

// ChatJSONL returns n chunks as JSON Lines.
func ChatJSONL(n int) []byte { return chatLines(n, "", "\n", "") }

// chatLines returns the n chunks of a chat stream, each between prefix
// and suffix, followed by last.
func chatLines(n int, prefix, suffix, last string) []byte {
	var b bytes.Buffer
	for i := range n {
		b.WriteString(prefix)
		b.WriteString(ChatChunk(i, n))
		b.WriteString(suffix)
	}
	b.WriteString(last)
	return b.Bytes()
}

// AllocMeter reports allocations per unit (event, chunk) of a benchmark
// loop, counted the way testing counts allocs/op.
type AllocMeter struct{ before runtime.MemStats }

// StartAllocMeter starts counting; call it just before the loop.
func StartAllocMeter() *AllocMeter {
	m := new(AllocMeter)
	runtime.ReadMemStats(&m.before)
	return m
}

// Report reports, under unit, the allocations since StartAllocMeter per
// iteration of b and per perOp units in each iteration.
func (m *AllocMeter) Report(b *testing.B, perOp int, unit string) {
	var after runtime.MemStats
	runtime.ReadMemStats(&after)
	b.ReportMetric(float64(after.Mallocs-m.before.Mallocs)/float64(b.N)/float64(perOp), unit)
}
