package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	"go.opentelemetry.io/otel/trace"

	"github.com/sagemaker-bidi/sagemaker-bidi/bidi"
	"github.com/sagemaker-bidi/sagemaker-bidi/bidi/biditest"
	"github.com/sagemaker-bidi/sagemaker-bidi/examples/internal/cli"
	"github.com/sagemaker-bidi/sagemaker-bidi/examples/otel/internal/otelbridge"
)

// payload is the text the tests send; no telemetry may contain it.
const payload = "confidential-otel-payload-5d1e"

func testCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// TestRun runs the program as the README does, with no AWS account, and
// checks what it prints: the session's span through the adapter, child
// of the application's span, and the metrics with their values.
func TestRun(t *testing.T) {
	var out, errOut bytes.Buffer
	if code := run(testCtx(t), []string{"-messages", "4", "-text", payload}, &out, &errOut); code != 0 {
		t.Fatalf("exit code %d, stderr: %s\nstdout:\n%s", code, errOut.String(), out.String())
	}
	got := out.String()
	n := len(payload)
	for _, want := range []string{
		fmt.Sprintf("sent 4 messages (%d bytes), received 4 replies (%d bytes); the stream ended cleanly", 4*n, 4*n),
		fmt.Sprintf("span %q (kind client, status Ok), child of %q", "SageMaker Runtime HTTP2.InvokeEndpointWithBidirectionalStream", "handle-call"),
		"  event response {http.status_code=200}\n  event first_event\n",
		`rpc.service="SageMaker Runtime HTTP2" and rpc.method="InvokeEndpointWithBidirectionalStream"`,
	} {
		if !strings.Contains(got, want) {
			t.Errorf("output lacks %q:\n%s", want, got)
		}
	}
	for _, re := range []string{
		`\n  end_reason +=  ?completed\n`,
		`\n  http.status_code +=  ?200\n`,
		`\n  aws.sagemaker.endpoint_name += demo-endpoint\n`,
		`\n  client.call.attempts +1 \{attempt\}\n`,
		`\n  client.call.duration +count 1, sum [0-9.]+[µm]?s\n`,
		`\n  sagemaker_bidi.stream.events_sent +4 \{event\}\n`,
		`\n  sagemaker_bidi.stream.events_received +4 \{event\}\n`,
		fmt.Sprintf(`\n  sagemaker_bidi.stream.bytes_sent +%d By\n`, 4*n),
		fmt.Sprintf(`\n  sagemaker_bidi.stream.bytes_received +%d By\n`, 4*n),
		`\n  sagemaker_bidi.stream.active +0 \{session\}\n`,
		`\n  sagemaker_bidi.stream.ends\{end_reason=completed\} +1 \{session\}\n`,
		`\n  sagemaker_bidi.stream.duration +count 1, sum [0-9.]+[µm]?s\n`,
		`\n  sagemaker_bidi.stream.time_to_first_event +count 1, sum [0-9.]+[µm]?s\n`,
	} {
		if !regexp.MustCompile(re).MatchString(got) {
			t.Errorf("output does not match %q:\n%s", re, got)
		}
	}
	// Nothing failed: no client.call.errors, no retries.
	if strings.Contains(got, "client.call.errors") || strings.Contains(got, ".retries") {
		t.Errorf("failure metrics in a clean run:\n%s", got)
	}
	if strings.Contains(got, payload) {
		t.Errorf("the output shows the payload:\n%s", got)
	}
}

// testCredentials are those of the servers session starts, so that
// checkNoLeak knows the secret to look for.
var testCredentials = aws.Credentials{AccessKeyID: "AKIDOTELTEST", SecretAccessKey: "otel-test-secret-0000"}

// session runs converse against an in-process server running h and
// returns what OpenTelemetry recorded, and converse's error.
func session(t *testing.T, h biditest.Handler, messages int) (*report, stats, error) {
	t.Helper()
	ctx := testCtx(t)
	srv := biditest.NewUnstartedServer(h)
	srv.Credentials = testCredentials
	srv.Start()
	t.Cleanup(srv.Close)
	tel := newTelemetry()
	t.Cleanup(tel.shutdown)
	client := srv.Client(func(o *bidi.Options) {
		o.TracerProvider = otelbridge.Tracer(tel.tracerProvider)
		o.MeterProvider = otelbridge.Meter(tel.meterProvider)
	})
	st, err := converse(ctx, client, &options{messages: messages, text: payload}, tel)
	if err != nil {
		// converse returns before the span ends when the session fails.
		if werr := tel.waitSessionSpan(ctx); werr != nil {
			t.Fatal(werr)
		}
	}
	rep, cerr := tel.collect(ctx)
	if cerr != nil {
		t.Fatal(cerr)
	}
	return rep, st, err
}

