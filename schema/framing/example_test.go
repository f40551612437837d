package framing_test

import (
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/sagemaker-bidi/sagemaker-bidi/schema/framing"
)

// A chat stream in SSE, as vLLM on SageMaker sends it: chunks without
// blank lines between them, then [DONE].
const chatStream = `data: {"choices":[{"index":0,"delta":{"role":"assistant","content":""}}]}
data: {"choices":[{"index":0,"delta":{"content":"Four"}}]}
data: {"choices":[{"index":0,"delta":{"content":"."},"finish_reason":"stop"}]}
data: [DONE]
`

func ExampleReader() {
	r := framing.NewReader(strings.NewReader(chatStream))
	for {
		ev, err := r.Next()
		if err == io.EOF {
			break // the stream ended cleanly between events
		}
		if err != nil {
			fmt.Println("error:", err)
			return
		}
		if ev.Done {
			fmt.Println("[DONE] at offset", ev.Offset)
			continue
		}
		var chunk struct {
			Choices []struct {
				Delta struct{ Content string }
			}
		}
		if err := ev.Decode(&chunk); err != nil {
			fmt.Println("error:", err)
			return
		}
		fmt.Printf("%q at offset %d\n", chunk.Choices[0].Delta.Content, ev.Offset)
	}
	fmt.Println(r.Format())
	// Output:
	// "" at offset 6
	// "Four" at offset 80
	// "." at offset 139
	// [DONE] at offset 218
	// sse
}

// A receive loop gets messages cut at arbitrary points; the decoder
// returns each event as soon as the bytes written show where it ends.
func ExampleDecoder() {
	messages := []string{
		`{"token": {"id": 304, "text": "Deep "`,
		"}}\n{\"token\": {\"id\": 11157, \"te",
		"xt\": \" Learning\"}}\n{\n  \"generated_text\": \"Deep Learning\"\n",
		"}\n",
	}
	dec := framing.NewDecoder()
	for i, msg := range messages {
		dec.Write([]byte(msg))
		for {
			ev, err := dec.Next()
			if err == framing.ErrNeedInput {
				break // wait for the next message
			}
			if err != nil {
				fmt.Println("error:", err)
				return
			}
			fmt.Printf("message %d ends %s\n", i, ev.Data)
		}
	}
	dec.Close()
	_, err := dec.Next()
	fmt.Println(dec.Format(), err)
	// Output:
	// message 1 ends {"token": {"id": 304, "text": "Deep "}}
	// message 2 ends {"token": {"id": 11157, "text": " Learning"}}
	// message 3 ends {
	//   "generated_text": "Deep Learning"
	// }
	// jsonlines EOF
}

// With Resync, malformed input is reported with its offset and framing
// continues at the next event.
func ExampleOptions_resync() {
	stream := "{\"outputs\": [\"This\"]}\n}\n{\"outputs\": [\"is\"]}\n"
	r := framing.NewReader(strings.NewReader(stream), func(o *framing.Options) { o.Resync = true })
	for {
		ev, err := r.Next()
		if err == io.EOF {
			break
		}
		var syn *framing.SyntaxError
		if errors.As(err, &syn) {
			fmt.Println("skipped malformed input at offset", syn.Offset)
			continue
		}
		fmt.Println(string(ev.Data))
	}
	// Output:
	// {"outputs": ["This"]}
	// skipped malformed input at offset 22
	// {"outputs": ["is"]}
}

// A stream that stops inside a value is not a clean end.
func ExampleSyntaxError_truncated() {
	r := framing.NewReader(strings.NewReader(`data: {"choices":[{"delta":{"content":"Hel`))
	_, err := r.Next()
	fmt.Println(errors.Is(err, io.ErrUnexpectedEOF))
	fmt.Println(err)
	// Output:
	// true
	// framing: syntax error at offset 42: input ended inside a JSON value
}

// An event larger than the limit fails with an error that matches
// ErrEventTooLarge.
func ExampleEventTooLargeError() {
	r := framing.NewReader(strings.NewReader(`{"text": "a long answer"}`), func(o *framing.Options) { o.MaxEventSize = 16 })
	_, err := r.Next()
	var tooLarge *framing.EventTooLargeError
	fmt.Println(errors.Is(err, framing.ErrEventTooLarge), errors.As(err, &tooLarge) && tooLarge.Limit == 16)
	// Output:
	// true true
}
