package relay

import (
	"context"
	"time"

	"github.com/aws/smithy-go/metrics"
	"github.com/aws/smithy-go/tracing"
	"github.com/coder/websocket"

	"github.com/sagemaker-bidi/sagemaker-bidi/bidi/internal/instrument"
)

// Observability: the span of a relayed call and the relay's metrics,
// recorded through Options.TracerProvider and Options.MeterProvider (by
// default the client's). Attributes never hold a payload, a credential,
// a header or a close reason (which may carry a model's message).
const (
	// ObservabilityScope is the instrumentation scope of the tracer and
	// the meter.
	ObservabilityScope = "github.com/sagemaker-bidi/sagemaker-bidi/bidi/relay"

	// SpanName is the span of one relayed call, from the request to the
	// connection's end. The model session's own span
	// ("SageMaker Runtime HTTP2.InvokeEndpointWithBidirectionalStream",
	// see bidi.Options.TracerProvider) is its child.
	SpanName = "sagemaker_bidi.relay.Call"

	// MetricPrefix prefixes the relay's metrics.
	MetricPrefix = "sagemaker_bidi.relay."

	MetricMessages = MetricPrefix + "messages"         // messages relayed, by direction
	MetricBytes    = MetricPrefix + "bytes"            // payload bytes relayed, by direction
	MetricDrops    = MetricPrefix + "dropped_messages" // messages dropped (OverflowDropOldest, ErrSkip is not counted), by direction
	MetricCloses   = MetricPrefix + "closes"           // calls ended, by close_code and close_kind
	MetricRefused  = MetricPrefix + "refused"          // requests refused before any upgrade, by http.status_code
	MetricActive   = MetricPrefix + "active"           // calls in progress

	AttrDirection  = "direction"        // DirectionToModel or DirectionToClient
	AttrCloseCode  = "close_code"       // the WebSocket close code sent (or received, for KindClientClose)
	AttrCloseKind  = "close_kind"       // one of the Kind constants
	AttrStatusCode = "http.status_code" // on MetricRefused

	DirectionToModel  = "to_model"
	DirectionToClient = "to_client"
)

// Close kinds: why a call ended, the close_kind attribute of its span
// and of MetricCloses.
const (
	KindModelEnd      = "model_end"       // the model side ended (cleanly or not); see CloseFor
	KindOpenRefused   = "open_refused"    // the model side could not be opened
	KindEndOfInput    = "end_of_input"    // the client's EndOfInput message, then the model's end
	KindClientClose   = "client_close"    // the client sent a close frame
	KindClientGone    = "client_gone"     // the client's connection failed without a close frame
	KindInvalidUTF8   = "invalid_utf8"    // a text message that is not UTF-8 (1007)
	KindTooBig        = "message_too_big" // a client message over MaxMessageSize (1009)
	KindOverflow      = "overflow"        // a queue overflowed under OverflowClose or OverflowTryAgainLater
	KindPingTimeout   = "ping_timeout"    // the client did not answer a ping in time
	KindPingFlood     = "ping_flood"      // the client sent pings faster than MaxPingsPerSecond (1008)
	KindIdle          = "idle"            // IdleTimeout (1001)
	KindLifetime      = "lifetime"        // MaxLifetime (1001)
	KindShutdown      = "shutdown"        // Handler.Shutdown or Close (1001)
	KindHook          = "hook"            // a Hook's error
	KindProtocol      = "protocol"        // a data message after EndOfInput (1008)
	KindFinishTimeout = "finish_timeout"  // a graceful end took longer than FinishTimeout
)

type observer struct {
	tracer   tracing.Tracer
	messages metrics.Int64Counter
	bytes    metrics.Int64Counter
	drops    metrics.Int64Counter
	closes   metrics.Int64Counter
	refused  metrics.Int64Counter
	active   metrics.Int64UpDownCounter

	toModel, toClient []metrics.RecordMetricOption
}

// newObserver returns nil when neither provider is set.
func newObserver(tp tracing.TracerProvider, mp metrics.MeterProvider) *observer {
	tracer, m, ok := instrument.Open(tp, mp, ObservabilityScope)
	if !ok {
		return nil
	}
	o := &observer{
		tracer:   tracer,
		messages: m.Int64Counter(MetricMessages, "{message}", "Messages relayed"),
		bytes:    m.Int64Counter(MetricBytes, "By", "Payload bytes relayed"),
		drops:    m.Int64Counter(MetricDrops, "{message}", "Messages dropped by the overflow policy"),
		closes:   m.Int64Counter(MetricCloses, "{call}", "Calls ended, by close code and kind"),
		refused:  m.Int64Counter(MetricRefused, "{request}", "Requests refused before the upgrade"),
		active:   m.Int64UpDownCounter(MetricActive, "{call}", "Calls in progress"),
	}
	dir := func(d string) []metrics.RecordMetricOption {
		return []metrics.RecordMetricOption{func(ro *metrics.RecordMetricOptions) { ro.Properties.Set(AttrDirection, d) }}
	}
	o.toModel, o.toClient = dir(DirectionToModel), dir(DirectionToClient)
	return o
}

// refuse counts a request refused before the upgrade.
func (o *observer) refuse(status int) {
	if o == nil {
		return
	}
	o.refused.Add(context.Background(), 1, func(ro *metrics.RecordMetricOptions) { ro.Properties.Set(AttrStatusCode, status) })
}

// callObs is one call's span and counters; a nil *callObs records
// nothing. Its methods are safe for concurrent use (the span and the
// instruments are).
type callObs struct {
	o     *observer
	span  tracing.Span
	ctx   context.Context
	start time.Time
}

func (o *observer) startCall(ctx context.Context, endpoint string) (context.Context, *callObs) {
	if o == nil {
		return ctx, nil
	}
	sctx, span := o.tracer.StartSpan(ctx, SpanName, func(so *tracing.SpanOptions) {
		so.Kind = tracing.SpanKindServer
		so.Properties.Set("aws.sagemaker.endpoint_name", endpoint)
	})
	co := &callObs{o: o, span: span, ctx: context.WithoutCancel(sctx), start: time.Now()}
	o.active.Add(co.ctx, 1)
	return sctx, co
}

// message counts one message of n bytes relayed in a direction.
func (co *callObs) message(toModel bool, n int) {
	if co == nil {
		return
	}
	opts := co.o.toClient
	if toModel {
		opts = co.o.toModel
	}
	co.o.messages.Add(co.ctx, 1, opts...)
	co.o.bytes.Add(co.ctx, int64(n), opts...)
}

// dropped counts n messages dropped in a direction.
func (co *callObs) dropped(toModel bool, n int) {
	if co == nil || n == 0 {
		return
	}
	opts := co.o.toClient
	if toModel {
		opts = co.o.toModel
	}
	co.o.drops.Add(co.ctx, int64(n), opts...)
}

// end ends the span with the call's close code and kind.
func (co *callObs) end(code websocket.StatusCode, kind string) {
	if co == nil {
		return
	}
	co.span.SetProperty(AttrCloseCode, int(code))
	co.span.SetProperty(AttrCloseKind, kind)
	if code == websocket.StatusNormalClosure || kind == KindClientClose || kind == KindEndOfInput {
		co.span.SetStatus(tracing.SpanStatusOK)
	} else {
		co.span.SetStatus(tracing.SpanStatusError)
	}
	co.o.active.Add(co.ctx, -1)
	co.o.closes.Add(co.ctx, 1, func(ro *metrics.RecordMetricOptions) {
		ro.Properties.Set(AttrCloseCode, int(code))
		ro.Properties.Set(AttrCloseKind, kind)
	})
	co.span.End()
}
