package bidi

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/aws/smithy-go/metrics"
	"github.com/aws/smithy-go/tracing"

	"github.com/sagemaker-bidi/sagemaker-bidi/bidi/internal/instrument"
)

// Observability: names of the span, its events and attributes, and of the
// metrics a client records when Options.TracerProvider or
// Options.MeterProvider is set (documented there). The operation-level
// metrics use aws-sdk-go-v2's client.call.* names; the stream-level ones
// are under streamMetricPrefix. No attribute ever holds a payload, a
// credential or a signature.
const (
	// observabilityScope is the instrumentation scope of the tracer and
	// the meter.
	observabilityScope = "github.com/sagemaker-bidi/sagemaker-bidi/bidi"

	// spanName is the name of the span that covers a whole session, from
	// Open to the stream's end.
	spanName = serviceID + ".InvokeEndpointWithBidirectionalStream"

	// streamMetricPrefix prefixes the stream-level metrics.
	streamMetricPrefix = "sagemaker_bidi.stream."

	// Span events.
	eventResponse   = "response"    // the response head arrived (attribute http.status_code)
	eventFirstEvent = "first_event" // the first PayloadPart arrived
	eventRetry      = "retry"       // the open is tried again (attributes attempt, error.type)

	// Attributes.
	attrService      = "rpc.service" // serviceID
	attrMethod       = "rpc.method"  // "InvokeEndpointWithBidirectionalStream"
	attrEndpoint     = "aws.sagemaker.endpoint_name"
	attrStatusCode   = "http.status_code" // the response status
	attrAttempt      = "attempt"          // the attempt that failed (1 = first)
	attrErrorType    = "error.type"       // the error code of an API error, else the Go type
	attrEndReason    = "end_reason"       // see the end reasons below
	attrOperationErr = "exception.type"   // on client.call.errors
	attrCloseCode    = "close_code"       // a ModelStreamError's WebSocket close code
)

// End reasons of a session, the end_reason attribute of its span and of
// the streamMetricPrefix+"ends" counter.
const (
	endCompleted    = "completed"     // the service ended the stream cleanly (or with close code 1000)
	endClosed       = "closed"        // Close was called before the end
	endContext      = "context"       // the context given to Open ended
	endHTTPError    = "http_error"    // the service answered with an HTTP error
	endStreamError  = "stream_error"  // a mid-stream exception (ModelStreamError, InternalStreamFailure, ...)
	endConnection   = "connection"    // the connection failed (dead peer, reset, refused)
	endSendAborted  = "send_aborted"  // a Send was interrupted halfway (ErrSendInterrupted)
	endClientFailed = "client_failed" // credentials, signing or encoding failed
)

// observer holds a client's tracer and instruments; nil when neither
// provider is set, so that an unobserved client pays one nil check per
// call site.
type observer struct {
	tracer tracing.Tracer

	callDuration  metrics.Float64Histogram
	callAttempts  metrics.Int64Counter
	callErrors    metrics.Int64Counter
	firstEvent    metrics.Float64Histogram
	eventsSent    metrics.Int64Counter
	eventsRecv    metrics.Int64Counter
	bytesSent     metrics.Int64Counter
	bytesRecv     metrics.Int64Counter
	duration      metrics.Float64Histogram
	active        metrics.Int64UpDownCounter
	retries       metrics.Int64Counter
	ends          metrics.Int64Counter
	baseRecordOpt []metrics.RecordMetricOption
}

