package otelbridge

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/aws/smithy-go"
	"github.com/aws/smithy-go/metrics"
	"github.com/aws/smithy-go/tracing"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
)

func newTracer(t *testing.T) (*tracetest.InMemoryExporter, *sdktrace.TracerProvider) {
	exp := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
	t.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
	return exp, tp
}

type point struct{ x, y int }

func TestSpan(t *testing.T) {
	exp, tp := newTracer(t)
	ctx, parent := tp.Tracer("app").Start(context.Background(), "parent")
	tr := Tracer(tp).Tracer("scope")

	sctx, s := tr.StartSpan(ctx, "op", func(o *tracing.SpanOptions) {
		o.Kind = tracing.SpanKindClient
		o.Properties.Set("s", "text")
		o.Properties.Set("i", 7)
		o.Properties.Set("i64", int64(1)<<40)
		o.Properties.Set("u8", uint8(8))
		o.Properties.Set("f", 1.5)
		o.Properties.Set("b", true)
		o.Properties.Set("ss", []string{"a", "b"})
		o.Properties.Set("d", 1500*time.Millisecond)
		o.Properties.Set("p", point{1, 2})
		o.Properties.Set("e", errors.New("boom"))
	})
	if s.Name() != "op" {
		t.Errorf("Name() = %q", s.Name())
	}
	if got, ok := tracing.GetSpan(sctx); !ok || got != s {
		t.Error("tracing.GetSpan does not find the span in the returned context")
	}
	if trace.SpanFromContext(sctx).SpanContext().SpanID().String() != s.Context().SpanID {
		t.Error("the returned context does not hold the OpenTelemetry span")
	}
	sc := s.Context()
	if !sc.IsValid() || sc.TraceID != parent.SpanContext().TraceID().String() || sc.IsRemote {
		t.Errorf("span context %+v, parent trace %s", sc, parent.SpanContext().TraceID())
	}
	s.AddEvent("ev", func(o *tracing.EventOptions) { o.Properties.Set("n", 3) })
	s.AddEvent("bare")
	s.SetProperty("late", 42)
	s.SetStatus(tracing.SpanStatusError)
	s.End()

	spans := exp.GetSpans()
	if len(spans) != 1 {
		t.Fatalf("%d spans exported, want 1", len(spans))
	}
	got := spans[0]
	if got.Name != "op" || got.SpanKind != trace.SpanKindClient || got.Status.Code != codes.Error {
		t.Errorf("span %q kind %v status %v", got.Name, got.SpanKind, got.Status.Code)
	}
	if got.Parent.SpanID() != parent.SpanContext().SpanID() {
		t.Error("not a child of the context's span")
	}
	if got.InstrumentationScope.Name != "scope" {
		t.Errorf("scope %q", got.InstrumentationScope.Name)
	}
	want := map[attribute.Key]attribute.Value{
		"s":    attribute.StringValue("text"),
		"i":    attribute.IntValue(7),
		"i64":  attribute.Int64Value(1 << 40),
		"u8":   attribute.Int64Value(8),
		"f":    attribute.Float64Value(1.5),
		"b":    attribute.BoolValue(true),
		"ss":   attribute.StringSliceValue([]string{"a", "b"}),
		"d":    attribute.StringValue("1.5s"),
		"p":    attribute.StringValue("{1 2}"),
		"e":    attribute.StringValue("boom"),
		"late": attribute.IntValue(42),
	}
	have := map[attribute.Key]attribute.Value{}
	for _, kv := range got.Attributes {
		have[kv.Key] = kv.Value
	}
	for k, v := range want {
		if have[k].Type() != v.Type() || have[k].String() != v.String() {
			t.Errorf("attribute %s = %v (%v), want %v (%v)", k, have[k].String(), have[k].Type(), v.String(), v.Type())
		}
	}
	if len(got.Events) != 2 || got.Events[0].Name != "ev" || got.Events[1].Name != "bare" {
		t.Fatalf("events %+v", got.Events)
	}
	if ev := got.Events[0].Attributes; len(ev) != 1 || ev[0] != attribute.Int("n", 3) {
		t.Errorf("event attributes %v", ev)
	}
}

