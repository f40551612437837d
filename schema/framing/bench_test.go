package framing

import (
	"bytes"
	"io"
	"net/http"
	"testing"

	"github.com/openai/openai-go/packages/ssestream"

	"github.com/sagemaker-bidi/sagemaker-bidi/schema/internal/streamtest"
)

// benchChunks is the number of chat chunks in every benchmark stream.
const benchChunks = 2000

// BenchmarkFraming measures framing throughput and allocations per event
// on a 2,000-chunk chat stream, for this package and for openai-go's
// ssestream decoder (test-only dependency) on the same SSE bytes.
func BenchmarkFraming(b *testing.B) {
	sse := streamtest.ChatSSE(benchChunks)
	jsonl := streamtest.ChatJSONL(benchChunks)
	b.Run("impl=ours/format=sse", func(b *testing.B) {
		benchOurs(b, sse, benchChunks+1)
	})
	b.Run("impl=openai/format=sse", func(b *testing.B) {
		b.SetBytes(int64(len(sse)))
		b.ReportAllocs()
		m := streamtest.StartAllocMeter()
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
		m.Report(b, benchChunks+1, "allocs/event")
	})
	b.Run("impl=ours/format=jsonl", func(b *testing.B) {
		benchOurs(b, jsonl, benchChunks)
	})
	// Not comparable with openai-go, which needs blank lines: SSE as seed
	// 004 shows it, where every value is scanned to find its end.
	b.Run("impl=ours/format=sse-compact", func(b *testing.B) {
		benchOurs(b, streamtest.ChatSSECompact(benchChunks), benchChunks+1)
	})
}

func benchOurs(b *testing.B, in []byte, events int) {
	b.SetBytes(int64(len(in)))
	b.ReportAllocs()
	src := bytes.NewReader(in)
	m := streamtest.StartAllocMeter()
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
	m.Report(b, events, "allocs/event")
}

// BenchmarkScanner measures the JSON scanner alone on the values of a
// 2,000-chunk chat stream in JSON Lines (every byte scanned).
func BenchmarkScanner(b *testing.B) {
	in := streamtest.ChatJSONL(benchChunks)
	b.SetBytes(int64(len(in)))
	b.ReportAllocs()
	var s scanner
	for b.Loop() {
		values := 0
		for i := 0; i < len(in); {
			n, res := s.scan(in[i:])
			i += n
			switch res {
			case scanDone:
				values++
			case scanLineEnd:
				i++
			case scanError:
				b.Fatalf("error at %d: %s", i, s.msg)
			}
		}
		if values != benchChunks {
			b.Fatalf("%d values", values)
		}
	}
}