func newObserver(tp tracing.TracerProvider, mp metrics.MeterProvider) *observer {
	tracer, m, ok := instrument.Open(tp, mp, observabilityScope)
	if !ok {
		return nil
	}
	o := &observer{tracer: tracer}
	o.callDuration = m.Float64Histogram("client.call.duration", "s", "Time from Open to the response head (or the open's failure), retries included")
	o.callAttempts = m.Int64Counter("client.call.attempts", "{attempt}", "Attempts to open a stream")
	o.callErrors = m.Int64Counter("client.call.errors", "{error}", "Opens that failed")
	o.firstEvent = m.Float64Histogram(streamMetricPrefix+"time_to_first_event", "s", "Time from Open to the first PayloadPart received")
	o.eventsSent = m.Int64Counter(streamMetricPrefix+"events_sent", "{event}", "PayloadParts sent")
	o.eventsRecv = m.Int64Counter(streamMetricPrefix+"events_received", "{event}", "PayloadParts received")
	o.bytesSent = m.Int64Counter(streamMetricPrefix+"bytes_sent", "By", "Payload bytes sent")
	o.bytesRecv = m.Int64Counter(streamMetricPrefix+"bytes_received", "By", "Payload bytes received")
	o.duration = m.Float64Histogram(streamMetricPrefix+"duration", "s", "Session duration, Open to end")
	o.active = m.Int64UpDownCounter(streamMetricPrefix+"active", "{session}", "Open sessions")
	o.retries = m.Int64Counter(streamMetricPrefix+"retries", "{retry}", "Retried opens")
	o.ends = m.Int64Counter(streamMetricPrefix+"ends", "{session}", "Ended sessions, by end_reason")
	o.baseRecordOpt = []metrics.RecordMetricOption{func(ro *metrics.RecordMetricOptions) {
		ro.Properties.Set(attrService, serviceID)
		ro.Properties.Set(attrMethod, "InvokeEndpointWithBidirectionalStream")
	}}
	return o
}

// sessionObs is one session's span and measurements. Its methods are
// called from the session's goroutines as noted; a nil *sessionObs does
// nothing.
type sessionObs struct {
	o     *observer
	span  tracing.Span
	ctx   context.Context // the span's context, for recording
	start time.Time

	answered bool // set by the run goroutine before end can run (see end)
	gotFirst bool // guarded by the session's receive turn
	ended    bool // set by end, which is called once
}

// startSession starts the session span under ctx's span, if any.
func (o *observer) startSession(ctx context.Context, endpoint string) *sessionObs {
	if o == nil {
		return nil
	}
	sctx, span := o.tracer.StartSpan(ctx, spanName, func(so *tracing.SpanOptions) {
		so.Kind = tracing.SpanKindClient
		so.Properties.Set(attrService, serviceID)
		so.Properties.Set(attrMethod, "InvokeEndpointWithBidirectionalStream")
		so.Properties.Set(attrEndpoint, endpoint)
	})
	so := &sessionObs{o: o, span: span, ctx: context.WithoutCancel(sctx), start: time.Now()}
	o.active.Add(so.ctx, 1, o.baseRecordOpt...)
	return so
}

// attempt records an attempt to open (run goroutine).
func (so *sessionObs) attempt() {
	if so == nil {
		return
	}
	so.o.callAttempts.Add(so.ctx, 1, so.o.baseRecordOpt...)
}

// retry records a retried open after attempt n failed with err (run
// goroutine).
func (so *sessionObs) retry(n int, err error) {
	if so == nil {
		return
	}
	so.span.AddEvent(eventRetry, func(eo *tracing.EventOptions) {
		eo.Properties.Set(attrAttempt, n)
		eo.Properties.Set(attrErrorType, errorType(err))
	})
	so.o.retries.Add(so.ctx, 1, so.o.baseRecordOpt...)
}

// response records the response head (run goroutine).
func (so *sessionObs) response(status int) {
	if so == nil {
		return
	}
	so.answered = true
	so.span.AddEvent(eventResponse, func(eo *tracing.EventOptions) { eo.Properties.Set(attrStatusCode, status) })
	so.span.SetProperty(attrStatusCode, status)
	so.o.callDuration.Record(so.ctx, time.Since(so.start).Seconds(), so.o.baseRecordOpt...)
}

