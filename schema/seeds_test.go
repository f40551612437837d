package schema

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/sagemaker-bidi/sagemaker-bidi/schema/framing"
)

// The files in testdata/seeds are the examples of seeds 001, 002 and 004,
// copied verbatim (the request bodies without their curl command line).

// seedDir is where the seed documents live next to the repository.
const seedDir = "../../shared/seeds"

func seedFile(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", "seeds", name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestSeedFilesAreVerbatim(t *testing.T) {
	docs, _ := filepath.Glob(filepath.Join(seedDir, "00[124]_*.txt"))
	if len(docs) != 3 {
		t.Skipf("seed documents not found in %s", seedDir)
	}
	files, _ := filepath.Glob(filepath.Join("testdata", "seeds", "*"))
	for _, f := range files {
		b, _ := os.ReadFile(f)
		prefix := filepath.Base(f)[:3]
		doc, _ := filepath.Glob(filepath.Join(seedDir, prefix+"_*.txt"))
		if len(doc) != 1 {
			t.Errorf("%s names no seed document (%s_*.txt in %s)", f, prefix, seedDir)
			continue
		}
		text, _ := os.ReadFile(doc[0])
		if !bytes.Contains(text, b) {
			t.Errorf("%s is not a verbatim excerpt of %s", f, doc[0])
		}
	}
}

// withResync sets [framing.Options.Resync].
func withResync(o *framing.Options) { o.Resync = true }

// events frames input with a [framing.Reader] and returns its events
// (Data copied) and errors.
func events(t *testing.T, input []byte, optFns ...func(*framing.Options)) ([]framing.Event, []error) {
	t.Helper()
	evs, errs, _ := collect(t, framing.NewReader(bytes.NewReader(input), optFns...).Next, optFns)
	return evs, errs
}

// collect calls next up to io.EOF or [framing.ErrNeedInput], or up to the
// first error unless optFns set Resync, and returns the events (Data
// copied) and errors, and whether the stream ended.
func collect(t *testing.T, next func() (framing.Event, error), optFns []func(*framing.Options)) (evs []framing.Event, errs []error, ended bool) {
	t.Helper()
	var o framing.Options
	for _, fn := range optFns {
		fn(&o)
	}
	for range 1000 {
		ev, err := next()
		if err == framing.ErrNeedInput {
			return evs, errs, false
		}
		if err == io.EOF {
			return evs, errs, true
		}
		if err != nil {
			errs = append(errs, err)
			if !o.Resync || errors.Is(err, io.ErrUnexpectedEOF) {
				return evs, errs, true
			}
			continue
		}
		ev.Data = bytes.Clone(ev.Data)
		evs = append(evs, ev)
	}
	t.Fatal("no end")
	return nil, nil, true
}

// checkSplitInvariance frames input whole and, with a [framing.Decoder],
// written in n random fragmentations, and fails unless the events and
// errors are the same. (schema/framing tests this property in depth; this
// checks it for the repaired seed excerpts that only these tests build.)
func checkSplitInvariance(t *testing.T, input []byte, n int, optFns ...func(*framing.Options)) {
	t.Helper()
	wantEvs, wantErrs := events(t, input, optFns...)
	wantErrText := fmt.Sprint(wantErrs)
	for seed := range uint64(n) {
		rng := rand.New(rand.NewPCG(seed, 7))
		d := framing.NewDecoder(optFns...)
		var evs []framing.Event
		var errs []error
		for rest, ended := input, false; !ended; {
			k := min(len(rest), 1+rng.IntN(64))
			d.Write(rest[:k])
			if rest = rest[k:]; len(rest) == 0 {
				d.Close()
			}
			var e []framing.Event
			var es []error
			e, es, ended = collect(t, d.Next, optFns)
			evs, errs = append(evs, e...), append(errs, es...)
		}
		if !slices.EqualFunc(evs, wantEvs, sameEvent) || fmt.Sprint(errs) != wantErrText {
			t.Fatalf("seed %d: fragmented\n got %v %v\nwant %v %v", seed, evs, errs, wantEvs, wantErrs)
		}
	}
}