// attrMap returns kvs by key.
func attrMap(kvs []attribute.KeyValue) map[attribute.Key]attribute.Value {
	m := map[attribute.Key]attribute.Value{}
	for _, kv := range kvs {
		m[kv.Key] = kv.Value
	}
	return m
}

// int64Sums returns the int64 sums of r by name{end_reason}.
func int64Sums(r *report) map[string]int64 {
	sums := map[string]int64{}
	for _, m := range r.metrics {
		if s, ok := m.Data.(metricdata.Sum[int64]); ok {
			for _, p := range s.DataPoints {
				key := m.Name
				if v, ok := p.Attributes.Value("end_reason"); ok {
					key += "{" + v.AsString() + "}"
				}
				sums[key] += p.Value
			}
		}
	}
	return sums
}

// checkNoLeak fails if any attribute of the span, its events or the data
// points holds the payload, the server's secret key or a signature.
func checkNoLeak(t *testing.T, r *report) {
	t.Helper()
	var all []attribute.KeyValue
	all = append(all, r.session.Attributes...)
	for _, e := range r.session.Events {
		all = append(all, e.Attributes...)
	}
	for _, m := range r.metrics {
		switch d := m.Data.(type) {
		case metricdata.Sum[int64]:
			for _, p := range d.DataPoints {
				all = append(all, p.Attributes.ToSlice()...)
			}
		case metricdata.Histogram[float64]:
			for _, p := range d.DataPoints {
				all = append(all, p.Attributes.ToSlice()...)
			}
		}
	}
	if len(all) == 0 {
		t.Fatal("no attributes at all")
	}
	for _, kv := range all {
		s := string(kv.Key) + "=" + kv.Value.String()
		if strings.Contains(s, payload) || strings.Contains(s, testCredentials.SecretAccessKey) || strings.Contains(s, "Signature") {
			t.Errorf("attribute leaks content: %s", s)
		}
	}
	if strings.Contains(r.session.Status.Description, payload) {
		t.Errorf("status description leaks the payload: %q", r.session.Status.Description)
	}
}

// TestTelemetry checks the recorded data itself: the span and metrics
// came through the adapter with their names, kinds and typed values.
func TestTelemetry(t *testing.T) {
	r, st, err := session(t, biditest.Echo(), 3)
	if err != nil {
		t.Fatal(err)
	}
	if st.sent != 3 || st.received != 3 {
		t.Errorf("stats %+v", st)
	}
	s := r.session
	if s.Name != "SageMaker Runtime HTTP2.InvokeEndpointWithBidirectionalStream" || s.SpanKind != trace.SpanKindClient || s.Status.Code != codes.Ok || r.parent != appSpanName {
		t.Errorf("span %q kind %v status %v parent %q", s.Name, s.SpanKind, s.Status.Code, r.parent)
	}
	if s.InstrumentationScope.Name != "github.com/sagemaker-bidi/sagemaker-bidi/bidi" {
		t.Errorf("span scope %q", s.InstrumentationScope.Name)
	}
	if s.EndTime.IsZero() {
		t.Error("span not ended")
	}
	a := attrMap(s.Attributes)
	if a["end_reason"] != attribute.StringValue("completed") ||
		a["http.status_code"] != attribute.IntValue(200) || // an int stays an int
		a["aws.sagemaker.endpoint_name"] != attribute.StringValue("demo-endpoint") ||
		a["rpc.service"] != attribute.StringValue("SageMaker Runtime HTTP2") {
		t.Errorf("span attributes %v", s.Attributes)
	}
	var events []string
	for _, e := range s.Events {
		events = append(events, e.Name)
	}
	if strings.Join(events, ",") != "response,first_event" {
		t.Errorf("events %v", events)
	}
	if ev := attrMap(s.Events[0].Attributes); ev["http.status_code"] != attribute.IntValue(200) {
		t.Errorf("response event attributes %v", s.Events[0].Attributes)
	}

	p := "sagemaker_bidi.stream."
	sums := int64Sums(r)
	n := int64(len(payload))
	for key, want := range map[string]int64{
		p + "events_sent": 3, p + "events_received": 3,
		p + "bytes_sent": 3 * n, p + "bytes_received": 3 * n,
		p + "active": 0, p + "ends{completed}": 1, "client.call.attempts": 1,
	} {
		if got, ok := sums[key]; !ok || got != want {
			t.Errorf("%s = %d (recorded: %v), want %d", key, got, ok, want)
		}
	}
	for _, m := range r.metrics {
		if h, ok := m.Data.(metricdata.Histogram[float64]); ok {
			if len(h.DataPoints) != 1 || h.DataPoints[0].Count != 1 || h.DataPoints[0].Sum <= 0 || m.Unit != "s" {
				t.Errorf("%s: unit %q %+v", m.Name, m.Unit, h.DataPoints)
			}
		}
		if m.Name == p+"events_sent" && (m.Unit != "{event}" || m.Description == "") {
			t.Errorf("%s: unit %q description %q", m.Name, m.Unit, m.Description)
		}
	}
	checkNoLeak(t, r)
}

