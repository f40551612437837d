package bidi_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/smithy-go/metrics"
	"github.com/aws/smithy-go/tracing"

	"github.com/sagemaker-bidi/sagemaker-bidi/bidi"
	"github.com/sagemaker-bidi/sagemaker-bidi/bidi/biditest"
)

// memTracer is an in-memory tracing.TracerProvider that keeps every span.
type memTracer struct {
	mu    sync.Mutex
	spans []*memSpan
}

type memSpan struct {
	mu     sync.Mutex
	name   string
	kind   tracing.SpanKind
	props  map[any]any
	events []string
	status tracing.SpanStatus
	ended  bool
}

func (t *memTracer) Tracer(string, ...tracing.TracerOption) tracing.Tracer { return t }

func (t *memTracer) StartSpan(ctx context.Context, name string, opts ...tracing.SpanOption) (context.Context, tracing.Span) {
	var o tracing.SpanOptions
	for _, fn := range opts {
		fn(&o)
	}
	s := &memSpan{name: name, kind: o.Kind, props: map[any]any{}}
	for k, v := range o.Properties.Values() {
		s.props[k] = v
	}
	t.mu.Lock()
	t.spans = append(t.spans, s)
	t.mu.Unlock()
	return ctx, s
}

func (t *memTracer) all() []*memSpan {
	t.mu.Lock()
	defer t.mu.Unlock()
	return append([]*memSpan(nil), t.spans...)
}

