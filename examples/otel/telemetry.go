package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/otel/attribute"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
)

// appSpanName is the name of the application's span, the parent of the
// session's.
const appSpanName = "handle-call"

// spanWait bounds the wait for the session's span to end once the
// stream has ended.
const spanWait = 10 * time.Second

// telemetry is the OpenTelemetry SDK, set up as an application would but
// exporting to memory: spans to an in-memory exporter as they end,
// metrics to a reader that collects them on demand.
type telemetry struct {
	tracerProvider *sdktrace.TracerProvider
	meterProvider  *sdkmetric.MeterProvider
	spans          *tracetest.InMemoryExporter
	reader         *sdkmetric.ManualReader
	watcher        *spanWatcher // of the session's span
}

func newTelemetry() *telemetry {
	t := &telemetry{
		spans:   tracetest.NewInMemoryExporter(),
		reader:  sdkmetric.NewManualReader(),
		watcher: &spanWatcher{name: "SageMaker Runtime HTTP2.InvokeEndpointWithBidirectionalStream", ended: make(chan struct{})},
	}
	t.tracerProvider = sdktrace.NewTracerProvider(
		sdktrace.WithSyncer(t.spans), // export each span as it ends
		sdktrace.WithSpanProcessor(t.watcher),
	)
	t.meterProvider = sdkmetric.NewMeterProvider(sdkmetric.WithReader(t.reader))
	return t
}

func (t *telemetry) shutdown() {
	ctx := context.Background()
	_ = t.tracerProvider.Shutdown(ctx)
	_ = t.meterProvider.Shutdown(ctx)
}

// waitSessionSpan waits until the session's span has ended (and been
// exported); it fails at once if none started (Open refused its input).
func (t *telemetry) waitSessionSpan(ctx context.Context) error {
	if !t.watcher.started.Load() {
		return errors.New("no session span started")
	}
	timer := time.NewTimer(spanWait)
	defer timer.Stop()
	select {
	case <-t.watcher.ended:
		return nil
	case <-timer.C:
		return errors.New("the session's span did not end")
	case <-ctx.Done():
		return context.Cause(ctx)
	}
}

// spanWatcher is a span processor that notes when a span named name
// starts, and closes ended when one ends. Registered after the
// exporter's, it runs once the span has been exported.
type spanWatcher struct {
	name    string
	started atomic.Bool
	ended   chan struct{}
	once    sync.Once
}

func (w *spanWatcher) OnStart(_ context.Context, s sdktrace.ReadWriteSpan) {
	if s.Name() == w.name {
		w.started.Store(true)
	}
}

func (w *spanWatcher) OnEnd(s sdktrace.ReadOnlySpan) {
	if s.Name() == w.name {
		w.once.Do(func() { close(w.ended) })
	}
}

func (w *spanWatcher) Shutdown(context.Context) error   { return nil }
func (w *spanWatcher) ForceFlush(context.Context) error { return nil }

// report is what OpenTelemetry recorded for the session.
type report struct {
	session tracetest.SpanStub   // the session's span
	parent  string               // the name of its parent span, "" if none
	metrics []metricdata.Metrics // bidi's metrics, by name
}

// collect gathers the session's span and the client's metrics.
func (t *telemetry) collect(ctx context.Context) (*report, error) {
	spans := t.spans.GetSpans()
	var r report
	found := 0
	for _, s := range spans {
		if s.Name == "SageMaker Runtime HTTP2.InvokeEndpointWithBidirectionalStream" {
			r.session = s
			found++
		}
	}
	if found != 1 {
		return nil, fmt.Errorf("%d spans named %q, want 1", found, "SageMaker Runtime HTTP2.InvokeEndpointWithBidirectionalStream")
	}
	for _, s := range spans {
		if r.session.Parent.IsValid() && s.SpanContext.SpanID() == r.session.Parent.SpanID() {
			r.parent = s.Name
		}
	}
	var rm metricdata.ResourceMetrics
	if err := t.reader.Collect(ctx, &rm); err != nil {
		return nil, err
	}
	for _, sm := range rm.ScopeMetrics {
		if sm.Scope.Name == "github.com/sagemaker-bidi/sagemaker-bidi/bidi" {
			r.metrics = append(r.metrics, sm.Metrics...)
		}
	}
	slices.SortFunc(r.metrics, func(a, b metricdata.Metrics) int { return strings.Compare(a.Name, b.Name) })
	return &r, nil
}

