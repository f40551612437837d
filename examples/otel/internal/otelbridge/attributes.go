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
// but the OpenTelemetry API: smithy-go properties become OpenTelemetry
// attributes (string, bool, integer and float values and their slices
// as such, anything else as its fmt.Sprint text), span kinds, events,
// statuses and the end of a span map one to one, and every smithy-go
// instrument, synchronous or asynchronous, is backed by the OpenTelemetry
// instrument of the same kind. aws-sdk-go-v2 publishes a fuller adapter
// as the modules github.com/aws/smithy-go/tracing/smithyoteltracing and
// github.com/aws/smithy-go/metrics/smithyotelmetrics.
package otelbridge

import (
	"fmt"
	"math"

	"github.com/aws/smithy-go"
	"go.opentelemetry.io/otel/attribute"
)

// attrs returns props as OpenTelemetry attributes, nil when empty.
func attrs(props *smithy.Properties) []attribute.KeyValue {
	values := props.Values()
	if len(values) == 0 {
		return nil
	}
	kvs := make([]attribute.KeyValue, 0, len(values))
	for k, v := range values {
		kvs = append(kvs, attr(k, v))
	}
	return kvs
}

// attr returns the attribute k = v: values of the types OpenTelemetry
// has keep their type, others (durations, errors, structs) become text.
func attr(k, v any) attribute.KeyValue {
	key := attribute.Key(text(k))
	switch v := v.(type) {
	case string:
		return key.String(v)
	case bool:
		return key.Bool(v)
	case int:
		return key.Int(v)
	case int8:
		return key.Int64(int64(v))
	case int16:
		return key.Int64(int64(v))
	case int32:
		return key.Int64(int64(v))
	case int64:
		return key.Int64(v)
	case uint8:
		return key.Int64(int64(v))
	case uint16:
		return key.Int64(int64(v))
	case uint32:
		return key.Int64(int64(v))
	case uint:
		if uint64(v) <= math.MaxInt64 {
			return key.Int64(int64(v))
		}
	case uint64:
		if v <= math.MaxInt64 {
			return key.Int64(int64(v))
		}
	case float32:
		return key.Float64(float64(v))
	case float64:
		return key.Float64(v)
	case []string:
		return key.StringSlice(v)
	case []bool:
		return key.BoolSlice(v)
	case []int:
		return key.IntSlice(v)
	case []int64:
		return key.Int64Slice(v)
	case []float64:
		return key.Float64Slice(v)
	}
	return key.String(text(v))
}

// text is v as text: itself for a string, else its fmt.Sprint form (which
// uses a String or Error method).
func text(v any) string {
	if s, ok := v.(string); ok {
		return s
	}
	return fmt.Sprint(v)
}
