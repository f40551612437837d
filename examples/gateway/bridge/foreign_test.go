package bridge_test

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"

	"github.com/sagemaker-bidi/sagemaker-bidi/eventstream"
	"github.com/sagemaker-bidi/sagemaker-bidi/examples/container/model"
)

// A foreign client uses none of this project's client code: net/http's
// HTTP/2 transport, a request signed by hand in the form AWS's
// JavaScript SDK uses (":authority" signed in place of "host", its
// bookkeeping headers signed too), and events wrapped and signed with
// aws-sdk-go-v2's own v4.StreamSigner, laid out in the JavaScript SDK's
// header order.
type foreignStream struct {
	t      *testing.T
	ctx    context.Context
	pw     *io.PipeWriter
	signer *v4.StreamSigner
	respc  chan *http.Response
	errc   chan error
	resp   *http.Response
	dec    *eventstream.Decoder
}

// openForeign starts a stream on the gateway with the test credentials
// and the extra headers, and returns once the request is on its way.
func openForeign(t *testing.T, g *testGateway, extra map[string]string) *foreignStream {
	t.Helper()
	ctx := testContext(t)
	pr, pw := io.Pipe()
	req, err := http.NewRequestWithContext(ctx, "POST", g.URL()+"/endpoints/my-endpoint/invocations-bidirectional-stream", pr)
	if err != nil {
		t.Fatal(err)
	}
	amzDate := time.Now().UTC().Format("20060102T150405Z")
	hdr := map[string]string{
		"amz-sdk-invocation-id": "7c2b9a14-4f0e-4d62-9d55-5d1b7e0f3a21",
		"amz-sdk-request":       "attempt=1; max=1",
		"content-type":          "application/vnd.amazon.eventstream",
		"x-amz-content-sha256":  "STREAMING-AWS4-HMAC-SHA256-EVENTS",
		"x-amz-date":            amzDate,
		"x-amz-user-agent":      "foreign-test-client/1.0",
	}
	for k, v := range extra {
		hdr[strings.ToLower(k)] = v
	}
	names := []string{":authority"}
	for k, v := range hdr {
		req.Header.Set(k, v)
		names = append(names, k)
	}
	slices.Sort(names)
	creq := "POST\n" + req.URL.EscapedPath() + "\n\n"
	for _, n := range names {
		v := req.URL.Host
		if n != ":authority" {
			v = hdr[n]
		}
		creq += n + ":" + v + "\n"
	}
	signed := strings.Join(names, ";")
	creq += "\n" + signed + "\nSTREAMING-AWS4-HMAC-SHA256-EVENTS"
	mac := func(key []byte, data string) []byte {
		m := hmac.New(sha256.New, key)
		m.Write([]byte(data))
		return m.Sum(nil)
	}
	scope := amzDate[:8] + "/" + testRegion + "/sagemaker/aws4_request"
	key := mac(mac(mac(mac([]byte("AWS4"+testSecretKey), amzDate[:8]), testRegion), "sagemaker"), "aws4_request")
	sum := sha256.Sum256([]byte(creq))
	seed := mac(key, "AWS4-HMAC-SHA256\n"+amzDate+"\n"+scope+"\n"+hex.EncodeToString(sum[:]))
	req.Header.Set("Authorization", "AWS4-HMAC-SHA256 Credential="+testAccessKey+"/"+scope+", SignedHeaders="+signed+", Signature="+hex.EncodeToString(seed))

	fs := &foreignStream{
		t: t, ctx: ctx, pw: pw, respc: make(chan *http.Response, 1), errc: make(chan error, 1),
		signer: v4.NewStreamSigner(aws.Credentials{AccessKeyID: testAccessKey, SecretAccessKey: testSecretKey}, "sagemaker", testRegion, seed),
	}
	go func() {
		resp, err := g.Server().AWSConfig().HTTPClient.Do(req)
		if err != nil {
			fs.errc <- err
			return
		}
		fs.respc <- resp
	}()
	t.Cleanup(func() {
		pw.CloseWithError(context.Canceled)
		if fs.resp != nil {
			fs.resp.Body.Close()
		}
	})
	return fs
}

// response waits for the response headers.
func (fs *foreignStream) response() *http.Response {
	fs.t.Helper()
	if fs.resp == nil {
		select {
		case fs.resp = <-fs.respc:
			fs.dec = eventstream.NewDecoder(fs.resp.Body)
		case err := <-fs.errc:
			fs.t.Fatalf("request: %v", err)
		case <-fs.ctx.Done():
			fs.t.Fatal("no response")
		}
	}
	return fs.resp
}

// send signs an inner message (nil: the end frame) and writes it.
func (fs *foreignStream) send(inner []byte) {
	fs.t.Helper()
	now := time.Now()
	date := eventstream.Header{Name: ":date", Value: eventstream.TimestampValue(now)}
	hb, err := eventstream.AppendHeaders(nil, eventstream.Headers{date})
	if err != nil {
		fs.t.Fatal(err)
	}
	sig, err := fs.signer.GetSignature(fs.ctx, hb, inner, now)
	if err != nil {
		fs.t.Fatal(err)
	}
	env, err := eventstream.AppendMessage(nil, &eventstream.Message{
		Headers: eventstream.Headers{date, {Name: ":chunk-signature", Value: eventstream.BytesValue(sig)}},
		Payload: inner,
	})
	if err != nil {
		fs.t.Fatal(err)
	}
	if _, err := fs.pw.Write(env); err != nil {
		fs.t.Fatalf("writing: %v", err)
	}
}