// sameEvent reports whether a and b are the same event: equal fields, the
// bytes of Data compared (an empty Data equals a nil one).
func sameEvent(a, b framing.Event) bool {
	dataA, dataB := a.Data, b.Data
	a.Data, b.Data = nil, nil
	return bytes.Equal(dataA, dataB) && reflect.DeepEqual(a, b)
}

// syntaxAt fails unless err is a *framing.SyntaxError at offset off.
func syntaxAt(t *testing.T, err error, off int) {
	t.Helper()
	var syn *framing.SyntaxError
	if !errors.As(err, &syn) || syn.Offset != int64(off) {
		t.Fatalf("got %v, want a syntax error at offset %d", err, off)
	}
}

// single decodes a seed file holding one JSON value, checking that it
// frames as exactly one event, whole and fragmented.
func single(t *testing.T, name string, v any) framing.Event {
	t.Helper()
	in := seedFile(t, name)
	checkSplitInvariance(t, in, 50)
	evs, errs := events(t, in)
	if len(errs) != 0 || len(evs) != 1 {
		t.Fatalf("%s: %d events, errors %v", name, len(evs), errs)
	}
	if err := evs[0].Decode(v); err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return evs[0]
}

// placeholders replaces the token-list placeholders of seed 001
// ("[<Token1>, <Token2>, ...]"), which are not JSON, by two tokens.
func placeholders(b []byte) []byte {
	return regexp.MustCompile(`\[<Token1>, <Token2>, \.\.\.\]`).ReplaceAll(b,
		[]byte(`[{"id": 1, "text": "Deep", "log_prob": -0.5}, {"id": 2, "text": " Learning", "log_prob": -0.25}]`))
}

// trailingCommas removes the trailing commas of seed 001's request
// examples, which no JSON parser (LMI's included) accepts.
func trailingCommas(b []byte) []byte {
	return regexp.MustCompile(`,(\s*[}\]])`).ReplaceAll(b, []byte("$1"))
}

func TestSeed001Requests(t *testing.T) {
	for _, tt := range []struct {
		name   string
		stream bool
	}{{"001_request_rolling.json", true}, {"001_request_dynamic.json", false}} {
		in := seedFile(t, tt.name)
		// As given: the trailing comma is reported where it is.
		_, errs := events(t, in)
		syntaxAt(t, errs[0], bytes.Index(in, []byte(",\n        }"))+10)
		checkSplitInvariance(t, in, 50)

		var req LMIRequest
		if err := json.Unmarshal(trailingCommas(in), &req); err != nil {
			t.Fatal(err)
		}
		want := LMIRequest{Inputs: Inputs{Text: "What is Deep Learning?"}, Stream: tt.stream,
			Parameters: &GenerationParameters{DoSample: true, MaxNewTokens: 256, Details: tt.stream}}
		if !reflect.DeepEqual(req, want) {
			t.Errorf("%s: got %+v", tt.name, req)
		}
	}
}

func TestSeed001Parameters(t *testing.T) {
	tags := jsonTags(reflect.TypeFor[GenerationParameters]())
	for _, name := range []string{"common", "lmidist", "vllm", "trtllm"} {
		doc := seedFile(t, "001_parameters_"+name+".txt")
		names := regexp.MustCompile(`'(\w+)'`).FindAllSubmatch(doc, -1)
		if len(names) < 3 {
			t.Fatalf("%s: found only %d parameters", name, len(names))
		}
		for _, m := range names {
			if !tags[string(m[1])] {
				t.Errorf("parameter %q of %s has no field in GenerationParameters", m[1], name)
			}
		}
	}
	// The details fragment is not JSON; its field names must all exist.
	details := jsonTags(reflect.TypeFor[Details]())
	for _, m := range regexp.MustCompile(`"(\w+)":`).FindAllSubmatch(seedFile(t, "001_details.txt"), -1) {
		if string(m[1]) != "details" && !details[string(m[1])] {
			t.Errorf("details field %q missing", m[1])
		}
	}
}

func jsonTags(typ reflect.Type) map[string]bool {
	tags := map[string]bool{}
	for i := range typ.NumField() {
		tags[strings.Split(typ.Field(i).Tag.Get("json"), ",")[0]] = true
	}
	return tags
}

