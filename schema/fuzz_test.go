package schema

import (
	"bytes"
	"errors"
	"io"
	"testing"

	"github.com/sagemaker-bidi/sagemaker-bidi/schema/framing"
	"github.com/sagemaker-bidi/sagemaker-bidi/schema/internal/streamtest"
)

// fuzzMax is a small event limit, so that fuzzing reaches it.
const fuzzMax = 256

// FuzzAccumulators feeds the events of arbitrary input to every
// accumulator: nothing may panic, and the rebuilt text can only come
// from the input.
func FuzzAccumulators(f *testing.F) {
	f.Add(streamtest.ChatSSE(6))
	f.Add([]byte(`{"id":"c","choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"{"}}]},"finish_reason":"tool_calls"}]}`))
	f.Add([]byte("data: {\"choices\":[{\"index\":3,\"text\":\"a\",\"logprobs\":[{\"tokens\":[\"a\"]}]}]}\n\ndata: [DONE]\n\n"))
	f.Add([]byte("{\"token\":{\"id\":1,\"text\":\"a\"}}\n{\"token\":{\"id\":-1,\"special_token\":true},\"details\":{\"finish_reason\":\"error\"}}\n"))
	f.Add([]byte(`{"error":{"message":"m"}}`))
	f.Add([]byte("data: {\"id\":\"c\",\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"id\":\"a\",\"function\":{\"name\":\"f\"}},{\"function\":{\"arguments\":\"{}\"}}]}}]}\nid: 1\n\n" +
		"data: {\"id\":\"c\",\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"function\":{\"arguments\":\"x\"}}]},\"finish_reason\":\"error\"}]}\n\n"))
	f.Fuzz(func(t *testing.T, input []byte) {
		r := framing.NewReader(bytes.NewReader(input), func(o *framing.Options) { o.Resync, o.MaxEventSize = true, fuzzMax })
		var chat ChatAccumulator
		var text CompletionAccumulator
		var lmi LMIAccumulator
		for range len(input) + 1 {
			ev, err := r.Next()
			if err == io.EOF || errors.Is(err, io.ErrUnexpectedEOF) {
				break
			}
			if err != nil {
				continue
			}
			chat.AddEvent(ev)
			text.AddEvent(ev)
			lmi.AddEvent(ev)
		}
		if c, _ := chat.Result(); c != nil {
			for _, ch := range c.Choices {
				if n := len(ch.Message.Content) + len(ch.Message.ReasoningContent); n > len(input) {
					t.Fatalf("%d bytes of text from %d bytes of input", n, len(input))
				}
			}
		}
		if c, _ := text.Result(); c != nil {
			for _, ch := range c.Choices {
				if len(ch.Text) > len(input) {
					t.Fatalf("%d bytes of text from %d bytes of input", len(ch.Text), len(input))
				}
			}
		}
		if res, _ := lmi.Result(); len(res.GeneratedText) > len(input) {
			t.Fatalf("%d bytes of text from %d bytes of input", len(res.GeneratedText), len(input))
		}
	})
}