// common are the attributes of every data point, printed once.
var common = []attribute.Key{"rpc.service", "rpc.method"}

// print writes the span and the metrics; only durations vary between runs.
func (r *report) print(w io.Writer) {
	s := r.session
	fmt.Fprintf(w, "\nspan %q (kind %s, status %s)", s.Name, s.SpanKind, s.Status.Code)
	if r.parent != "" {
		fmt.Fprintf(w, ", child of %q", r.parent)
	}
	fmt.Fprintf(w, ", %s\n", s.EndTime.Sub(s.StartTime).Round(time.Microsecond))
	attrs := sortedAttrs(s.Attributes)
	width := 0
	for _, kv := range attrs {
		width = max(width, len(kv.Key))
	}
	for _, kv := range attrs {
		fmt.Fprintf(w, "  %-*s = %s\n", width, kv.Key, kv.Value.String())
	}
	for _, e := range s.Events {
		fmt.Fprintf(w, "  event %s\n", strings.TrimSpace(e.Name+" "+braces(e.Attributes, nil)))
	}

	fmt.Fprintf(w, "\nmetrics of scope %s\n(each data point also has %s):\n", "github.com/sagemaker-bidi/sagemaker-bidi/bidi", commonText(r.metrics))
	for _, m := range r.metrics {
		for _, line := range points(m) {
			fmt.Fprintf(w, "  %-52s %s\n", line[0], line[1])
		}
	}
}

// points returns the data points of m as (name{attributes}, value) pairs.
func points(m metricdata.Metrics) [][2]string {
	var out [][2]string
	add := func(set attribute.Set, value string) {
		out = append(out, [2]string{m.Name + braces(set.ToSlice(), common), value})
	}
	unit := func(v any) string { return fmt.Sprint(v) + " " + m.Unit }
	switch d := m.Data.(type) {
	case metricdata.Sum[int64]:
		for _, p := range d.DataPoints {
			add(p.Attributes, unit(p.Value))
		}
	case metricdata.Sum[float64]:
		for _, p := range d.DataPoints {
			add(p.Attributes, unit(p.Value))
		}
	case metricdata.Gauge[int64]:
		for _, p := range d.DataPoints {
			add(p.Attributes, unit(p.Value))
		}
	case metricdata.Gauge[float64]:
		for _, p := range d.DataPoints {
			add(p.Attributes, unit(p.Value))
		}
	case metricdata.Histogram[float64]:
		for _, p := range d.DataPoints {
			sum := unit(p.Sum)
			if m.Unit == "s" {
				sum = time.Duration(p.Sum * float64(time.Second)).Round(time.Microsecond).String()
			}
			add(p.Attributes, fmt.Sprintf("count %d, sum %s", p.Count, sum))
		}
	case metricdata.Histogram[int64]:
		for _, p := range d.DataPoints {
			add(p.Attributes, fmt.Sprintf("count %d, sum %s", p.Count, unit(p.Sum)))
		}
	default:
		add(*attribute.EmptySet(), fmt.Sprintf("(%T)", d))
	}
	return out
}

// commonText describes the common attributes of the data points, from the
// first one that has them.
func commonText(ms []metricdata.Metrics) string {
	for _, m := range ms {
		if s, ok := m.Data.(metricdata.Sum[int64]); ok && len(s.DataPoints) > 0 {
			var parts []string
			for _, k := range common {
				if v, ok := s.DataPoints[0].Attributes.Value(k); ok {
					parts = append(parts, fmt.Sprintf("%s=%q", k, v.String()))
				}
			}
			return strings.Join(parts, " and ")
		}
	}
	return strings.Join([]string{string(common[0]), string(common[1])}, " and ")
}

// braces returns the attributes not in skip as {k=v,...}, sorted, or "".
func braces(kvs []attribute.KeyValue, skip []attribute.Key) string {
	var parts []string
	for _, kv := range sortedAttrs(kvs) {
		if !slices.Contains(skip, kv.Key) {
			parts = append(parts, string(kv.Key)+"="+kv.Value.String())
		}
	}
	if len(parts) == 0 {
		return ""
	}
	return "{" + strings.Join(parts, ",") + "}"
}

func sortedAttrs(kvs []attribute.KeyValue) []attribute.KeyValue {
	kvs = slices.Clone(kvs)
	slices.SortFunc(kvs, func(a, b attribute.KeyValue) int { return strings.Compare(string(a.Key), string(b.Key)) })
	return kvs
}
