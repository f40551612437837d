package cassette_test

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/sagemaker-bidi/sagemaker-bidi/bidi"
	"github.com/sagemaker-bidi/sagemaker-bidi/bidi/biditest"
	"github.com/sagemaker-bidi/sagemaker-bidi/bidi/cassette"
)

// benchSession is a session against biditest's echo, plain or recorded
// to a cassette file.
type benchSession interface {
	Send(ctx context.Context, m bidi.Message) error
	Recv(ctx context.Context) (bidi.Message, error)
	CloseSend() error
}

func openBench(b *testing.B, srv *biditest.Server, record bool) (benchSession, func()) {
	ctx := context.Background()
	in := &bidi.OpenInput{EndpointName: "bench"}
	sess, err := srv.Client().Open(ctx, in)
	if err != nil {
		b.Fatal(err)
	}
	if !record {
		return sess, func() { sess.Close() }
	}
	f, err := os.Create(filepath.Join(b.TempDir(), "bench.jsonl"))
	if err != nil {
		b.Fatal(err)
	}
	w, err := cassette.NewWriter(f, nil)
	if err != nil {
		b.Fatal(err)
	}
	rec := cassette.Record(sess, in, w, nil)
	return rec, func() {
		if err := rec.Close(); err != nil {
			b.Fatal(err)
		}
		f.Close()
	}
}

// reportCPU reports the process's CPU time per operation since start
// (the client, the recorder and the in-process server together): what a
// host with no idle core pays.
func reportCPU(b *testing.B, start time.Duration) {
	if start > 0 {
		b.ReportMetric(float64((processCPU()-start).Microseconds())/float64(b.N), "cpu-µs/op")
	}
}

// BenchmarkPingPong sends a 1 KiB text message and waits for its echo,
// in a plain session and in a recorded one (same run, same server); it
// reports the round trip's p50.
func BenchmarkPingPong(b *testing.B) {
	srv := biditest.NewUnstartedServer(biditest.Echo())
	srv.MaxRecorded = -1
	srv.Start()
	defer srv.Close()
	msg := bidi.Text(string(make([]byte, 1024)))
	for _, record := range []bool{false, true} {
		name := "plain"
		if record {
			name = "recorded"
		}
		b.Run(name, func(b *testing.B) {
			ctx := context.Background()
			sess, done := openBench(b, srv, record)
			defer done()
			rtts := make([]time.Duration, 0, b.N)
			b.SetBytes(int64(len(msg.Data)))
			b.ReportAllocs()
			b.ResetTimer()
			cpu := processCPU()
			for range b.N {
				start := time.Now()
				if err := sess.Send(ctx, msg); err != nil {
					b.Fatal(err)
				}
				if _, err := sess.Recv(ctx); err != nil {
					b.Fatal(err)
				}
				rtts = append(rtts, time.Since(start))
			}
			b.StopTimer()
			reportCPU(b, cpu)
			slices.Sort(rtts)
			b.ReportMetric(float64(rtts[len(rtts)/2].Microseconds()), "p50-µs")
		})
	}
}

// BenchmarkStream sends 4 KiB binary messages from one goroutine while
// another receives their echoes: throughput, plain and recorded.
func BenchmarkStream(b *testing.B) {
	srv := biditest.NewUnstartedServer(biditest.Echo())
	srv.MaxRecorded = -1
	srv.Start()
	defer srv.Close()
	msg := bidi.Binary(make([]byte, 4096))
	for _, record := range []bool{false, true} {
		name := "plain"
		if record {
			name = "recorded"
		}
		b.Run(name, func(b *testing.B) {
			ctx := context.Background()
			sess, done := openBench(b, srv, record)
			defer done()
			b.SetBytes(int64(len(msg.Data)))
			b.ReportAllocs()
			b.ResetTimer()
			cpu := processCPU()
			sent := make(chan error, 1)
			go func() {
				for range b.N {
					if err := sess.Send(ctx, msg); err != nil {
						sent <- err
						return
					}
				}
				sent <- nil
			}()
			for range b.N {
				if _, err := sess.Recv(ctx); err != nil {
					b.Fatal(err)
				}
			}
			if err := <-sent; err != nil {
				b.Fatal(err)
			}
			b.StopTimer()
			reportCPU(b, cpu)
		})
	}
}

// BenchmarkWrite is the recorder's own cost per event: a 1 KiB text part
// and a 4 KiB binary part encoded and buffered (io.Discard behind).
func BenchmarkWrite(b *testing.B) {
	for _, tc := range []struct {
		name string
		e    cassette.Event
	}{
		{"text-1KiB", cassette.Event{Kind: cassette.KindSend, Type: bidi.DataTypeUTF8, Complete: true, Size: 1024, Padding: 64, Data: []byte(strings.Repeat("a", 1024))}},
		{"binary-4KiB", cassette.Event{Kind: cassette.KindRecv, Complete: true, Size: 4096, Padding: -1, Data: make([]byte, 4096)}},
	} {
		b.Run(tc.name, func(b *testing.B) {
			w, _ := cassette.NewWriter(io.Discard, nil)
			b.SetBytes(int64(tc.e.Size))
			b.ReportAllocs()
			for range b.N {
				tc.e.T++
				if err := w.Write(&tc.e); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
