package otelbridge

import (
	"context"

	"github.com/aws/smithy-go/metrics"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/metric/noop"
)

// Meter returns a smithy-go metrics.MeterProvider whose instruments are
// mp's instruments of the same kind, with the same name, unit and
// description; the properties of each measurement become its attributes.
//
// An instrument OpenTelemetry refuses (an invalid name) is returned with
// the error, as OpenTelemetry does, and backed by a no-op one if
// OpenTelemetry returned none: callers that ignore the error, as bidi
// does, still get a usable instrument.
func Meter(mp metric.MeterProvider) metrics.MeterProvider {
	return meterProvider{mp}
}

type meterProvider struct{ mp metric.MeterProvider }

func (p meterProvider) Meter(scope string, opts ...metrics.MeterOption) metrics.Meter {
	var o metrics.MeterOptions
	for _, fn := range opts {
		fn(&o)
	}
	var mopts []metric.MeterOption
	if kvs := attrs(&o.Properties); kvs != nil {
		mopts = append(mopts, metric.WithInstrumentationAttributes(kvs...))
	}
	return meter{p.mp.Meter(scope, mopts...)}
}

type meter struct{ m metric.Meter }

// nop backs the instruments OpenTelemetry did not return.
var nop = noop.Meter{}

// describe returns the unit and description options of opts.
func describe(opts []metrics.InstrumentOption) (unit, desc metric.InstrumentOption) {
	var o metrics.InstrumentOptions
	for _, fn := range opts {
		fn(&o)
	}
	return metric.WithUnit(o.UnitLabel), metric.WithDescription(o.Description)
}

// measurement returns the attributes of a measurement's properties.
func measurement(opts []metrics.RecordMetricOption) metric.MeasurementOption {
	var o metrics.RecordMetricOptions
	for _, fn := range opts {
		fn(&o)
	}
	return metric.WithAttributes(attrs(&o.Properties)...)
}

// Synchronous instruments.

func (m meter) Int64Counter(name string, opts ...metrics.InstrumentOption) (metrics.Int64Counter, error) {
	u, d := describe(opts)
	c, err := m.m.Int64Counter(name, u, d)
	if c == nil {
		c, _ = nop.Int64Counter(name)
	}
	return int64Adder{c}, err
}

func (m meter) Int64UpDownCounter(name string, opts ...metrics.InstrumentOption) (metrics.Int64UpDownCounter, error) {
	u, d := describe(opts)
	c, err := m.m.Int64UpDownCounter(name, u, d)
	if c == nil {
		c, _ = nop.Int64UpDownCounter(name)
	}
	return int64Adder{c}, err
}

func (m meter) Int64Gauge(name string, opts ...metrics.InstrumentOption) (metrics.Int64Gauge, error) {
	u, d := describe(opts)
	g, err := m.m.Int64Gauge(name, u, d)
	if g == nil {
		g, _ = nop.Int64Gauge(name)
	}
	return int64Gauge{g}, err
}

func (m meter) Int64Histogram(name string, opts ...metrics.InstrumentOption) (metrics.Int64Histogram, error) {
	u, d := describe(opts)
	h, err := m.m.Int64Histogram(name, u, d)
	if h == nil {
		h, _ = nop.Int64Histogram(name)
	}
	return int64Recorder{h}, err
}

func (m meter) Float64Counter(name string, opts ...metrics.InstrumentOption) (metrics.Float64Counter, error) {
	u, d := describe(opts)
	c, err := m.m.Float64Counter(name, u, d)
	if c == nil {
		c, _ = nop.Float64Counter(name)
	}
	return float64Adder{c}, err
}

func (m meter) Float64UpDownCounter(name string, opts ...metrics.InstrumentOption) (metrics.Float64UpDownCounter, error) {
	u, d := describe(opts)
	c, err := m.m.Float64UpDownCounter(name, u, d)
	if c == nil {
		c, _ = nop.Float64UpDownCounter(name)
	}
	return float64Adder{c}, err
}

func (m meter) Float64Gauge(name string, opts ...metrics.InstrumentOption) (metrics.Float64Gauge, error) {
	u, d := describe(opts)
	g, err := m.m.Float64Gauge(name, u, d)
	if g == nil {
		g, _ = nop.Float64Gauge(name)
	}
	return float64Gauge{g}, err
}

func (m meter) Float64Histogram(name string, opts ...metrics.InstrumentOption) (metrics.Float64Histogram, error) {
	u, d := describe(opts)
	h, err := m.m.Float64Histogram(name, u, d)
	if h == nil {
		h, _ = nop.Float64Histogram(name)
	}
	return float64Recorder{h}, err
}

type int64Adder struct {
	c interface {
		Add(context.Context, int64, ...metric.AddOption)
	}
}

func (a int64Adder) Add(ctx context.Context, v int64, opts ...metrics.RecordMetricOption) {
	a.c.Add(ctx, v, measurement(opts))
}

type float64Adder struct {
	c interface {
		Add(context.Context, float64, ...metric.AddOption)
	}
}

func (a float64Adder) Add(ctx context.Context, v float64, opts ...metrics.RecordMetricOption) {
	a.c.Add(ctx, v, measurement(opts))
}