func TestSeed001Responses(t *testing.T) {
	for _, name := range []string{"001_response.json", "001_tgi_response.json"} {
		in := seedFile(t, name)
		_, errs := events(t, in)
		syntaxAt(t, errs[0], bytes.Index(in, []byte("<Token1>")))

		var rs LMIResponses
		if err := json.Unmarshal(placeholders(in), &rs); err != nil {
			t.Fatal(err)
		}
		if DetectKind(placeholders(in)) != KindLMIResponse {
			t.Errorf("%s: kind %v", name, DetectKind(placeholders(in)))
		}
		want := LMIResponse{GeneratedText: "Deep Learning is a really cool field", Details: &Details{
			FinishReason:    "length", // spelled "finish reason" in the seed
			GeneratedTokens: 8, Inputs: "What is Deep Learning?",
			Tokens: []Token{{ID: 1, Text: "Deep", LogProb: -0.5}, {ID: 2, Text: " Learning", LogProb: -0.25}},
		}}
		if len(rs) != 1 || !reflect.DeepEqual(rs[0], want) || rs[0].Err() != nil {
			t.Errorf("%s: got %+v", name, rs)
		}
	}

	var dyn LMIResponses
	single(t, "001_dynamic_response.json", &dyn)
	if len(dyn) != 1 || dyn[0].GeneratedText != "Deep Learning is a really cool field" || dyn[0].Details != nil {
		t.Errorf("dynamic-batch response: %+v", dyn)
	}

	var line LMIStreamLine
	ev := single(t, "001_token.json", &line)
	if line.Token != (Token{ID: 763, Text: " In", LogProb: -3.977081060409546}) || line.Final() || DetectKind(ev.Data) != KindLMIStreamLine {
		t.Errorf("token example: %+v", line)
	}
}

// lmiStreamWant is what seed 001's token streams rebuild to.
var lmiStreamWant = LMIResponse{
	GeneratedText: "Deep Learning is a really cool field.",
	Details: &Details{FinishReason: "length", GeneratedTokens: 100, Inputs: "What is Deep Learning?", Tokens: []Token{
		{ID: 304, Text: "Deep ", LogProb: -0.052432529628276825},
		{ID: 11157, Text: " Learning", LogProb: -1.2865009307861328},
		{ID: 278, Text: " is", LogProb: -0.007458459585905075},
		{ID: 5972, Text: " field.", LogProb: -0.6950479745864868},
	}},
}

func TestSeed001Streams(t *testing.T) {
	for _, name := range []string{"001_stream.jsonl", "001_stream.sse"} {
		in := seedFile(t, name)
		checkSplitInvariance(t, in, 200, withResync)
		// As given, the stream has an elision line ("... more tokens until
		// the last one"): garbage, reported where it is, then skipped.
		evs, errs := events(t, in, withResync)
		if len(errs) != 1 || len(evs) != 4 {
			t.Fatalf("%s: %d events, errors %v", name, len(evs), errs)
		}
		syntaxAt(t, errs[0], bytes.Index(in, []byte("... more")))
		var acc LMIAccumulator
		for i, ev := range evs {
			if k := DetectKind(ev.Data); k != KindLMIStreamLine {
				t.Errorf("event %d: kind %v", i, k)
			}
			if acc.Complete() {
				t.Errorf("complete before the last line")
			}
			if err := acc.AddEvent(ev); err != nil {
				t.Fatal(err)
			}
		}
		got, err := acc.Result()
		if err != nil || !reflect.DeepEqual(*got, lmiStreamWant) {
			t.Errorf("%s: got %+v (%v), want %+v", name, got, err, lmiStreamWant)
		}
	}

	// The TGI-compatible stream: one pretty-printed value after "data: ".
	var line LMIStreamLine
	single(t, "001_tgi_stream.sse", &line)
	if !line.Final() || *line.GeneratedText != "Deep Learning is a really cool field." || line.Details.GeneratedTokens != 100 {
		t.Errorf("TGI stream line: %+v", line)
	}

	// Dynamic batching: outputs lines, and an elision line.
	in := seedFile(t, "001_dynamic_stream.jsonl")
	checkSplitInvariance(t, in, 100, withResync)
	evs, errs := events(t, in, withResync)
	if len(errs) != 1 || len(evs) != 3 {
		t.Fatalf("dynamic stream: %d events, errors %v", len(evs), errs)
	}
	var words []string
	for _, ev := range evs {
		var out DynamicBatchOutput
		if err := ev.Decode(&out); err != nil || DetectKind(ev.Data) != KindDynamicBatchOutput {
			t.Fatal(err, DetectKind(ev.Data))
		}
		words = append(words, out.Outputs...)
	}
	if strings.Join(words, " ") != "This opportunity is" {
		t.Errorf("outputs %q", words)
	}
}

