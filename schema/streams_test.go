package schema

import (
	"bytes"
	"fmt"
	"strconv"
)

// Synthetic streams shaped like seed 004's chunks, shared by tests and
// benchmarks.

var chatWords = []string{" the", " best", " treatment", " for", " this", " pregnant", " woman", "...", "\n\n", " caf\u00e9", " \"quoted\"", " \u4f60\u597d", " \U0001F600"}

// chatChunkJSON returns chunk i of a synthetic chat stream of n chunks:
// a role chunk, reasoning deltas, content deltas, and a final chunk with
// finish_reason "stop".
func chatChunkJSON(i, n int) string {
	const head = `{"id":"chatcmpl-2e46f7e56d474ad8874756df2b358a10","object":"chat.completion.chunk","created":1752128962,"model":"/opt/ml/model","choices":[{"index":0,"delta":`
	const tail = `,"logprobs":null,"finish_reason":%s,"stop_reason":null}]}`
	var delta, finish = "", "null"
	switch {
	case i == 0:
		delta = `{"role":"assistant","content":""}`
	case i == n-1:
		delta, finish = `{"content":""}`, `"stop"`
	case i < n/4:
		delta = `{"reasoning_content":` + strconv.Quote(chatWords[i%len(chatWords)]) + `}`
	default:
		delta = `{"content":` + strconv.Quote(chatWords[i%len(chatWords)]) + `}`
	}
	return head + delta + fmt.Sprintf(tail, finish)
}

// chatStreamText returns the reasoning and content a synthetic chat
// stream of n chunks reconstructs to.
func chatStreamText(n int) (reasoning, content string) {
	var r, c bytes.Buffer
	for i := 1; i < n-1; i++ {
		if i < n/4 {
			r.WriteString(chatWords[i%len(chatWords)])
		} else {
			c.WriteString(chatWords[i%len(chatWords)])
		}
	}
	return r.String(), c.String()
}

// chatSSE returns n chunks as standard SSE (blank line after each event)
// followed by "data: [DONE]".
func chatSSE(n int) []byte {
	var b bytes.Buffer
	for i := 0; i < n; i++ {
		b.WriteString("data: ")
		b.WriteString(chatChunkJSON(i, n))
		b.WriteString("\n\n")
	}
	b.WriteString("data: [DONE]\n\n")
	return b.Bytes()
}

// chatSSECompact returns n chunks as SSE without blank lines, the way
// seed 004 shows them, followed by "data: [DONE]".
func chatSSECompact(n int) []byte {
	var b bytes.Buffer
	for i := 0; i < n; i++ {
		b.WriteString("data: ")
		b.WriteString(chatChunkJSON(i, n))
		b.WriteString("\n")
	}
	b.WriteString("data: [DONE]\n")
	return b.Bytes()
}

// chatJSONL returns n chunks as JSON Lines.
func chatJSONL(n int) []byte {
	var b bytes.Buffer
	for i := 0; i < n; i++ {
		b.WriteString(chatChunkJSON(i, n))
		b.WriteByte('\n')
	}
	return b.Bytes()
}