type int64Recorder struct{ h metric.Int64Histogram }

func (r int64Recorder) Record(ctx context.Context, v int64, opts ...metrics.RecordMetricOption) {
	r.h.Record(ctx, v, measurement(opts))
}

type float64Recorder struct{ h metric.Float64Histogram }

func (r float64Recorder) Record(ctx context.Context, v float64, opts ...metrics.RecordMetricOption) {
	r.h.Record(ctx, v, measurement(opts))
}

// A smithy-go gauge samples; an OpenTelemetry one records.
type int64Gauge struct{ g metric.Int64Gauge }

func (g int64Gauge) Sample(ctx context.Context, v int64, opts ...metrics.RecordMetricOption) {
	g.g.Record(ctx, v, measurement(opts))
}

type float64Gauge struct{ g metric.Float64Gauge }

func (g float64Gauge) Sample(ctx context.Context, v float64, opts ...metrics.RecordMetricOption) {
	g.g.Record(ctx, v, measurement(opts))
}

// Asynchronous instruments: the smithy-go callback is registered with
// the OpenTelemetry meter for the instrument, and Stop unregisters it.

func (m meter) Int64AsyncCounter(name string, cb metrics.Int64Callback, opts ...metrics.InstrumentOption) (metrics.AsyncInstrument, error) {
	u, d := describe(opts)
	inst, err := m.m.Int64ObservableCounter(name, u, d)
	return m.registerInt64(inst, err, cb)
}

func (m meter) Int64AsyncUpDownCounter(name string, cb metrics.Int64Callback, opts ...metrics.InstrumentOption) (metrics.AsyncInstrument, error) {
	u, d := describe(opts)
	inst, err := m.m.Int64ObservableUpDownCounter(name, u, d)
	return m.registerInt64(inst, err, cb)
}

func (m meter) Int64AsyncGauge(name string, cb metrics.Int64Callback, opts ...metrics.InstrumentOption) (metrics.AsyncInstrument, error) {
	u, d := describe(opts)
	inst, err := m.m.Int64ObservableGauge(name, u, d)
	return m.registerInt64(inst, err, cb)
}

func (m meter) Float64AsyncCounter(name string, cb metrics.Float64Callback, opts ...metrics.InstrumentOption) (metrics.AsyncInstrument, error) {
	u, d := describe(opts)
	inst, err := m.m.Float64ObservableCounter(name, u, d)
	return m.registerFloat64(inst, err, cb)
}

func (m meter) Float64AsyncUpDownCounter(name string, cb metrics.Float64Callback, opts ...metrics.InstrumentOption) (metrics.AsyncInstrument, error) {
	u, d := describe(opts)
	inst, err := m.m.Float64ObservableUpDownCounter(name, u, d)
	return m.registerFloat64(inst, err, cb)
}

func (m meter) Float64AsyncGauge(name string, cb metrics.Float64Callback, opts ...metrics.InstrumentOption) (metrics.AsyncInstrument, error) {
	u, d := describe(opts)
	inst, err := m.m.Float64ObservableGauge(name, u, d)
	return m.registerFloat64(inst, err, cb)
}

// registerInt64 registers cb as the callback of inst (created with err).
func (m meter) registerInt64(inst metric.Int64Observable, err error, cb metrics.Int64Callback) (metrics.AsyncInstrument, error) {
	if inst == nil || cb == nil {
		return stopped{}, err
	}
	reg, rerr := m.m.RegisterCallback(func(ctx context.Context, o metric.Observer) error {
		cb(ctx, int64Observer{o, inst})
		return nil
	}, inst)
	if rerr != nil {
		return stopped{}, rerr
	}
	return registration{reg}, err
}

// registerFloat64 registers cb as the callback of inst (created with err).
func (m meter) registerFloat64(inst metric.Float64Observable, err error, cb metrics.Float64Callback) (metrics.AsyncInstrument, error) {
	if inst == nil || cb == nil {
		return stopped{}, err
	}
	reg, rerr := m.m.RegisterCallback(func(ctx context.Context, o metric.Observer) error {
		cb(ctx, float64Observer{o, inst})
		return nil
	}, inst)
	if rerr != nil {
		return stopped{}, rerr
	}
	return registration{reg}, err
}

type int64Observer struct {
	o    metric.Observer
	inst metric.Int64Observable
}

func (o int64Observer) Observe(_ context.Context, v int64, opts ...metrics.RecordMetricOption) {
	o.o.ObserveInt64(o.inst, v, measurement(opts))
}

type float64Observer struct {
	o    metric.Observer
	inst metric.Float64Observable
}

func (o float64Observer) Observe(_ context.Context, v float64, opts ...metrics.RecordMetricOption) {
	o.o.ObserveFloat64(o.inst, v, measurement(opts))
}

// registration stops an asynchronous instrument by unregistering its
// callback.
type registration struct{ reg metric.Registration }

func (r registration) Stop() { _ = r.reg.Unregister() }

// stopped is an asynchronous instrument without a callback.
type stopped struct{}

func (stopped) Stop() {}
