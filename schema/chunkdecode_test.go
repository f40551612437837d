package schema

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/sagemaker-bidi/sagemaker-bidi/schema/framing"
	"github.com/sagemaker-bidi/sagemaker-bidi/schema/internal/streamtest"
)

// checkChunkDecoder decodes data as a chat and as a text chunk with a
// fresh chunkDecoder and with encoding/json, and fails if the decoder
// accepts what encoding/json rejects or decodes it differently. It
// returns whether the decoder accepted data as a chat chunk and as a
// text chunk.
func checkChunkDecoder(t *testing.T, data []byte) (chat, text bool) {
	t.Helper()
	var d chunkDecoder
	var got, want ChatCompletionChunk
	if chat = d.decodeChat(data, &got); chat {
		if err := json.Unmarshal(data, &want); err != nil {
			t.Fatalf("%q: accepted as a chat chunk; encoding/json: %v", data, err)
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("%q: chat chunk\n got %+v\nwant %+v", data, got, want)
		}
	}
	var gotText, wantText TextCompletion
	if text = d.decodeText(data, &gotText); text {
		if err := json.Unmarshal(data, &wantText); err != nil {
			t.Fatalf("%q: accepted as a text chunk; encoding/json: %v", data, err)
		}
		if !reflect.DeepEqual(gotText, wantText) {
			t.Fatalf("%q: text chunk\n got %+v\nwant %+v", data, gotText, wantText)
		}
	}
	return chat, text
}

// chunkDecoderCases are payloads the chunk decoder reads itself (fast)
// or leaves to encoding/json (slow), each as a chat chunk and as a text
// chunk.
var chunkDecoderCases = []struct {
	data       string
	chat, text bool
}{
	{`{"id":"c","object":"chat.completion.chunk","created":1752128962,"model":"m","choices":[{"index":0,"delta":{"role":"assistant","content":""},"logprobs":null,"finish_reason":null,"stop_reason":null}],"usage":null}`, true, true},
	{` { "id" : "c" , "choices" : [ { "index" : 2 , "delta" : { "reasoning_content" : "caf\u00e9 \"q\" \ud83d\ude00 \/" } , "finish_reason" : "stop" , "stop_reason" : 128001 } ] } `, true, true},
	{`{"choices":[{"index":1,"text":"If","finish_reason":"length","stop_reason":"\n"}],"usage":{"prompt_tokens":3,"completion_tokens":1,"total_tokens":4,"prompt_tokens_details":{"cached_tokens":2}},"kv_transfer_params":null,"prompt_logprobs":null}`, true, true},
	{`{"choices":[],"usage":{"prompt_tokens_details":null},"service_tier":"default","system_fingerprint":null}`, true, true},
	{`{"zz":{"a":[1,-2.5e-3,"x\\y",true,false,null,{}]},"choices":[null,{"delta":null,"refusal":"no","stop_reason":-1.5E+2}]}`, true, true},
	{`{"choices":[{"delta":{"tool_calls":[],"function_call":null}}]}`, true, true},
	{`null`, true, true},
	{`{}`, true, true},
	{"{\"id\":\"\u00e9\xe2\x82\xac\"}", true, true},
	// Left to encoding/json.
	{`{"ID":"c"}`, false, false},                                          // matches "id" case-insensitively
	{`{"ſervice_tier":"x"}`, false, false},                                // matches "service_tier" with Unicode folding
	{`{"id":"a","id":"b"}`, false, false},                                 // duplicate key
	{"{\"id\":\"\xff\"}", false, false},                                   // invalid UTF-8, replaced by encoding/json
	{`{"id":"\ud83d"}`, false, false},                                     // lone surrogate, replaced by encoding/json
	{`{"choices":[{"index":1.0}]}`, false, false},                         // not an int
	{`{"choices":[{"index":12345678901234567890}]}`, false, false},        // overflow
	{`{"choices":[{"index":0,"logprobs":{"content":[]}}]}`, false, false}, // log probabilities
	{`{"choices":[{"delta":{"tool_calls":[{"index":0}]}}]}`, false, true}, // tool calls (no such field in text choices)
	{`{"choices":[{"delta":{"function_call":{"name":"f"}}}]}`, false, true},
	{`{"choices":[{"text":"a","prompt_logprobs":[null]}]}`, true, false},
	{`{"kv_transfer_params":{}}`, true, false},
	{`{"id":"c"} x`, false, false},                                                      // trailing bytes
	{"{}\x00garbage", false, false},                                                     // a NUL byte is not the end
	{"{\"id\":\"c\"}\x00", false, false},                                                // nor a trailing one
	{`{"id":"c",}`, false, false},                                                       // syntax error
	{`{"choices":[{"stop_reason":true}]}`, false, false},                                // not a string or number
	{`{"a":` + strings.Repeat("[", 100) + strings.Repeat("]", 100) + `}`, false, false}, // deep
	{`{"id":"c","x":"\q"}`, false, false},                                               // bad escape in a skipped value
	{`[{"id":"c"}]`, false, false},
}

func TestChunkDecoderMatchesEncodingJSON(t *testing.T) {
	for _, tt := range chunkDecoderCases {
		chat, text := checkChunkDecoder(t, []byte(tt.data))
		if chat != tt.chat || text != tt.text {
			t.Errorf("%s: decoded as chat %v, text %v; want %v, %v", tt.data, chat, text, tt.chat, tt.text)
		}
	}
}

// TestChunkDecoderReadsStreamChunks checks that the chunks of a typical
// stream take the fast path, reusing their repeated strings.
func TestChunkDecoderReadsStreamChunks(t *testing.T) {
	const n = 40
	var d chunkDecoder
	var prev ChatCompletionChunk
	for i := range n {
		var c ChatCompletionChunk
		if !d.decodeChat([]byte(streamtest.ChatChunk(i, n)), &c) {
			t.Fatalf("chunk %d left to encoding/json", i)
		}
		if i > 0 && (c.ID != prev.ID || strings.Clone(c.Model) != prev.Model) {
			t.Fatalf("chunk %d: %+v after %+v", i, c, prev)
		}
		prev = c
	}
}

// TestChatAccumulateAllocations checks the allocations of adding a
// chunk in the middle of a stream: at most one (a new delta string; the
// accumulated text grows by doubling).
func TestChatAccumulateAllocations(t *testing.T) {
	const n = 1000
	var acc ChatAccumulator
	for i := range n / 2 {
		if err := acc.AddEvent(framing.Event{Data: []byte(streamtest.ChatChunk(i, n))}); err != nil {
			t.Fatal(err)
		}
	}
	data := []byte(streamtest.ChatChunk(n/2, n))
	allocs := testing.AllocsPerRun(100, func() {
		if err := acc.AddEvent(framing.Event{Data: data}); err != nil {
			t.Fatal(err)
		}
	})
	if allocs > 1 {
		t.Errorf("%.1f allocations per chunk", allocs)
	}
}

// FuzzChunkDecoder checks the chunk decoder against encoding/json on
// arbitrary payloads.
func FuzzChunkDecoder(f *testing.F) {
	for _, tt := range chunkDecoderCases {
		f.Add([]byte(tt.data))
	}
	f.Add([]byte(streamtest.ChatChunk(1, 4)))
	f.Fuzz(func(t *testing.T, data []byte) {
		checkChunkDecoder(t, data)
	})
}