// received records a PayloadPart of n bytes decoded (under the session's
// receive turn).
func (so *sessionObs) received(n int) {
	if so == nil {
		return
	}
	if !so.gotFirst {
		so.gotFirst = true
		so.span.AddEvent(eventFirstEvent)
		so.o.firstEvent.Record(so.ctx, time.Since(so.start).Seconds(), so.o.baseRecordOpt...)
	}
	so.o.eventsRecv.Add(so.ctx, 1, so.o.baseRecordOpt...)
	so.o.bytesRecv.Add(so.ctx, int64(n), so.o.baseRecordOpt...)
}

// sent records a PayloadPart of n bytes queued (sender, under the send
// lock).
func (so *sessionObs) sent(n int) {
	if so == nil {
		return
	}
	so.o.eventsSent.Add(so.ctx, 1, so.o.baseRecordOpt...)
	so.o.bytesSent.Add(so.ctx, int64(n), so.o.baseRecordOpt...)
}

// end ends the span with the session's end reason and error, once: by
// the run goroutine as it exits, or, for an answered session, by
// releaseAnswered when the session ends.
func (so *sessionObs) end(err error) {
	if so == nil || so.ended {
		return
	}
	so.ended = true
	reason := endReason(err)
	so.span.SetProperty(attrEndReason, reason)
	if err != nil && reason != endCompleted && reason != endClosed {
		so.span.SetProperty(attrErrorType, errorType(err))
		var mse *ModelStreamError
		if errors.As(err, &mse) && mse.CloseCode() != 0 {
			so.span.SetProperty(attrCloseCode, mse.CloseCode())
		}
		so.span.SetStatus(tracing.SpanStatusError)
	} else {
		so.span.SetStatus(tracing.SpanStatusOK)
	}
	if !so.answered {
		so.o.callDuration.Record(so.ctx, time.Since(so.start).Seconds(), so.o.baseRecordOpt...)
		so.o.callErrors.Add(so.ctx, 1, append(so.o.baseRecordOpt[:len(so.o.baseRecordOpt):len(so.o.baseRecordOpt)], func(ro *metrics.RecordMetricOptions) {
			ro.Properties.Set(attrOperationErr, errorType(err))
		})...)
	}
	so.o.duration.Record(so.ctx, time.Since(so.start).Seconds(), so.o.baseRecordOpt...)
	so.o.active.Add(so.ctx, -1, so.o.baseRecordOpt...)
	so.o.ends.Add(so.ctx, 1, append(so.o.baseRecordOpt[:len(so.o.baseRecordOpt):len(so.o.baseRecordOpt)], func(ro *metrics.RecordMetricOptions) {
		ro.Properties.Set(attrEndReason, reason)
	})...)
	so.span.End()
}

// endReason classifies how a session ended.
func endReason(err error) string {
	var (
		re  *ResponseError
		oce *OpenContextError
		sie *sendInterruptedError
		mse *ModelStreamError
		isf *InternalStreamFailure
		se  *ExceptionError
	)
	switch {
	case err == nil, err == io.EOF, errors.Is(err, ErrStreamEnded), IsNormalClosure(err):
		return endCompleted
	case errors.Is(err, ErrSessionClosed):
		// Only a Close that came before the end was decided: a Close
		// after a failure (the usual defer) leaves the failure's reason.
		return endClosed
	case errors.As(err, &oce), errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return endContext
	case errors.As(err, &re):
		return endHTTPError
	case errors.As(err, &sie):
		return endSendAborted
	case errors.As(err, &mse), errors.As(err, &isf), errors.As(err, &se):
		return endStreamError
	case errors.Is(err, errNoCredentials), errors.Is(err, errExpiredCredentials), errors.Is(err, ErrMalformedResponse):
		return endClientFailed
	}
	return endConnection
}

// errorType is the log-safe type of err: an API error's code, else the Go
// type (never the message, which may echo content).
func errorType(err error) string {
	var api interface{ ErrorCode() string }
	if errors.As(err, &api) {
		return cleanText(api.ErrorCode())
	}
	if err == nil {
		return ""
	}
	return fmt.Sprintf("%T", err)
}
