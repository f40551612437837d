package bidi_test

import (
	"context"
	"testing"
	"time"

	"github.com/aws/smithy-go/metrics"
	"github.com/aws/smithy-go/tracing"

	"github.com/sagemaker-bidi/sagemaker-bidi/bidi"
	"github.com/sagemaker-bidi/sagemaker-bidi/bidi/biditest"
)

// BenchmarkEchoOverhead measures what rotation and observability add to
// each message: a 256-byte echo round trip on one session, plain, through
// a RotatingSession (no rotation during the run: its cost is one Open per
// Rotation.After, 29 minutes by default), and with no-op tracer and meter
// providers. The in-process server's own allocations are included in
// allocs/op; compare the rows with each other.
func BenchmarkEchoOverhead(b *testing.B) {
	srv := biditest.NewServer(biditest.Echo())
	defer srv.Close()
	msg := bidi.Binary(make([]byte, 256))
	ctx := context.Background()
	type echoer interface {
		Send(context.Context, bidi.Message) error
		Recv(context.Context) (bidi.Message, error)
	}
	run := func(b *testing.B, e echoer) {
		b.ReportAllocs()
		for b.Loop() {
			if err := e.Send(ctx, msg); err != nil {
				b.Fatal(err)
			}
			if _, err := e.Recv(ctx); err != nil {
				b.Fatal(err)
			}
		}
	}
	b.Run("session=plain", func(b *testing.B) {
		sess, err := srv.Client().Open(ctx, &bidi.OpenInput{EndpointName: "bench"})
		if err != nil {
			b.Fatal(err)
		}
		defer sess.Close()
		run(b, sess)
	})
	b.Run("session=observed", func(b *testing.B) {
		c := srv.Client(func(o *bidi.Options) {
			o.TracerProvider, o.MeterProvider = tracing.NopTracerProvider{}, metrics.NopMeterProvider{}
		})
		sess, err := c.Open(ctx, &bidi.OpenInput{EndpointName: "bench"})
		if err != nil {
			b.Fatal(err)
		}
		defer sess.Close()
		run(b, sess)
	})
	b.Run("session=rotating", func(b *testing.B) {
		rs, err := srv.Client().OpenRotating(ctx, &bidi.OpenInput{EndpointName: "bench"}, &bidi.Rotation{After: time.Hour})
		if err != nil {
			b.Fatal(err)
		}
		defer rs.Close()
		run(b, rs)
	})
}
