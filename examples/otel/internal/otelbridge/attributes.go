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
