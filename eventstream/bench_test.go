package eventstream

import (
	"bytes"
	"context"
	"crypto/sha256"
	"fmt"
	"io"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
	sges "github.com/aws/smithy-go/eventstream"
)

// benchSizes are the payload sizes of the benchmarks in BENCHMARKS.md.
var benchSizes = []int{16, 256, 4096, 65536}

var benchCreds = aws.Credentials{AccessKeyID: "AKIDEXAMPLE", SecretAccessKey: "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY"}

func benchPayload(n int) []byte {
	p := make([]byte, n)
	for i := range p {
		p[i] = byte(i*7 + 3)
	}
	return p
}

// payloadPartHeaders returns the headers of a request PayloadPart event in
// the order the Go SDK emits them (docs/wire.md §4.1).
func payloadPartHeaders() Headers {
	return Headers{
		{Name: "DataType", Value: StringValue("BINARY")},
		{Name: "CompletionState", Value: StringValue("PARTIAL")},
		{Name: "P", Value: StringValue("pad")},
		{Name: ":event-type", Value: StringValue("PayloadPart")},
		{Name: ":message-type", Value: StringValue("event")},
		{Name: ":content-type", Value: StringValue("application/octet-stream")},
	}
}

func sgPayloadPart(payload []byte) sges.Message {
	var m sges.Message
	m.Headers.Set("DataType", sges.StringValue("BINARY"))
	m.Headers.Set("CompletionState", sges.StringValue("PARTIAL"))
	m.Headers.Set("P", sges.StringValue("pad"))
	m.Headers.Set(":event-type", sges.StringValue("PayloadPart"))
	m.Headers.Set(":message-type", sges.StringValue("event"))
	m.Headers.Set(":content-type", sges.StringValue("application/octet-stream"))
	m.Payload = payload
	return m
}

func BenchmarkEncodeSign(b *testing.B) {
	seed := make([]byte, 32)
	for _, n := range benchSizes {
		payload := benchPayload(n)
		b.Run(fmt.Sprintf("impl=ours/size=%d", n), func(b *testing.B) {
			s := NewSigner(benchCreds, "us-west-2", "sagemaker", seed)
			m := &Message{Headers: payloadPartHeaders(), Payload: payload}
			buf, err := s.AppendMessage(nil, m)
			if err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			b.SetBytes(int64(n))
			b.ResetTimer()
			for range b.N {
				buf, _ = s.AppendMessage(buf[:0], m)
			}
		})
		b.Run(fmt.Sprintf("impl=aws/size=%d", n), func(b *testing.B) {
			// What aws-sdk-go-v2 does per event: smithy-go encodes the
			// event, SigningWriter encodes the :date header, StreamSigner
			// signs, and smithy-go encodes the envelope.
			ss := v4.NewStreamSigner(benchCreds, "sagemaker", "us-west-2", seed)
			enc := sges.NewEncoder()
			inner := sgPayloadPart(payload)
			var innerBuf, hdrBuf, out bytes.Buffer
			ctx := context.Background()
			b.ReportAllocs()
			b.SetBytes(int64(n))
			b.ResetTimer()
			for range b.N {
				innerBuf.Reset()
				if err := enc.Encode(&innerBuf, inner); err != nil {
					b.Fatal(err)
				}
				now := time.Now().UTC()
				var env sges.Message
				env.Headers.Set(DateHeader, sges.TimestampValue(now))
				env.Payload = innerBuf.Bytes()
				hdrBuf.Reset()
				if err := sges.EncodeHeaders(&hdrBuf, env.Headers); err != nil {
					b.Fatal(err)
				}
				sig, err := ss.GetSignature(ctx, hdrBuf.Bytes(), env.Payload, now)
				if err != nil {
					b.Fatal(err)
				}
				env.Headers.Set(ChunkSignatureHeader, sges.BytesValue(sig))
				out.Reset()
				if err := enc.Encode(&out, env); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// replayReader serves the same bytes again after each reset, without
// allocating.
type replayReader struct {
	data []byte
	off  int
}

func (r *replayReader) Read(p []byte) (int, error) {
	if r.off >= len(r.data) {
		return 0, io.EOF
	}
	n := copy(p, r.data[r.off:])
	r.off += n
	return n, nil
}

// responseStream returns count encoded response PayloadPart events with
// payloads of n bytes, in the header order of docs/wire.md Part D.
func responseStream(tb testing.TB, n, count int) []byte {
	m := &Message{Headers: Headers{
		{Name: ":event-type", Value: StringValue("PayloadPart")},
		{Name: ":message-type", Value: StringValue("event")},
		{Name: ":content-type", Value: StringValue("application/octet-stream")},
		{Name: "DataType", Value: StringValue("BINARY")},
		{Name: "CompletionState", Value: StringValue("PARTIAL")},
		{Name: "P", Value: StringValue("pad")},
	}, Payload: benchPayload(n)}
	var stream []byte
	for range count {
		var err error
		if stream, err = AppendMessage(stream, m); err != nil {
			tb.Fatal(err)
		}
	}
	return stream
}

func BenchmarkDecode(b *testing.B) {
	for _, n := range benchSizes {
		count := max(8, (1<<20)/(n+200))
		stream := responseStream(b, n, count)
		b.Run(fmt.Sprintf("impl=ours/size=%d", n), func(b *testing.B) {
			r := &replayReader{data: stream}
			d := NewDecoder(r)
			b.ReportAllocs()
			b.SetBytes(int64(n))
			b.ResetTimer()
			for range b.N {
				m, err := d.Decode()
				if err == io.EOF {
					r.off = 0
					d.Reset(r)
					m, err = d.Decode()
				}
				if err != nil || len(m.Payload) != n {
					b.Fatal(err)
				}
			}
		})
		b.Run(fmt.Sprintf("impl=aws/size=%d", n), func(b *testing.B) {
			r := &replayReader{data: stream}
			d := sges.NewDecoder()
			payloadBuf := make([]byte, 0, n)
			b.ReportAllocs()
			b.SetBytes(int64(n))
			b.ResetTimer()
			for range b.N {
				m, err := d.Decode(r, payloadBuf)
				if err == io.EOF {
					r.off = 0
					m, err = d.Decode(r, payloadBuf)
				}
				if err != nil || len(m.Payload) != n {
					b.Fatal(err)
				}
			}
		})
	}
}

func BenchmarkSHA256(b *testing.B) {
	for _, n := range benchSizes {
		payload := benchPayload(n)
		b.Run(fmt.Sprintf("size=%d", n), func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(n))
			for range b.N {
				sha256.Sum256(payload)
			}
		})
	}
}
