package schema

import (
	"bytes"
	"io"
	"net/http"
	"runtime"
	"testing"

	"github.com/openai/openai-go/packages/ssestream"
)

// benchChunks is the number of chat chunks in every benchmark stream.
const benchChunks = 2000

// BenchmarkFraming measures framing throughput and allocations per event
// on a 2,000-chunk chat stream, for this package and for openai-go's
// ssestream decoder (test-only dependency) on the same SSE bytes.
func BenchmarkFraming(b *testing.B) {
	sse := chatSSE(benchChunks)
	jsonl := chatJSONL(benchChunks)
	b.Run("impl=ours/format=sse", func(b *testing.B) {
		benchOurs(b, sse, benchChunks+1)
	})
	b.Run("impl=openai/format=sse", func(b *testing.B) {
		b.SetBytes(int64(len(sse)))
		b.ReportAllocs()
		m := startAllocMeter()
		for b.Loop() {
			d := ssestream.NewDecoder(&http.Response{
				Header: http.Header{"Content-Type": {"text/event-stream"}},
				Body:   io.NopCloser(bytes.NewReader(sse)),
			})
			n := 0
			for d.Next() {
				n++
			}
			if err := d.Err(); err != nil || n != benchChunks+1 {
				b.Fatalf("openai decoder: %d events, err %v", n, err)
			}
		}
		m.report(b, benchChunks+1, "allocs/event")
	})
	b.Run("impl=ours/format=jsonl", func(b *testing.B) {
		benchOurs(b, jsonl, benchChunks)
	})
	// Not comparable with openai-go, which needs blank lines: SSE as seed
	// 004 shows it, where every value is scanned to find its end.
	b.Run("impl=ours/format=sse-compact", func(b *testing.B) {
		benchOurs(b, chatSSECompact(benchChunks), benchChunks+1)
	})
}

func benchOurs(b *testing.B, in []byte, events int) {
	b.SetBytes(int64(len(in)))
	b.ReportAllocs()
	src := bytes.NewReader(in)
	m := startAllocMeter()
	for b.Loop() {
		src.Reset(in)
		r := NewReader(src)
		n := 0
		for {
			_, err := r.Next()
			if err == io.EOF {
				break
			}
			if err != nil {
				b.Fatal(err)
			}
			n++
		}
		if n != events {
			b.Fatalf("%d events, want %d", n, events)
		}
	}
	m.report(b, events, "allocs/event")
}

// allocMeter reports allocations per unit (event, chunk) of a benchmark
// loop, measured the way testing measures allocs/op.
type allocMeter struct{ before runtime.MemStats }

func startAllocMeter() *allocMeter {
	m := new(allocMeter)
	runtime.ReadMemStats(&m.before)
	return m
}

func (m *allocMeter) report(b *testing.B, perOp int, unit string) {
	var after runtime.MemStats
	runtime.ReadMemStats(&after)
	b.ReportMetric(float64(after.Mallocs-m.before.Mallocs)/float64(b.N)/float64(perOp), unit)
}

// BenchmarkChatAccumulate measures the whole path for a 2,000-chunk chat
// stream in SSE: framing, decoding each chunk and rebuilding the message.
func BenchmarkChatAccumulate(b *testing.B) {
	in := chatSSE(benchChunks)
	wantReasoning, wantContent := chatStreamText(benchChunks)
	b.SetBytes(int64(len(in)))
	b.ReportAllocs()
	src := bytes.NewReader(in)
	var acc ChatAccumulator
	m := startAllocMeter()
	for b.Loop() {
		src.Reset(in)
		r := NewReader(src)
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
	m.report(b, benchChunks, "allocs/chunk")
}
