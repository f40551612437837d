package main

import (
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"strings"

	"github.com/sagemaker-bidi/sagemaker-bidi/eventstream"
	"github.com/sagemaker-bidi/sagemaker-bidi/internal/demomodel"
	"github.com/sagemaker-bidi/sagemaker-bidi/schema"
)

// maxCut is the largest number of payload bytes in one PayloadPart of
// the local server; the cuts fall anywhere, inside events and characters.
const maxCut = 40

// newLocalServer starts an HTTP server on loopback that answers
// InvokeEndpointWithResponseStream the way SageMaker does, with a toy
// model behind it: POST /endpoints/{name}/invocations-response-stream,
// answered with an application/vnd.amazon.eventstream body of PayloadPart
// events. An OpenAI chat request gets chat.completion.chunk server-sent
// events; an LMI request ({"inputs": ...}) gets LMI token lines (JSON
// Lines). The model's bytes are cut into parts at random points, as real
// containers' output is.
//
// It checks only that the request is SigV4-signed, not the signature.
func newLocalServer() *httptest.Server {
	mux := http.NewServeMux()
	mux.HandleFunc("POST /endpoints/{name}/invocations-response-stream", serveStream)
	return httptest.NewServer(mux)
}

func serveStream(w http.ResponseWriter, r *http.Request) {
	if !strings.HasPrefix(r.Header.Get("Authorization"), "AWS4-HMAC-SHA256 ") {
		httpError(w, http.StatusForbidden, "MissingAuthenticationTokenException", "the request is not signed")
		return
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, 1<<20))
	if err != nil {
		return
	}
	payload, contentType, ok := answer(body)
	if !ok {
		httpError(w, http.StatusBadRequest, "ValidationError", "want an OpenAI chat request or an LMI request")
		return
	}
	variant := r.Header.Get("X-Amzn-SageMaker-Target-Variant")
	if variant == "" {
		variant = "AllTraffic"
	}
	w.Header().Set("Content-Type", "application/vnd.amazon.eventstream")
	w.Header().Set("X-Amzn-Invoked-Production-Variant", variant)
	w.Header().Set("X-Amzn-SageMaker-Content-Type", contentType)
	w.WriteHeader(http.StatusOK)

	enc := eventstream.NewEncoder(w)
	rc := http.NewResponseController(w)
	rng := rand.New(rand.NewPCG(7, 7))
	for len(payload) > 0 {
		n := min(1+rng.IntN(maxCut), len(payload))
		if err := enc.Encode(payloadPart(payload[:n])); err != nil {
			return
		}
		if err := rc.Flush(); err != nil {
			return
		}
		payload = payload[n:]
	}
}

// payloadPart returns the PayloadPart event carrying b.
func payloadPart(b []byte) *eventstream.Message {
	return &eventstream.Message{
		Headers: eventstream.Headers{
			{Name: ":message-type", Value: eventstream.StringValue("event")},
			{Name: ":event-type", Value: eventstream.StringValue("PayloadPart")},
			{Name: ":content-type", Value: eventstream.StringValue("application/octet-stream")},
		},
		Payload: b,
	}
}

// answer returns the toy model's streamed answer to a request body and
// its content type.
func answer(body []byte) ([]byte, string, bool) {
	if req, ok := demomodel.ParseChatRequest(body); ok {
		var sse []byte
		for _, ev := range demomodel.NewCompletion(req, "chatcmpl-local-1", 1767323045).Events() {
			sse = append(sse, ev...)
		}
		return sse, "text/event-stream", true
	}
	var lmi schema.LMIRequest
	if json.Unmarshal(body, &lmi) != nil || lmi.Inputs.Text == "" {
		return nil, "", false
	}
	return lmiLines("You said: " + lmi.Inputs.Text), "application/jsonlines", true
}

// lmiLines renders text as an LMI rolling-batch stream: one token line
// per word, the last one with generated_text.
func lmiLines(text string) []byte {
	var out []byte
	words := strings.SplitAfter(text, " ")
	for i, w := range words {
		line := schema.LMIStreamLine{Token: schema.Token{ID: 1000 + i, Text: w, LogProb: -0.25}}
		if i == len(words)-1 {
			line.GeneratedText = &text
		}
		b, _ := json.Marshal(line)
		out = append(append(out, b...), '\n')
	}
	return out
}

// httpError answers with a restJson1 error, as the service does.
func httpError(w http.ResponseWriter, status int, code, message string) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("X-Amzn-ErrorType", code)
	w.WriteHeader(status)
	fmt.Fprintf(w, `{"message":%q}`, message)
}
