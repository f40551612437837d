package relay

import (
	"context"
	"io"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/aws/smithy-go/metrics"
	"github.com/aws/smithy-go/tracing"
	"github.com/coder/websocket"

	"github.com/sagemaker-bidi/sagemaker-bidi/bidi/biditest"
)

// recorder is a TracerProvider and MeterProvider that keeps what the
// relay records.
type recorder struct {
	metrics.NopMeter
	mu     sync.Mutex
	spans  []*span
	counts map[string]int64 // metric name + "|" + sorted attributes
	ended  chan *span
}

type span struct {
	name  string
	props map[any]any
	ended bool
	r     *recorder
}

func (s *span) Name() string                            { return s.name }
func (s *span) Context() tracing.SpanContext            { return tracing.SpanContext{} }
func (s *span) AddEvent(string, ...tracing.EventOption) {}
func (s *span) SetStatus(tracing.SpanStatus)            {}
func (s *span) SetProperty(k, v any) {
	s.r.mu.Lock()
	s.props[k] = v
	s.r.mu.Unlock()
}
func (s *span) End() {
	s.r.mu.Lock()
	s.ended = true
	s.r.mu.Unlock()
	if s.name == SpanName {
		s.r.ended <- s
	}
}

func (r *recorder) Tracer(string, ...tracing.TracerOption) tracing.Tracer { return r }
func (r *recorder) StartSpan(ctx context.Context, name string, opts ...tracing.SpanOption) (context.Context, tracing.Span) {
	var so tracing.SpanOptions
	for _, o := range opts {
		o(&so)
	}
	s := &span{name: name, props: map[any]any{}, r: r}
	r.mu.Lock()
	r.spans = append(r.spans, s)
	r.mu.Unlock()
	return tracing.WithSpan(ctx, s), s
}
func (r *recorder) Meter(string, ...metrics.MeterOption) metrics.Meter { return r }
func (r *recorder) Int64Counter(name string, _ ...metrics.InstrumentOption) (metrics.Int64Counter, error) {
	return counter{r, name}, nil
}
func (r *recorder) Int64UpDownCounter(name string, _ ...metrics.InstrumentOption) (metrics.Int64UpDownCounter, error) {
	return counter{r, name}, nil
}

type counter struct {
	r    *recorder
	name string
}

func (c counter) Add(_ context.Context, n int64, opts ...metrics.RecordMetricOption) {
	var ro metrics.RecordMetricOptions
	for _, o := range opts {
		o(&ro)
	}
	key := c.name
	for _, k := range []string{AttrDirection, AttrCloseCode, AttrCloseKind, AttrStatusCode} {
		if v := ro.Properties.Get(k); v != nil {
			key += "|" + k + "=" + toString(v)
		}
	}
	c.r.mu.Lock()
	c.r.counts[key] += n
	c.r.mu.Unlock()
}

func toString(v any) string {
	switch v := v.(type) {
	case string:
		return v
	case int:
		return strconv.Itoa(v)
	}
	return "?"
}

// A call is one span with its close code and kind, and the counters add
// up; no payload appears in the span.
func TestObservability(t *testing.T) {
	rec := &recorder{counts: map[string]int64{}, ended: make(chan *span, 4)}
	e := newEnv(t, nil, &Options{EndOfInput: endOfInput, FinishQuiet: 10 * time.Millisecond, TracerProvider: rec, MeterProvider: rec}, nil)
	c := e.dial(t)
	c.Write(t.Context(), websocket.MessageText, []byte("secret payload"))
	c.Write(t.Context(), websocket.MessageBinary, []byte{1, 2, 3})
	c.Write(t.Context(), websocket.MessageText, []byte("end"))
	if _, err := readUntilClose(t, c); websocket.CloseStatus(err) != websocket.StatusNormalClosure {
		t.Fatal(err)
	}
	sp := <-rec.ended
	rec.mu.Lock()
	defer rec.mu.Unlock()
	if sp.props[AttrCloseCode] != 1000 || sp.props[AttrCloseKind] != KindEndOfInput {
		t.Fatalf("span properties %v", sp.props)
	}
	for k, v := range sp.props {
		if s, ok := v.(string); ok && s == "secret payload" || k == "secret payload" {
			t.Fatal("payload in the span")
		}
	}
	want := map[string]int64{
		MetricMessages + "|direction=to_model":                         2,
		MetricBytes + "|direction=to_model":                            17,
		MetricMessages + "|direction=to_client":                        2,
		MetricBytes + "|direction=to_client":                           17,
		MetricCloses + "|close_code=1000|close_kind=" + KindEndOfInput: 1,
		MetricActive: 0,
	}
	for k, v := range want {
		if rec.counts[k] != v {
			t.Errorf("%s = %d, want %d (all: %v)", k, rec.counts[k], v, rec.counts)
		}
	}
}

// The client's close ends a plain session gracefully: the model sees the
// end of its input (io.EOF), not a reset.
func TestClientCloseEndsPlainSessionCleanly(t *testing.T) {
	modelEnd := make(chan error, 1)
	model := biditest.HandlerFunc(func(st *biditest.Stream) {
		st.Accept()
		for {
			m, err := st.Recv()
			if err != nil {
				modelEnd <- err
				return
			}
			st.Send(m)
		}
	})
	e := newEnv(t, model, &Options{FinishQuiet: 10 * time.Millisecond}, nil, plainSessions)
	c := e.dial(t)
	c.Write(t.Context(), websocket.MessageText, []byte("hello"))
	if _, b, err := c.Read(t.Context()); err != nil || string(b) != "hello" {
		t.Fatalf("echo %q %v", b, err)
	}
	c.Close(websocket.StatusNormalClosure, "bye")
	if err := <-modelEnd; err != io.EOF {
		t.Fatalf("the model's input ended with %v, want io.EOF", err)
	}
}
