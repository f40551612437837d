package instrument

import (
	"context"
	"errors"
	"testing"

	"github.com/aws/smithy-go/metrics"
	"github.com/aws/smithy-go/tracing"
)

// recordingMeter creates counters that count into adds, and fails every
// instrument when fail is set (or returns nil ones when nilInst is).
type recordingMeter struct {
	metrics.Meter // the no-op meter, for the methods not overridden
	fail, nilInst bool
	opts          map[string]metrics.InstrumentOptions
	adds          map[string]int64
}

type recordingProvider struct{ m *recordingMeter }

func (p recordingProvider) Meter(string, ...metrics.MeterOption) metrics.Meter { return p.m }

type counter struct {
	metrics.Int64Counter
	name string
	m    *recordingMeter
}

func (c counter) Add(_ context.Context, n int64, _ ...metrics.RecordMetricOption) {
	c.m.adds[c.name] += n
}

func newRecordingMeter() *recordingMeter {
	return &recordingMeter{
		Meter: metrics.NopMeterProvider{}.Meter(""),
		opts:  map[string]metrics.InstrumentOptions{},
		adds:  map[string]int64{},
	}
}

func (m *recordingMeter) create(name string, opts []metrics.InstrumentOption) error {
	if m.fail {
		return errors.New("refused")
	}
	var o metrics.InstrumentOptions
	for _, fn := range opts {
		fn(&o)
	}
	m.opts[name] = o
	return nil
}

func (m *recordingMeter) Int64Counter(name string, opts ...metrics.InstrumentOption) (metrics.Int64Counter, error) {
	if err := m.create(name, opts); err != nil || m.nilInst {
		return nil, err
	}
	nop, _ := m.Meter.Int64Counter(name)
	return counter{nop, name, m}, nil
}

func TestOpenNeitherProvider(t *testing.T) {
	tr, _, ok := Open(nil, nil, "scope")
	if ok || tr != nil {
		t.Fatalf("Open(nil, nil) = %v, %v; want nil, false", tr, ok)
	}
}

func TestOpenOneProvider(t *testing.T) {
	tr, m, ok := Open(nil, metrics.NopMeterProvider{}, "scope")
	if !ok || tr == nil {
		t.Fatalf("Open(nil, meter) = %v, %v; want a no-op tracer", tr, ok)
	}
	_, span := tr.StartSpan(context.Background(), "s")
	span.End()
	m.Int64Counter("c", "1", "d").Add(context.Background(), 1)

	tr, m, ok = Open(tracing.NopTracerProvider{}, nil, "scope")
	if !ok || tr == nil {
		t.Fatalf("Open(tracer, nil) = %v, %v", tr, ok)
	}
	m.Float64Histogram("h", "s", "d").Record(context.Background(), 1)
	m.Int64UpDownCounter("u", "1", "d").Add(context.Background(), -1)
}

func TestMeterUsesProvider(t *testing.T) {
	rm := newRecordingMeter()
	_, m, ok := Open(nil, recordingProvider{rm}, "scope")
	if !ok {
		t.Fatal("Open: not ok")
	}
	m.Int64Counter("calls", "{call}", "Calls made").Add(context.Background(), 3)
	if got := rm.adds["calls"]; got != 3 {
		t.Errorf("recorded %d, want 3", got)
	}
	if o := rm.opts["calls"]; o.UnitLabel != "{call}" || o.Description != "Calls made" {
		t.Errorf("options = %+v, want unit {call} and the description", o)
	}
}

func TestMeterFallsBackToNop(t *testing.T) {
	for _, tc := range []struct {
		name string
		set  func(*recordingMeter)
	}{
		{"error", func(m *recordingMeter) { m.fail = true }},
		{"nil instrument", func(m *recordingMeter) { m.nilInst = true }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rm := newRecordingMeter()
			tc.set(rm)
			_, m, _ := Open(nil, recordingProvider{rm}, "scope")
			c := m.Int64Counter("calls", "{call}", "Calls made")
			if c == nil {
				t.Fatal("Int64Counter returned nil")
			}
			c.Add(context.Background(), 1) // must not panic
			if len(rm.adds) != 0 {
				t.Errorf("the failed provider recorded %v", rm.adds)
			}
		})
	}
}
