// Package otelbridge adapts OpenTelemetry to the smithy-go observability
// interfaces that bidi.Options (like every aws-sdk-go-v2 client) takes:
// [Tracer] turns an OpenTelemetry trace.TracerProvider into a smithy-go
// tracing.TracerProvider, and [Meter] an OpenTelemetry
// metric.MeterProvider into a smithy-go metrics.MeterProvider.
//
//	client := bidi.NewFromConfig(cfg, func(o *bidi.Options) {
//		o.TracerProvider = otelbridge.Tracer(otel.GetTracerProvider())
//		o.MeterProvider = otelbridge.Meter(otel.GetMeterProvider())
//	})
//
// It is the small adapter the otel example needs, kept free of anything
// but the OpenTelemetry API, and internal to the example: copy it into an
// application that wants it. smithy-go properties become OpenTelemetry
// attributes (string, bool, integer and float values and their slices
// as such, anything else as its fmt.Sprint text), span kinds, events,
// statuses and the end of a span map one to one, and every smithy-go
// instrument, synchronous or asynchronous, is backed by the OpenTelemetry
// instrument of the same kind. aws-sdk-go-v2 publishes a fuller adapter
// as the modules github.com/aws/smithy-go/tracing/smithyoteltracing and
// github.com/aws/smithy-go/metrics/smithyotelmetrics.
package otelbridge