func TestSeed001Errors(t *testing.T) {
	// Validation error and dynamic-batch error bodies.
	for _, tt := range []struct {
		name string
		want ErrorResponse
	}{
		{"001_error_validation.json", ErrorResponse{Code: 424, Detail: "<error details>"}},
		{"001_dynamic_error.json", ErrorResponse{Code: 424, Message: "invoke handler failure", Detail: "<error details"}},
	} {
		var e ErrorResponse
		ev := single(t, tt.name, &e)
		if e != tt.want || DetectKind(ev.Data) != KindError {
			t.Errorf("%s: got %+v, kind %v", tt.name, e, DetectKind(ev.Data))
		}
		var acc LMIAccumulator
		var got *ErrorResponse
		if err := acc.AddEvent(ev); !errors.As(err, &got) || *got != tt.want {
			t.Errorf("%s: accumulator returned %v", tt.name, err)
		}
	}

	// Failed generation, non-streaming.
	var resp LMIResponse
	single(t, "001_error_response.json", &resp)
	var gen *GenerationError
	if err := resp.Err(); !errors.As(err, &gen) || gen.Details.FinishReason != "error" || resp.GeneratedText != "" {
		t.Errorf("error response: %v", err)
	}

	// Failed generation mid-stream, with the seed's stray closing brace.
	in := seedFile(t, "001_error_stream.jsonl")
	checkSplitInvariance(t, in, 100)
	evs, errs := events(t, in)
	if len(evs) != 1 || len(errs) != 1 {
		t.Fatalf("%d events, errors %v", len(evs), errs)
	}
	syntaxAt(t, errs[0], bytes.LastIndexByte(in, '}'))
	var acc LMIAccumulator
	err := acc.AddEvent(evs[0])
	if !errors.As(err, &gen) || gen.Token.ID != -1 || !gen.Token.SpecialToken {
		t.Errorf("in-stream error: %v", err)
	}
	if err.Error() != `schema: generation failed (finish_reason "error")` {
		t.Errorf("message %q", err)
	}
}

