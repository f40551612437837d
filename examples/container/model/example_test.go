package model_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http/httptest"
	"strings"

	"github.com/coder/websocket"

	"github.com/sagemaker-bidi/sagemaker-bidi/examples/container/model"
)

// A client sends an OpenAI chat request and rebuilds the streamed answer
// from the SSE chunks, one per WebSocket message.
func Example() {
	h := model.NewHandler(model.Options{})
	srv := httptest.NewServer(h)
	defer srv.Close()
	defer h.Close()

	ctx := context.Background()
	url := "ws" + strings.TrimPrefix(srv.URL, "http") + "/invocations-bidirectional-stream"
	c, _, err := websocket.Dial(ctx, url, nil)
	if err != nil {
		panic(err)
	}
	defer c.CloseNow()

	req := `{"model":"toy","messages":[{"role":"user","content":"hello"}],"stream":true}`
	if err := c.Write(ctx, websocket.MessageText, []byte(req)); err != nil {
		panic(err)
	}
	var reasoning, content strings.Builder
	for {
		_, msg, err := c.Read(ctx)
		if err != nil {
			panic(err)
		}
		data := strings.TrimSuffix(strings.TrimPrefix(string(msg), "data: "), "\n\n")
		if data == "[DONE]" {
			break
		}
		var chunk struct {
			Choices []struct {
				Delta struct {
					Content          string `json:"content"`
					ReasoningContent string `json:"reasoning_content"`
				} `json:"delta"`
			} `json:"choices"`
		}
		if err := json.Unmarshal([]byte(data), &chunk); err != nil {
			panic(err)
		}
		reasoning.WriteString(chunk.Choices[0].Delta.ReasoningContent)
		content.WriteString(chunk.Choices[0].Delta.Content)
	}
	c.Close(websocket.StatusNormalClosure, "")
	fmt.Println("reasoning:", reasoning.String())
	fmt.Println("content:", content.String())
	// Output:
	// reasoning: Okay, the user wrote "hello". I should repeat it back.
	// content: You said: hello
}