// sendPart sends one PayloadPart in the JavaScript SDK's header order.
func (fs *foreignStream) sendPart(data string, dataType, completion string) {
	fs.t.Helper()
	inner, err := eventstream.AppendMessage(nil, &eventstream.Message{Headers: eventstream.Headers{
		{Name: ":event-type", Value: eventstream.StringValue("PayloadPart")},
		{Name: ":message-type", Value: eventstream.StringValue("event")},
		{Name: ":content-type", Value: eventstream.StringValue("application/octet-stream")},
		{Name: "DataType", Value: eventstream.StringValue(dataType)},
		{Name: "CompletionState", Value: eventstream.StringValue(completion)},
	}, Payload: []byte(data)})
	if err != nil {
		fs.t.Fatal(err)
	}
	fs.send(inner)
}

// end sends the end frame and ends the request body.
func (fs *foreignStream) end() {
	fs.send(nil)
	fs.pw.Close()
}

// next returns the next response message's kind ("event", "exception"),
// its payload and its headers as strings, or io.EOF at the clean end.
func (fs *foreignStream) next() (kind, payload string, headers map[string]string, err error) {
	fs.response()
	m, err := fs.dec.Decode()
	if err != nil {
		return "", "", nil, err
	}
	headers = make(map[string]string)
	for _, h := range m.Headers {
		headers[h.Name] = string(h.Value.Bytes)
	}
	return headers[":message-type"], string(m.Payload), headers, nil
}

// The gateway accepts a foreign client's :authority signature and its
// v4.StreamSigner events: echo, fragments both ways, the clean end.
func TestForeignClientThroughGateway(t *testing.T) {
	g := startGateway(t, sampleContainer(t, model.Options{Defaults: "mode=echo&fragment=4"}))
	fs := openForeign(t, g, nil)
	fs.sendPart("hello", "UTF8", "COMPLETE")
	if kind, payload, h, err := fs.next(); err != nil || kind != "event" || payload != "hello" || h["DataType"] != "UTF8" || h["CompletionState"] != "COMPLETE" {
		t.Fatalf("echo %s %q %v %v", kind, payload, h, err)
	}
	if resp := fs.response(); resp.Header.Get("X-Amzn-Invoked-Production-Variant") != "AllTraffic" {
		t.Fatalf("invoked variant %q", resp.Header.Get("X-Amzn-Invoked-Production-Variant"))
	}
	// A fragmented binary message reaches the container as one message,
	// which it echoes in 4-byte fragments.
	fs.sendPart("0123", "BINARY", "PARTIAL")
	fs.sendPart("4567", "BINARY", "PARTIAL")
	fs.sendPart("89", "BINARY", "COMPLETE")
	var got strings.Builder
	for {
		kind, payload, h, err := fs.next()
		if err != nil || kind != "event" || h["DataType"] != "BINARY" {
			t.Fatalf("fragment %s %q %v %v", kind, payload, h, err)
		}
		got.WriteString(payload)
		if h["CompletionState"] == "COMPLETE" {
			break
		}
	}
	if got.String() != "0123456789" {
		t.Fatalf("echoed %q", got.String())
	}
	fs.end()
	if _, _, _, err := fs.next(); err != io.EOF {
		t.Fatalf("end: %v, want the clean end", err)
	}
}

// Modeled errors reach a foreign client through the gateway: 400
// InputValidationError, 424 ModelError with its members, and a
// mid-stream ModelStreamError after the parts sent before it.
func TestForeignClientErrorsThroughGateway(t *testing.T) {
	g := startGateway(t, sampleContainer(t, model.Options{}))
	errorBody := func(fs *foreignStream) (int, string, map[string]any) {
		resp := fs.response()
		var body map[string]any
		json.NewDecoder(resp.Body).Decode(&body)
		return resp.StatusCode, resp.Header.Get("X-Amzn-ErrorType"), body
	}

	status, typ, body := errorBody(openForeign(t, g, map[string]string{"X-Amzn-SageMaker-Target-Variant": "Other"}))
	if status != 400 || typ != "InputValidationError" || body["Message"] == nil {
		t.Fatalf("unknown variant: %d %s %v", status, typ, body)
	}
	status, typ, body = errorBody(openForeign(t, g, map[string]string{"X-Amzn-SageMaker-Model-Query-String": "refuse=503"}))
	if status != 424 || typ != "ModelError" || body["Message"] != "Failed to establish WebSocket connection" || body["OriginalStatusCode"] != 503.0 {
		t.Fatalf("refused upgrade: %d %s %v", status, typ, body)
	}

	fs := openForeign(t, g, map[string]string{"X-Amzn-SageMaker-Model-Query-String": "mode=echo&close_after=1&close_code=1011&close_reason=boom"})
	fs.sendPart("one", "UTF8", "COMPLETE")
	if kind, payload, _, err := fs.next(); err != nil || kind != "event" || payload != "one" {
		t.Fatalf("before the error: %s %q %v", kind, payload, err)
	}
	kind, payload, h, err := fs.next()
	var mse struct{ Message, ErrorCode string }
	json.Unmarshal([]byte(payload), &mse)
	if err != nil || kind != "exception" || h[":exception-type"] != "ModelStreamError" || mse.ErrorCode != "1011" || !strings.Contains(mse.Message, `reason "boom"`) {
		t.Fatalf("mid-stream error: %s %v %q %v", kind, h, payload, err)
	}
	if _, _, _, err := fs.next(); err != io.EOF {
		t.Fatalf("after the error: %v, want the end of the stream", err)
	}
}