func TestSeed002(t *testing.T) {
	var req ChatCompletionRequest
	single(t, "002_request.json", &req)
	if len(req.Messages) != 2 || req.Messages[1].Content.Text != "What is deep learning?" ||
		!req.Logprobs || req.TopLogprobs != 1 || req.MaxTokens != 256 {
		t.Errorf("request: %+v", req)
	}
	// It encodes back to the same JSON.
	out, _ := json.Marshal(req)
	if !jsonEqual(t, out, seedFile(t, "002_request.json")) {
		t.Errorf("request re-encodes as %s", out)
	}

	var resp ChatCompletion
	ev := single(t, "002_response.json", &resp)
	if DetectKind(ev.Data) != KindChatCompletion || resp.Choices[0].FinishReason != "length" ||
		!strings.HasPrefix(resp.Choices[0].Message.Content, `Hello! I\'m here`) ||
		*resp.Usage != (Usage{PromptTokens: 33, CompletionTokens: 30, TotalTokens: 63}) {
		t.Errorf("response: %+v", resp)
	}

	// The stream: pretty-printed chunks in JSON Lines, an elision line,
	// logprobs as an array, top_logprobs tokens as numbers.
	in := seedFile(t, "002_stream.jsonl")
	checkSplitInvariance(t, in, 200, withResync)
	evs, errs := events(t, in, withResync)
	if len(evs) != 2 || len(errs) != 1 {
		t.Fatalf("%d events, errors %v", len(evs), errs)
	}
	syntaxAt(t, errs[0], bytes.Index(in, []byte("...")))
	var acc ChatAccumulator
	for _, ev := range evs {
		if DetectKind(ev.Data) != KindChatChunk {
			t.Errorf("kind %v", DetectKind(ev.Data))
		}
		if err := acc.AddEvent(ev); err != nil {
			t.Fatal(err)
		}
	}
	got, err := acc.Result()
	if err != nil {
		t.Fatal(err)
	}
	c := got.Choices[0]
	if c.Message.Role != "assistant" || c.Message.Content != " Oh assist" || c.FinishReason != "length" || got.Created != 1712792433 {
		t.Errorf("rebuilt %+v", got)
	}
	if lp := c.Logprobs.Content; len(lp) != 2 || lp[0].Token != " Oh" || lp[1].Token != " assist" ||
		lp[1].TopLogprobs[0].Token != "-1.019672155380249" || !reflect.DeepEqual(lp[0].Bytes, []int{32, 79, 104}) {
		t.Errorf("logprobs %+v", lp)
	}

	var sys, vision ChatMessage
	single(t, "002_message.json", &sys)
	single(t, "002_message_vision.json", &vision)
	if sys.Role != "system" || sys.Content.Text != "You are a helpful assistant." || sys.Content.Parts != nil {
		t.Errorf("message %+v", sys)
	}
	if p := vision.Content.Parts; len(p) != 2 || p[0].Text != "What is this an image of?" || p[1].Type != "image_url" ||
		p[1].ImageURL.URL != "<base64 encoded image data | image url>" {
		t.Errorf("vision message %+v", vision)
	}
	out, _ = json.Marshal(vision)
	if !jsonEqual(t, out, seedFile(t, "002_message_vision.json")) {
		t.Errorf("vision message re-encodes as %s", out)
	}

	var choice ChatChoice
	single(t, "002_choice.json", &choice)
	if choice.Message.Role != "assistant" || choice.Logprobs != nil || choice.FinishReason != "length" {
		t.Errorf("choice %+v", choice)
	}
	var sc ChatChunkChoice
	single(t, "002_stream_choice.json", &sc)
	if sc.Delta.Content != " Oh" || sc.Delta.Role != "assistant" || sc.Logprobs.Content[0].TopLogprobs[0].Token != "-4.499478340148926" {
		t.Errorf("stream choice %+v", sc)
	}
	var lp Logprobs
	single(t, "002_logprobs.json", &lp)
	if len(lp.Content) != 2 || lp.Content[1].Token != " Deep" || lp.Content[0].Logprob != -4.768370445162873e-07 {
		t.Errorf("logprobs %+v", lp)
	}
	var top TopLogprob
	single(t, "002_top_logprob.json", &top)
	if top.Token != " Deep" || len(top.Bytes) != 5 {
		t.Errorf("top logprob %+v", top)
	}
	// The usage example is a member, not a value: as given it is not one
	// JSON value, wrapped in braces it decodes.
	usage := seedFile(t, "002_usage.txt")
	if _, errs := events(t, usage); len(errs) == 0 {
		t.Error("a bare member framed as a value")
	}
	var wrapped struct{ Usage Usage }
	if err := json.Unmarshal(append(append([]byte("{"), usage...), '}'), &wrapped); err != nil ||
		wrapped.Usage != (Usage{PromptTokens: 33, CompletionTokens: 100, TotalTokens: 133}) {
		t.Errorf("usage %+v, %v", wrapped, err)
	}
}

