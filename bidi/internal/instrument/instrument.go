// Package instrument opens what a component of this module records
// through: a tracer and a meter from optional smithy-go providers, and
// instruments that are never nil.
//
// Both the client (package bidi) and the relay record only when their
// user set a provider; with one set, the other is a no-op. A provider
// that fails to create an instrument (or returns a nil one) gets a no-op
// in its place, so recording code never checks for nil or an error.
package instrument

import (
	"github.com/aws/smithy-go/metrics"
	"github.com/aws/smithy-go/tracing"
)

// Open returns the tracer and meter of scope from tp and mp, with a
// no-op provider in place of a nil one. ok is false, and the others
// zero, when both are nil: the component records nothing.
func Open(tp tracing.TracerProvider, mp metrics.MeterProvider, scope string) (t tracing.Tracer, m Meter, ok bool) {
	if tp == nil && mp == nil {
		return nil, Meter{}, false
	}
	if tp == nil {
		tp = tracing.NopTracerProvider{}
	}
	if mp == nil {
		mp = metrics.NopMeterProvider{}
	}
	return tp.Tracer(scope), Meter{mp.Meter(scope)}, true
}

// Meter creates instruments with a unit and a description, each a no-op
// when the underlying meter fails to create it. The zero Meter is not
// usable; get one from Open.
type Meter struct{ m metrics.Meter }

var nop = metrics.NopMeterProvider{}.Meter("")

// unit sets an instrument's unit label and description.
func unit(u, desc string) metrics.InstrumentOption {
	return func(o *metrics.InstrumentOptions) { o.UnitLabel, o.Description = u, desc }
}

// Int64Counter returns the counter name, in unit u.
func (m Meter) Int64Counter(name, u, desc string) metrics.Int64Counter {
	return orNop(m.m.Int64Counter, nop.Int64Counter, name, u, desc)
}

// Int64UpDownCounter returns the up-down counter name, in unit u.
func (m Meter) Int64UpDownCounter(name, u, desc string) metrics.Int64UpDownCounter {
	return orNop(m.m.Int64UpDownCounter, nop.Int64UpDownCounter, name, u, desc)
}

// Float64Histogram returns the histogram name, in unit u.
func (m Meter) Float64Histogram(name, u, desc string) metrics.Float64Histogram {
	return orNop(m.m.Float64Histogram, nop.Float64Histogram, name, u, desc)
}

// orNop returns the instrument create makes, or fallback's when create
// fails or makes a nil one.
func orNop[I any](create, fallback func(string, ...metrics.InstrumentOption) (I, error), name, u, desc string) I {
	if i, err := create(name, unit(u, desc)); err == nil && any(i) != nil {
		return i
	}
	i, _ := fallback(name)
	return i
}