func (s *memSpan) Name() string                 { return s.name }
func (s *memSpan) Context() tracing.SpanContext { return tracing.SpanContext{} }
func (s *memSpan) AddEvent(name string, opts ...tracing.EventOption) {
	var o tracing.EventOptions
	for _, fn := range opts {
		fn(&o)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.events = append(s.events, name)
	for k, v := range o.Properties.Values() {
		s.props[fmt.Sprint(name, ".", k)] = v
	}
}
func (s *memSpan) SetStatus(st tracing.SpanStatus) { s.mu.Lock(); s.status = st; s.mu.Unlock() }
func (s *memSpan) SetProperty(k, v any)            { s.mu.Lock(); s.props[k] = v; s.mu.Unlock() }
func (s *memSpan) End()                            { s.mu.Lock(); s.ended = true; s.mu.Unlock() }

func (s *memSpan) snapshot() (props map[any]any, events []string, status tracing.SpanStatus, ended bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	p := map[any]any{}
	for k, v := range s.props {
		p[k] = v
	}
	return p, append([]string(nil), s.events...), s.status, s.ended
}

// memMeter is an in-memory metrics.MeterProvider: every instrument adds
// what it records to a total per name and attribute set, and counts
// records.
type memMeter struct {
	metrics.NopMeterProvider
	mu     sync.Mutex
	totals map[string]float64
	counts map[string]int
}

func newMemMeter() *memMeter {
	return &memMeter{totals: map[string]float64{}, counts: map[string]int{}}
}

func (m *memMeter) Meter(string, ...metrics.MeterOption) metrics.Meter { return memMeterImpl{m} }

func (m *memMeter) record(name string, v float64, opts []metrics.RecordMetricOption) {
	var o metrics.RecordMetricOptions
	for _, fn := range opts {
		fn(&o)
	}
	key := name
	if r, ok := o.Properties.Get("end_reason").(string); ok {
		key += "{" + r + "}"
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	m.totals[key] += v
	m.counts[key]++
}

func (m *memMeter) total(key string) float64 {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.totals[key]
}

func (m *memMeter) count(key string) int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.counts[key]
}

type memMeterImpl struct{ m *memMeter }

type memInstrument struct {
	m    *memMeter
	name string
}

func (i memInstrument) Add(_ context.Context, v int64, o ...metrics.RecordMetricOption) {
	i.m.record(i.name, float64(v), o)
}
func (i memInstrument) Record(_ context.Context, v float64, o ...metrics.RecordMetricOption) {
	i.m.record(i.name, v, o)
}

type memInt64Hist struct{ memInstrument }

func (i memInt64Hist) Record(_ context.Context, v int64, o ...metrics.RecordMetricOption) {
	i.m.record(i.name, float64(v), o)
}

type memFloatCounter struct{ memInstrument }

func (i memFloatCounter) Add(_ context.Context, v float64, o ...metrics.RecordMetricOption) {
	i.m.record(i.name, v, o)
}

func (x memMeterImpl) Int64Counter(n string, _ ...metrics.InstrumentOption) (metrics.Int64Counter, error) {
	return memInstrument{x.m, n}, nil
}
func (x memMeterImpl) Int64UpDownCounter(n string, _ ...metrics.InstrumentOption) (metrics.Int64UpDownCounter, error) {
	return memInstrument{x.m, n}, nil
}
func (x memMeterImpl) Int64Gauge(string, ...metrics.InstrumentOption) (metrics.Int64Gauge, error) {
	return metrics.NopMeterProvider{}.Meter("").Int64Gauge("")
}
func (x memMeterImpl) Int64Histogram(n string, _ ...metrics.InstrumentOption) (metrics.Int64Histogram, error) {
	return memInt64Hist{memInstrument{x.m, n}}, nil
}
func (x memMeterImpl) Int64AsyncCounter(string, metrics.Int64Callback, ...metrics.InstrumentOption) (metrics.AsyncInstrument, error) {
	return metrics.NopMeterProvider{}.Meter("").Int64AsyncCounter("", nil)
}
func (x memMeterImpl) Int64AsyncUpDownCounter(string, metrics.Int64Callback, ...metrics.InstrumentOption) (metrics.AsyncInstrument, error) {
	return metrics.NopMeterProvider{}.Meter("").Int64AsyncUpDownCounter("", nil)
}
func (x memMeterImpl) Int64AsyncGauge(string, metrics.Int64Callback, ...metrics.InstrumentOption) (metrics.AsyncInstrument, error) {
	return metrics.NopMeterProvider{}.Meter("").Int64AsyncGauge("", nil)
}
func (x memMeterImpl) Float64Counter(n string, _ ...metrics.InstrumentOption) (metrics.Float64Counter, error) {
	return memFloatCounter{memInstrument{x.m, n}}, nil
}
func (x memMeterImpl) Float64UpDownCounter(n string, _ ...metrics.InstrumentOption) (metrics.Float64UpDownCounter, error) {
	return memFloatCounter{memInstrument{x.m, n}}, nil
}
func (x memMeterImpl) Float64Gauge(string, ...metrics.InstrumentOption) (metrics.Float64Gauge, error) {
	return metrics.NopMeterProvider{}.Meter("").Float64Gauge("")
}
func (x memMeterImpl) Float64Histogram(n string, _ ...metrics.InstrumentOption) (metrics.Float64Histogram, error) {
	return memInstrument{x.m, n}, nil
}
func (x memMeterImpl) Float64AsyncCounter(string, metrics.Float64Callback, ...metrics.InstrumentOption) (metrics.AsyncInstrument, error) {
	return metrics.NopMeterProvider{}.Meter("").Float64AsyncCounter("", nil)
}
func (x memMeterImpl) Float64AsyncUpDownCounter(string, metrics.Float64Callback, ...metrics.InstrumentOption) (metrics.AsyncInstrument, error) {
	return metrics.NopMeterProvider{}.Meter("").Float64AsyncUpDownCounter("", nil)
}
func (x memMeterImpl) Float64AsyncGauge(string, metrics.Float64Callback, ...metrics.InstrumentOption) (metrics.AsyncInstrument, error) {
	return metrics.NopMeterProvider{}.Meter("").Float64AsyncGauge("", nil)
}

// waitSpanEnded waits until the session's span has ended (the session's
// goroutine ends it as it exits).
func waitSpanEnded(t *testing.T, sess *bidi.Session, tr *memTracer) *memSpan {
	t.Helper()
	<-sess.Context().Done()
	for range 2000 {
		spans := tr.all()
		if len(spans) == 1 {
			if _, _, _, ended := spans[0].snapshot(); ended {
				return spans[0]
			}
		}
		waitBriefly() // polling: the span ends as the goroutine exits, which nothing signals
	}
	t.Fatal("the session's span never ended")
	return nil
}

// TestObservabilityWholeStream: one span covers the session from Open to
// the stream's end, with the response and first-event events and the end
// reason; metrics count events and bytes both ways; no payload, credential
// or signature appears in any attribute.
func TestObservabilityWholeStream(t *testing.T) {
	const payload = "confidential-payload-7f3a"
	srv := newServer(t, biditest.Echo())
	tr, mm := &memTracer{}, newMemMeter()
	c := srv.Client(func(o *bidi.Options) { o.TracerProvider, o.MeterProvider = tr, mm })
	ctx := testCtx(t)
	sess := open(t, c, ctx)
	for range 3 {
		roundTrip(t, sess, payload)
	}
	sess.CloseSend()
	drainEOF(t, sess)
	span := waitSpanEnded(t, sess, tr)
	props, events, status, _ := span.snapshot()
	if span.name != "SageMaker Runtime HTTP2.InvokeEndpointWithBidirectionalStream" || span.kind != tracing.SpanKindClient {
		t.Errorf("span %q kind %v", span.name, span.kind)
	}
	if strings.Join(events, ",") != "response,first_event" {
		t.Errorf("events %v, want response,first_event", events)
	}
	if props["end_reason"] != "completed" || status != tracing.SpanStatusOK || props["http.status_code"] != 200 || props["aws.sagemaker.endpoint_name"] != "my-endpoint" {
		t.Errorf("span attributes %v, status %v", props, status)
	}
	for k, v := range props {
		s := fmt.Sprint(k, "=", v)
		if strings.Contains(s, payload) || strings.Contains(s, serverCredentials.SecretAccessKey) || strings.Contains(s, "Signature") {
			t.Errorf("attribute leaks content: %s", s)
		}
	}
	p := "sagemaker_bidi.stream."
	for key, want := range map[string]float64{
		p + "events_sent": 3, p + "events_received": 3,
		p + "bytes_sent": 3 * float64(len(payload)), p + "bytes_received": 3 * float64(len(payload)),
		p + "active": 0, p + "ends{completed}": 1, "client.call.attempts": 1,
	} {
		if got := mm.total(key); got != want {
			t.Errorf("%s = %v, want %v", key, got, want)
		}
	}
	for _, key := range []string{"client.call.duration", p + "time_to_first_event", p + "duration"} {
		if mm.count(key) != 1 {
			t.Errorf("%s recorded %d times, want 1", key, mm.count(key))
		}
	}
}

// TestObservabilityFailuresAndRetries: a retried open shows as a retry
// event and counter; an HTTP error ends the span with end_reason
// http_error, the error's code and an error status.
func TestObservabilityFailuresAndRetries(t *testing.T) {
	var attempts atomic.Int32
	srv := newServer(t, biditest.HandlerFunc(func(st *biditest.Stream) {
		if attempts.Add(1) == 1 {
			st.Fail(503, "ServiceUnavailableError", map[string]any{"Message": "busy"})
			return
		}
		st.Fail(424, "ModelError", map[string]any{"Message": "container refused", "OriginalStatusCode": 500})
	}))
	tr, mm := &memTracer{}, newMemMeter()
	c := srv.Client(fastRetry, func(o *bidi.Options) { o.TracerProvider, o.MeterProvider = tr, mm })
	ctx := testCtx(t)
	sess, err := c.Open(ctx, &bidi.OpenInput{EndpointName: "ep", AwaitResponse: true})
	var me *bidi.ModelError
	if !errors.As(err, &me) {
		t.Fatalf("Open = %v, %v", sess, err)
	}
	spans := tr.all()
	if len(spans) != 1 {
		t.Fatalf("%d spans", len(spans))
	}
	var props map[any]any
	var events []string
	var status tracing.SpanStatus
	for range 2000 {
		var ended bool
		if props, events, status, ended = spans[0].snapshot(); ended {
			break
		}
		waitBriefly()
	}
	if strings.Join(events, ",") != "retry" || props["end_reason"] != "http_error" || props["error.type"] != "ModelError" || status != tracing.SpanStatusError {
		t.Errorf("events %v, attributes %v, status %v", events, props, status)
	}
	p := "sagemaker_bidi.stream."
	if mm.total(p+"retries") != 1 || mm.total("client.call.attempts") != 2 || mm.total("client.call.errors") != 1 || mm.total(p+"ends{http_error}") != 1 || mm.total(p+"active") != 0 {
		t.Errorf("metrics %v", mm.totals)
	}
}

// waitBriefly yields for a moment, in polling loops that wait for a state
// nothing signals.
func waitBriefly() { time.Sleep(time.Millisecond) }

// TestObservabilitySpanEndsWhenRetryCannotStart: a session whose retry
// is never made (its context ends while it waits to retry) still ends its
// span, with an end reason, and leaves no stream counted active. (Which
// reason depends on whether the context's end or the wait's is recorded
// first; both are right.)
func TestObservabilitySpanEndsWhenRetryCannotStart(t *testing.T) {
	srv := newServer(t, biditest.HandlerFunc(func(st *biditest.Stream) {
		st.Fail(503, "ServiceUnavailableError", map[string]any{"Message": "busy"})
	}))
	tr, mm := &memTracer{}, newMemMeter()
	c := srv.Client(func(o *bidi.Options) {
		o.TracerProvider, o.MeterProvider = tr, mm
		o.RetryMaxAttempts = 3
		o.RetryMaxBackoff = time.Hour // the wait the context's end cuts
	})
	ctx, cancel := context.WithCancel(testCtx(t))
	defer cancel()
	go func() {
		// Once the retry is decided (its metric recorded), the session
		// waits to make it: end the session's context then.
		for mm.total("sagemaker_bidi.stream.retries") < 1 && ctx.Err() == nil {
			waitBriefly()
		}
		cancel()
	}()
	if sess, err := c.Open(ctx, &bidi.OpenInput{EndpointName: "ep", AwaitResponse: true}); err == nil {
		sess.Close()
		t.Fatal("Open succeeded")
	}
	spans := tr.all()
	if len(spans) != 1 {
		t.Fatalf("%d spans", len(spans))
	}
	ended := false
	var props map[any]any
	for range 2000 {
		if props, _, _, ended = spans[0].snapshot(); ended {
			break
		}
		waitBriefly()
	}
	if !ended || props["end_reason"] == nil {
		t.Errorf("span ended %v, attributes %v", ended, props)
	}
	if got := mm.total("sagemaker_bidi.stream.active"); got != 0 {
		t.Errorf("%v streams still active", got)
	}
}