func TestSeed004NonStreaming(t *testing.T) {
	var chat ChatCompletion
	ev := single(t, "004_chat.json", &chat)
	m := chat.Choices[0].Message
	if DetectKind(ev.Data) != KindChatCompletion || chat.Model != "/opt/ml/model" || m.Role != "assistant" ||
		!strings.HasPrefix(m.Content, "\n\n# Clinical Case") || !strings.HasPrefix(m.ReasoningContent, "\nOkay, let's try") ||
		m.Refusal != "" || m.Annotations != nil || m.Audio != nil || m.FunctionCall != nil || m.ToolCalls == nil || len(m.ToolCalls) != 0 ||
		chat.Choices[0].FinishReason != "stop" || chat.Choices[0].StopReason != "" || chat.ServiceTier != "" ||
		chat.Usage.TotalTokens != 1847 || chat.Usage.PromptTokensDetails != nil || chat.PromptLogprobs != nil || chat.KVTransferParams != nil {
		t.Errorf("chat completion %+v", chat)
	}

	var one, multi TextCompletion
	ev = single(t, "004_text.json", &one)
	if DetectKind(ev.Data) != KindTextCompletion || one.Choices[0].Text != "If you have a fever and body aches ..." || one.Usage.TotalTokens != 1283 {
		t.Errorf("text completion %+v", one)
	}
	single(t, "004_text_multi.json", &multi)
	if len(multi.Choices) != 2 || multi.Choices[1].Index != 1 || multi.Choices[1].Text != "Best practices for kidney care include ..." {
		t.Errorf("text completion (multiple prompts) %+v", multi)
	}
}

func TestSeed004ChatStream(t *testing.T) {
	in := seedFile(t, "004_chat_stream.sse")
	checkSplitInvariance(t, in, 300)
	evs, errs := events(t, in)
	if len(errs) != 0 || len(evs) != 24 || !evs[23].Done {
		t.Fatalf("%d events, errors %v", len(evs), errs)
	}
	var acc ChatAccumulator
	for _, ev := range evs {
		if !ev.Done && DetectKind(ev.Data) != KindChatChunk {
			t.Errorf("kind %v", DetectKind(ev.Data))
		}
		if err := acc.AddEvent(ev); err != nil {
			t.Fatal(err)
		}
	}
	got, err := acc.Result()
	if err != nil || !acc.Done() {
		t.Fatal(err)
	}
	m := got.Choices[0].Message
	// The seed states the reconstruction as "Okay, let me try to figure
	// this out..." and "The best treatment for this pregnant woman...":
	// the deltas add a leading newline to each, and the reasoning's
	// deltas end "out", ".", ".\n".
	if m.ReasoningContent != "\nOkay, let me try to figure this out..\n" ||
		!strings.HasPrefix(strings.TrimSpace(m.ReasoningContent), strings.TrimSuffix("Okay, let me try to figure this out...", "...")) {
		t.Errorf("reasoning %q", m.ReasoningContent)
	}
	if strings.TrimSpace(m.Content) != "The best treatment for this pregnant woman..." || m.Content[:2] != "\n\n" {
		t.Errorf("content %q", m.Content)
	}
	if m.Role != "assistant" || got.Choices[0].FinishReason != "stop" || got.ID != "chatcmpl-2e46f7e56d474ad8874756df2b358a10" ||
		got.Object != "chat.completion" || got.Usage != nil {
		t.Errorf("rebuilt %+v", got)
	}
}

func TestSeed004TextStream(t *testing.T) {
	in := seedFile(t, "004_text_stream.sse")
	checkSplitInvariance(t, in, 300)
	evs, errs := events(t, in)
	if len(errs) != 0 || len(evs) != 5 {
		t.Fatalf("%d events, errors %v", len(evs), errs)
	}
	var acc CompletionAccumulator
	for _, ev := range evs {
		if err := acc.AddEvent(ev); err != nil {
			t.Fatal(err)
		}
	}
	got, err := acc.Result()
	if err != nil || got.Choices[0].Text != "If you have a" || got.Choices[0].FinishReason != "stop" || got.Usage != nil {
		t.Errorf("got %+v, %v", got, err)
	}
}

// jsonEqual reports whether a and b hold the same JSON value.
func jsonEqual(t *testing.T, a, b []byte) bool {
	t.Helper()
	var va, vb any
	if err := json.Unmarshal(a, &va); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &vb); err != nil {
		t.Fatal(err)
	}
	return reflect.DeepEqual(va, vb)
}
