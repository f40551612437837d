package schema

import (
	"bytes"
	"io"
	"net/http"
	"testing"

	"github.com/openai/openai-go"
	"github.com/openai/openai-go/packages/ssestream"

	"github.com/sagemaker-bidi/sagemaker-bidi/schema/framing"
	"github.com/sagemaker-bidi/sagemaker-bidi/schema/internal/streamtest"
)

// benchChunks is the number of chat chunks in every benchmark stream.
const benchChunks = 2000

// BenchmarkChatAccumulate measures the whole decoding path of a
// 2,000-chunk chat stream in SSE: framing, decoding each chunk and
// rebuilding the message. impl=ours is a framing.Reader feeding a
// ChatAccumulator; impl=openai is openai-go's ssestream.Stream of
// ChatCompletionChunk feeding its ChatCompletionAccumulator (test-only
// dependency), on the same bytes. openai-go's accumulator rebuilds the
// content only: it has no field for reasoning_content, which ours
// rebuilds too.
func BenchmarkChatAccumulate(b *testing.B) {
	in := streamtest.ChatSSE(benchChunks)
	wantReasoning, wantContent := streamtest.ChatText(benchChunks)
	b.Run("impl=ours", func(b *testing.B) {
		b.SetBytes(int64(len(in)))
		b.ReportAllocs()
		src := bytes.NewReader(in)
		r := framing.NewReader(src)
		var acc ChatAccumulator
		m := streamtest.StartAllocMeter()
		for b.Loop() {
			src.Reset(in)
			r.Reset(src)
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
	})
	b.Run("impl=openai", func(b *testing.B) {
		b.SetBytes(int64(len(in)))
		b.ReportAllocs()
		m := streamtest.StartAllocMeter()
		for b.Loop() {
			stream := ssestream.NewStream[openai.ChatCompletionChunk](ssestream.NewDecoder(&http.Response{
				Header: http.Header{"Content-Type": {"text/event-stream"}},
				Body:   io.NopCloser(bytes.NewReader(in)),
			}), nil)
			var acc openai.ChatCompletionAccumulator
			n := 0
			for stream.Next() {
				if !acc.AddChunk(stream.Current()) {
					b.Fatal("chunk not accumulated")
				}
				n++
			}
			if err := stream.Err(); err != nil || n != benchChunks || acc.Choices[0].Message.Content != wantContent {
				b.Fatalf("%d chunks, %d bytes of content, %v", n, len(acc.Choices[0].Message.Content), err)
			}
		}
		m.Report(b, benchChunks, "allocs/chunk")
	})
}
