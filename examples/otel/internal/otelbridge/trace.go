package otelbridge

import (
	"context"

	"github.com/aws/smithy-go/tracing"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"
)

// Tracer returns a smithy-go tracing.TracerProvider that records its spans
// with tp. A span started under a context that holds an OpenTelemetry
// span (such as the context given to bidi.Client.Open) is its child.
func Tracer(tp trace.TracerProvider) tracing.TracerProvider {
	return tracerProvider{tp}
}

type tracerProvider struct{ tp trace.TracerProvider }

func (p tracerProvider) Tracer(scope string, opts ...tracing.TracerOption) tracing.Tracer {
	var o tracing.TracerOptions
	for _, fn := range opts {
		fn(&o)
	}
	var topts []trace.TracerOption
	if kvs := attrs(&o.Properties); kvs != nil {
		topts = append(topts, trace.WithInstrumentationAttributes(kvs...))
	}
	return tracer{p.tp.Tracer(scope, topts...)}
}

type tracer struct{ t trace.Tracer }

func (t tracer) StartSpan(ctx context.Context, name string, opts ...tracing.SpanOption) (context.Context, tracing.Span) {
	var o tracing.SpanOptions
	for _, fn := range opts {
		fn(&o)
	}
	sopts := []trace.SpanStartOption{trace.WithSpanKind(spanKind(o.Kind))}
	if kvs := attrs(&o.Properties); kvs != nil {
		sopts = append(sopts, trace.WithAttributes(kvs...))
	}
	ctx, otelSpan := t.t.Start(ctx, name, sopts...)
	s := &span{name: name, s: otelSpan}
	// The context carries the span both ways: OpenTelemetry's (for the
	// children the application starts) and smithy-go's (for
	// tracing.GetSpan).
	return tracing.WithSpan(ctx, s), s
}

// spanKind maps a smithy-go span kind to OpenTelemetry's.
func spanKind(k tracing.SpanKind) trace.SpanKind {
	switch k {
	case tracing.SpanKindClient:
		return trace.SpanKindClient
	case tracing.SpanKindServer:
		return trace.SpanKindServer
	case tracing.SpanKindProducer:
		return trace.SpanKindProducer
	case tracing.SpanKindConsumer:
		return trace.SpanKindConsumer
	}
	return trace.SpanKindInternal
}

// span is a smithy-go span recorded by an OpenTelemetry span. Its
// methods may be called from any goroutine, as OpenTelemetry's.
type span struct {
	name string // OpenTelemetry's write-only span does not return it
	s    trace.Span
}

func (s *span) Name() string { return s.name }

func (s *span) Context() tracing.SpanContext {
	sc := s.s.SpanContext()
	if !sc.IsValid() {
		return tracing.SpanContext{}
	}
	return tracing.SpanContext{
		TraceID:  sc.TraceID().String(),
		SpanID:   sc.SpanID().String(),
		IsRemote: sc.IsRemote(),
	}
}

func (s *span) AddEvent(name string, opts ...tracing.EventOption) {
	var o tracing.EventOptions
	for _, fn := range opts {
		fn(&o)
	}
	if kvs := attrs(&o.Properties); kvs != nil {
		s.s.AddEvent(name, trace.WithAttributes(kvs...))
		return
	}
	s.s.AddEvent(name)
}

func (s *span) SetStatus(st tracing.SpanStatus) {
	switch st {
	case tracing.SpanStatusOK:
		s.s.SetStatus(codes.Ok, "")
	case tracing.SpanStatusError:
		s.s.SetStatus(codes.Error, "")
	default:
		s.s.SetStatus(codes.Unset, "")
	}
}

func (s *span) SetProperty(k, v any) { s.s.SetAttributes(attr(k, v)) }

func (s *span) End() { s.s.End() }
