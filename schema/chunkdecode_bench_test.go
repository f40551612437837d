package schema

import (
	"testing"

	"github.com/sagemaker-bidi/sagemaker-bidi/schema/internal/streamtest"
)

// BenchmarkChunkDecode measures the chunk decoder alone on the chunks of
// a 2,000-chunk chat stream, each decoded into a chunk cleared the way
// the accumulators clear it (its choices' storage kept).
func BenchmarkChunkDecode(b *testing.B) {
	chunks := make([][]byte, benchChunks)
	size := 0
	for i := range chunks {
		chunks[i] = []byte(streamtest.ChatChunk(i, benchChunks))
		size += len(chunks[i])
	}
	b.SetBytes(int64(size))
	b.ReportAllocs()
	var d chunkDecoder
	var c ChatCompletionChunk
	for b.Loop() {
		for _, data := range chunks {
			clear(c.Choices[:cap(c.Choices)])
			c = ChatCompletionChunk{Choices: c.Choices[:0]}
			if !d.decodeChat(data, &c) {
				b.Fatalf("chunk not decoded: %s", data)
			}
		}
	}
}