// failingModel echoes the first message, then fails on the second with
// an error message that echoes the payload.
func failingModel() biditest.Handler {
	return biditest.HandlerFunc(func(st *biditest.Stream) {
		if st.Accept() != nil {
			return
		}
		m, err := st.Recv()
		if err != nil {
			return
		}
		_ = st.Send(m)
		if _, err := st.Recv(); err != nil {
			return
		}
		body, _ := json.Marshal(map[string]string{"Message": "the model choked on " + payload, "ErrorCode": "1011"})
		_ = st.SendException("ModelStreamError", body)
	})
}

// TestTelemetryStreamError: a model failing mid-stream, with an error
// message that echoes the payload, ends the span with an error status
// and end_reason stream_error; the message appears nowhere.
func TestTelemetryStreamError(t *testing.T) {
	r, st, err := session(t, failingModel(), 2)
	if err == nil || !strings.Contains(err.Error(), "1011") {
		t.Fatalf("converse: %v, want the ModelStreamError", err)
	}
	if st.received != 1 {
		t.Errorf("stats %+v", st)
	}
	if r.session.Status.Code != codes.Error {
		t.Errorf("status %v, want Error", r.session.Status.Code)
	}
	a := attrMap(r.session.Attributes)
	if a["end_reason"] != attribute.StringValue("stream_error") || a["error.type"].AsString() == "" {
		t.Errorf("span attributes %v", r.session.Attributes)
	}
	if sums := int64Sums(r); sums["sagemaker_bidi.stream.ends{stream_error}"] != 1 || sums["sagemaker_bidi.stream.events_sent"] != 2 {
		t.Errorf("sums %v", sums)
	}
	checkNoLeak(t, r)
}

// TestRunStreamError: the program shows the telemetry of a failed
// session too, then fails.
func TestRunStreamError(t *testing.T) {
	defer func(m func() biditest.Handler) { localModel = m }(localModel)
	localModel = failingModel
	var out, errOut bytes.Buffer
	if code := run(testCtx(t), []string{"-messages", "2", "-text", payload}, &out, &errOut); code != 1 {
		t.Fatalf("exit code %d, want 1; stderr: %s\nstdout:\n%s", code, errOut.String(), out.String())
	}
	got := out.String()
	for _, re := range []string{
		`the session failed after 2 messages sent and 1 reply received`,
		`\(kind client, status Error\), child of "handle-call"`,
		`\n  end_reason +=  ?stream_error\n`,
		`\n  client.call.attempts +1 \{attempt\}\n`,
		`\n  sagemaker_bidi.stream.ends\{end_reason=stream_error\} +1 \{session\}\n`,
		`\n  sagemaker_bidi.stream.events_received +1 \{event\}\n`,
	} {
		if !regexp.MustCompile(re).MatchString(got) {
			t.Errorf("output does not match %q:\n%s", re, got)
		}
	}
	if strings.Contains(got, payload) {
		t.Errorf("the output shows the payload:\n%s", got)
	}
	if !strings.HasPrefix(errOut.String(), "otel: ") || !strings.Contains(errOut.String(), "1011") {
		t.Errorf("stderr %q, want the error", errOut.String())
	}
}

func TestFlags(t *testing.T) {
	ctx := context.Background()
	var out, errOut bytes.Buffer
	if code := run(ctx, []string{"-h"}, &out, &errOut); code != 0 {
		t.Errorf("-h exit code %d", code)
	}
	if !strings.Contains(errOut.String(), "-endpoint") || !strings.Contains(errOut.String(), "Example:") {
		t.Errorf("-h output lacks the flags and an example:\n%s", errOut.String())
	}
	fs, _ := newFlagSet(&out)
	if missing := cli.FlagsWithoutExample(fs); len(missing) > 0 {
		t.Errorf("flags without an example in their help: %v", missing)
	}
	for _, args := range [][]string{{"-no-such-flag"}, {"-messages", "0"}, {"-text", ""}, {"extra"}, {"-endpoint", "my_endpoint"}} {
		errOut.Reset()
		if code := run(ctx, args, &out, &errOut); code != 2 {
			t.Errorf("%q: exit code %d, want 2 (stderr %q)", args, code, errOut.String())
		}
	}
}
