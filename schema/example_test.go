package schema_test

import (
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/sagemaker-bidi/sagemaker-bidi/schema"
	"github.com/sagemaker-bidi/sagemaker-bidi/schema/framing"
)

// A chat stream in SSE, as vLLM on SageMaker sends it: reasoning deltas,
// content deltas, then [DONE].
const chatStream = `data: {"id":"chatcmpl-1","object":"chat.completion.chunk","created":1752128962,"model":"/opt/ml/model","choices":[{"index":0,"delta":{"role":"assistant","content":""},"finish_reason":null}]}
data: {"id":"chatcmpl-1","object":"chat.completion.chunk","created":1752128962,"model":"/opt/ml/model","choices":[{"index":0,"delta":{"reasoning_content":"Easy."},"finish_reason":null}]}
data: {"id":"chatcmpl-1","object":"chat.completion.chunk","created":1752128962,"model":"/opt/ml/model","choices":[{"index":0,"delta":{"content":"Four"},"finish_reason":null}]}
data: {"id":"chatcmpl-1","object":"chat.completion.chunk","created":1752128962,"model":"/opt/ml/model","choices":[{"index":0,"delta":{"content":"."},"finish_reason":"stop"}]}
data: [DONE]
`

func ExampleChatAccumulator() {
	r := framing.NewReader(strings.NewReader(chatStream))
	var acc schema.ChatAccumulator
	for {
		ev, err := r.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			fmt.Println("error:", err)
			return
		}
		if err := acc.AddEvent(ev); err != nil {
			fmt.Println("error:", err)
			return
		}
	}
	c, err := acc.Result()
	if err != nil {
		fmt.Println("error:", err)
		return
	}
	m := c.Choices[0].Message
	fmt.Println(c.Object, m.Role, c.Choices[0].FinishReason)
	fmt.Printf("reasoning %q, content %q\n", m.ReasoningContent, m.Content)
	// Output:
	// chat.completion assistant stop
	// reasoning "Easy.", content "Four."
}

// A receive loop gets messages cut at arbitrary points: a framing.Decoder
// returns each event as soon as its last byte arrives, and the
// accumulator rebuilds the LMI response.
func ExampleLMIAccumulator() {
	messages := []string{
		"data: {\"token\": {\"id\": 304, \"text\": \"Deep \", \"log_p",
		"rob\": -0.05}}\ndata: {\"token\": {\"id\": 11157, \"text\": \" Lear",
		"ning\", \"log_prob\": -1.28}}\ndata:{\n    \"token\": {\"id\": 278, \"text\": \" is\", \"log_prob\": -0.01},\n",
		"    \"generated_text\": \"Deep Learning is\"\n}\n",
	}
	dec := framing.NewDecoder()
	var acc schema.LMIAccumulator
	for i, msg := range messages {
		dec.Write([]byte(msg))
		for {
			ev, err := dec.Next()
			if err == framing.ErrNeedInput {
				break
			}
			if err != nil {
				fmt.Println("error:", err)
				return
			}
			fmt.Printf("message %d completes an event at offset %d\n", i, ev.Offset)
			if err := acc.AddEvent(ev); err != nil {
				fmt.Println("error:", err)
				return
			}
		}
	}
	dec.Close()
	if _, err := dec.Next(); err != io.EOF {
		fmt.Println("error:", err)
	}
	res, err := acc.Result()
	fmt.Printf("%q, %v\n", res.GeneratedText, err)
	// Output:
	// message 1 completes an event at offset 6
	// message 2 completes an event at offset 71
	// message 3 completes an event at offset 141
	// "Deep Learning is", <nil>
}

func ExampleDetectKind() {
	for _, p := range []string{
		`{"token": {"id": 763, "text": " In", "log_prob": -3.97}}`,
		`{"outputs": ["This"]}`,
		`[{"generated_text": "Deep Learning is a really cool field"}]`,
		`{"id":"cmpl-1","object":"text_completion","choices":[{"index":0,"text":"If"}],"usage":null}`,
		`{"code": 424, "message": "invoke handler failure", "error": "<error details>"}`,
	} {
		fmt.Println(schema.DetectKind([]byte(p)))
	}
	// Output:
	// LMI stream line
	// dynamic-batch output
	// LMI response
	// text completion
	// error
}

// A response that stops before its last chunk is reported as cut off.
func ExampleErrIncomplete() {
	var acc schema.ChatAccumulator
	r := framing.NewReader(strings.NewReader(`data: {"id":"c","choices":[{"index":0,"delta":{"content":"Hel"},"finish_reason":null}]}` + "\n"))
	for {
		ev, err := r.Next()
		if err != nil {
			break
		}
		acc.AddEvent(ev)
	}
	c, err := acc.Result()
	fmt.Printf("%q %v\n", c.Choices[0].Message.Content, errors.Is(err, schema.ErrIncomplete))
	// Output:
	// "Hel" true
}
