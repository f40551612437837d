package schema

import (
	"bytes"
	"io"
	"testing"

	"github.com/sagemaker-bidi/sagemaker-bidi/schema/framing"
	"github.com/sagemaker-bidi/sagemaker-bidi/schema/internal/streamtest"
)

// benchChunks is the number of chat chunks in every benchmark stream.
const benchChunks = 2000

// BenchmarkChatAccumulate measures the whole path for a 2,000-chunk chat
// stream in SSE: framing, decoding each chunk and rebuilding the message.
func BenchmarkChatAccumulate(b *testing.B) {
	in := streamtest.ChatSSE(benchChunks)
	wantReasoning, wantContent := streamtest.ChatText(benchChunks)
	b.SetBytes(int64(len(in)))
	b.ReportAllocs()
	src := bytes.NewReader(in)
	var acc ChatAccumulator
	m := streamtest.StartAllocMeter()
	for b.Loop() {
		src.Reset(in)
		r := framing.NewReader(src)
		acc.Reset()
		for {
			ev, err := r.Next()
			if err == io.EOF {
				break
			}
			if err != nil {
				b.Fatal(err)
			}
			if err := acc.AddEvent(ev); err != nil {
				b.Fatal(err)
			}
		}
		c, err := acc.Result()
		if err != nil || c.Choices[0].Message.Content != wantContent || c.Choices[0].Message.ReasoningContent != wantReasoning {
			b.Fatalf("rebuilt %d/%d bytes, %v", len(c.Choices[0].Message.ReasoningContent), len(c.Choices[0].Message.Content), err)
		}
	}
	m.Report(b, benchChunks, "allocs/chunk")
}