func TestSpanKindsAndStatus(t *testing.T) {
	exp, tp := newTracer(t)
	tr := Tracer(tp).Tracer("scope")
	kinds := map[tracing.SpanKind]trace.SpanKind{
		tracing.SpanKindInternal: trace.SpanKindInternal,
		tracing.SpanKindClient:   trace.SpanKindClient,
		tracing.SpanKindServer:   trace.SpanKindServer,
		tracing.SpanKindProducer: trace.SpanKindProducer,
		tracing.SpanKindConsumer: trace.SpanKindConsumer,
	}
	for k, want := range kinds {
		exp.Reset()
		_, s := tr.StartSpan(context.Background(), "k", func(o *tracing.SpanOptions) { o.Kind = k })
		s.SetStatus(tracing.SpanStatusOK)
		s.End()
		got := exp.GetSpans()[0]
		if got.SpanKind != want || got.Status.Code != codes.Ok {
			t.Errorf("smithy kind %v: kind %v status %v, want %v Ok", k, got.SpanKind, got.Status.Code, want)
		}
	}
}

// collect returns the metrics of mp's reader by name.
func collect(t *testing.T, r *sdkmetric.ManualReader) map[string]metricdata.Metrics {
	t.Helper()
	var rm metricdata.ResourceMetrics
	if err := r.Collect(context.Background(), &rm); err != nil {
		t.Fatal(err)
	}
	out := map[string]metricdata.Metrics{}
	for _, sm := range rm.ScopeMetrics {
		if sm.Scope.Name != "scope" {
			t.Errorf("scope %q", sm.Scope.Name)
		}
		for _, m := range sm.Metrics {
			out[m.Name] = m
		}
	}
	return out
}

func TestMeter(t *testing.T) {
	reader := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	t.Cleanup(func() { _ = mp.Shutdown(context.Background()) })
	m := Meter(mp).Meter("scope")
	ctx := context.Background()
	unit := func(o *metrics.InstrumentOptions) { o.UnitLabel, o.Description = "By", "bytes" }
	tag := func(o *metrics.RecordMetricOptions) { o.Properties.Set("k", "v") }

	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	ic, err := m.Int64Counter("ic", unit)
	must(err)
	ic.Add(ctx, 2, tag)
	ic.Add(ctx, 3, tag)
	iu, err := m.Int64UpDownCounter("iu")
	must(err)
	iu.Add(ctx, 1)
	iu.Add(ctx, -1)
	ig, err := m.Int64Gauge("ig")
	must(err)
	ig.Sample(ctx, 9)
	ih, err := m.Int64Histogram("ih")
	must(err)
	ih.Record(ctx, 4)
	fc, err := m.Float64Counter("fc")
	must(err)
	fc.Add(ctx, 0.5)
	fu, err := m.Float64UpDownCounter("fu")
	must(err)
	fu.Add(ctx, -0.25)
	fg, err := m.Float64Gauge("fg")
	must(err)
	fg.Sample(ctx, 2.5)
	fh, err := m.Float64Histogram("fh")
	must(err)
	fh.Record(ctx, 0.1, tag)
	fh.Record(ctx, 0.2, tag)

	calls := 0
	var async []metrics.AsyncInstrument
	for _, mk := range []func() (metrics.AsyncInstrument, error){
		func() (metrics.AsyncInstrument, error) {
			return m.Int64AsyncCounter("iac", func(ctx context.Context, o metrics.Int64Observer) { calls++; o.Observe(ctx, 11, tag) })
		},
		func() (metrics.AsyncInstrument, error) {
			return m.Int64AsyncUpDownCounter("iau", func(ctx context.Context, o metrics.Int64Observer) { calls++; o.Observe(ctx, -2) })
		},
		func() (metrics.AsyncInstrument, error) {
			return m.Int64AsyncGauge("iag", func(ctx context.Context, o metrics.Int64Observer) { calls++; o.Observe(ctx, 5) })
		},
		func() (metrics.AsyncInstrument, error) {
			return m.Float64AsyncCounter("fac", func(ctx context.Context, o metrics.Float64Observer) { calls++; o.Observe(ctx, 1.25) })
		},
		func() (metrics.AsyncInstrument, error) {
			return m.Float64AsyncUpDownCounter("fau", func(ctx context.Context, o metrics.Float64Observer) { calls++; o.Observe(ctx, -1.5) })
		},
		func() (metrics.AsyncInstrument, error) {
			return m.Float64AsyncGauge("fag", func(ctx context.Context, o metrics.Float64Observer) { calls++; o.Observe(ctx, 3.5) })
		},
	} {
		a, err := mk()
		must(err)
		async = append(async, a)
	}

	got := collect(t, reader)
	if calls != 6 {
		t.Errorf("%d callbacks ran, want 6", calls)
	}
	sumI := func(name string) (int64, attribute.Set) {
		s, ok := got[name].Data.(metricdata.Sum[int64])
		if !ok || len(s.DataPoints) != 1 {
			t.Fatalf("%s: %T %+v", name, got[name].Data, got[name].Data)
		}
		return s.DataPoints[0].Value, s.DataPoints[0].Attributes
	}
	sumF := func(name string) float64 {
		s, ok := got[name].Data.(metricdata.Sum[float64])
		if !ok || len(s.DataPoints) != 1 {
			t.Fatalf("%s: %T %+v", name, got[name].Data, got[name].Data)
		}
		return s.DataPoints[0].Value
	}
	if v, set := sumI("ic"); v != 5 || set != attribute.NewSet(attribute.String("k", "v")) {
		t.Errorf("ic = %d %v", v, set.ToSlice())
	}
	if got["ic"].Unit != "By" || got["ic"].Description != "bytes" {
		t.Errorf("ic unit %q description %q", got["ic"].Unit, got["ic"].Description)
	}
	if s := got["ic"].Data.(metricdata.Sum[int64]); !s.IsMonotonic {
		t.Error("Int64Counter is not monotonic")
	}
	if s := got["iu"].Data.(metricdata.Sum[int64]); s.IsMonotonic {
		t.Error("Int64UpDownCounter is monotonic")
	}
	if v, _ := sumI("iu"); v != 0 {
		t.Errorf("iu = %d", v)
	}
	if v, set := sumI("iac"); v != 11 || set.Len() != 1 {
		t.Errorf("iac = %d %v", v, set.ToSlice())
	}
	if v, _ := sumI("iau"); v != -2 {
		t.Errorf("iau = %d", v)
	}
	if v := sumF("fc"); v != 0.5 {
		t.Errorf("fc = %v", v)
	}
	if v := sumF("fu"); v != -0.25 {
		t.Errorf("fu = %v", v)
	}
	if v := sumF("fac"); v != 1.25 {
		t.Errorf("fac = %v", v)
	}
	if v := sumF("fau"); v != -1.5 {
		t.Errorf("fau = %v", v)
	}
	for name, want := range map[string]int64{"ig": 9, "iag": 5} {
		if g, ok := got[name].Data.(metricdata.Gauge[int64]); !ok || g.DataPoints[0].Value != want {
			t.Errorf("%s: %+v", name, got[name].Data)
		}
	}
	for name, want := range map[string]float64{"fg": 2.5, "fag": 3.5} {
		if g, ok := got[name].Data.(metricdata.Gauge[float64]); !ok || g.DataPoints[0].Value != want {
			t.Errorf("%s: %+v", name, got[name].Data)
		}
	}
	if h, ok := got["ih"].Data.(metricdata.Histogram[int64]); !ok || h.DataPoints[0].Count != 1 || h.DataPoints[0].Sum != 4 {
		t.Errorf("ih: %+v", got["ih"].Data)
	}
	if h, ok := got["fh"].Data.(metricdata.Histogram[float64]); !ok || h.DataPoints[0].Count != 2 ||
		h.DataPoints[0].Attributes != attribute.NewSet(attribute.String("k", "v")) {
		t.Errorf("fh: %+v", got["fh"].Data)
	}

	// Stop unregisters the callbacks.
	for _, a := range async {
		a.Stop()
	}
	calls = 0
	collect(t, reader)
	if calls != 0 {
		t.Errorf("%d callbacks ran after Stop", calls)
	}
}

// An instrument OpenTelemetry refuses comes with the error but still
// works, for callers that ignore the error.
func TestMeterInvalidName(t *testing.T) {
	reader := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	t.Cleanup(func() { _ = mp.Shutdown(context.Background()) })
	m := Meter(mp).Meter("scope")
	c, err := m.Int64Counter("not a valid name!")
	if c == nil {
		t.Fatal("nil instrument")
	}
	if err == nil {
		t.Error("no error for an invalid name")
	}
	c.Add(context.Background(), 1) // must not panic
	h, _ := m.Float64Histogram("")
	h.Record(context.Background(), 1)
}

// The adapters satisfy the smithy-go interfaces bidi.Options takes.
var (
	_ tracing.TracerProvider = Tracer(nil)
	_ metrics.MeterProvider  = Meter(nil)
)

func TestAttrKeys(t *testing.T) {
	kv := attr(point{1, 2}, uint64(1)<<63)
	if kv.Key != "{1 2}" || kv.Value.Type() != attribute.STRING || kv.Value.AsString() != "9223372036854775808" {
		t.Errorf("attr = %v %v", kv.Key, kv.Value.String())
	}
	if kvs := attrs(&smithy.Properties{}); kvs != nil {
		t.Errorf("attrs of no properties = %v", kvs)
	}
}
