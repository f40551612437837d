package schema_test

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/sagemaker-bidi/sagemaker-bidi/bidi"
	"github.com/sagemaker-bidi/sagemaker-bidi/bidi/biditest"
	"github.com/sagemaker-bidi/sagemaker-bidi/schema"
	"github.com/sagemaker-bidi/sagemaker-bidi/schema/framing"
)

// This example sends OpenAI chat requests over one bidirectional session,
// for two turns, and rebuilds each streamed answer. The demo model cuts its
// server-sent events at random part boundaries; the session's Reader joins
// the incoming bytes and a framing.Reader frames them, so the split points
// do not matter. [DONE] ends each answer, not the stream.
func Example_bidiSession() {
	srv := biditest.NewServer(biditest.DemoModel(&biditest.DemoOptions{Seed: 42}))
	defer srv.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	sess, err := srv.Client().Open(ctx, &bidi.OpenInput{EndpointName: "chat"})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer sess.Close()
	events := framing.NewReader(sess.Reader(ctx))

	var history []schema.ChatMessage
	for _, prompt := range []string{"What is SageMaker?", "And bidirectional streaming?"} {
		history = append(history, schema.ChatMessage{Role: "user", Content: schema.TextContent(prompt)})
		req, _ := json.Marshal(schema.ChatCompletionRequest{Model: "demo", Stream: true, Messages: history})
		if err := sess.Send(ctx, bidi.Message{Data: req, Type: bidi.DataTypeUTF8}); err != nil {
			fmt.Println(err)
			return
		}

		var acc schema.ChatAccumulator
		for !acc.Done() {
			ev, err := events.Next()
			if err != nil {
				fmt.Println(err)
				return
			}
			if err := acc.AddEvent(ev); err != nil {
				fmt.Println(err)
				return
			}
		}
		answer, err := acc.Result()
		if err != nil {
			fmt.Println(err)
			return
		}
		msg := answer.Choices[0].Message
		fmt.Printf("%s: %s (%s)\n", msg.Role, msg.Content, answer.Choices[0].FinishReason)
		history = append(history, msg.Param())
	}
	// Output:
	// assistant: You said: What is SageMaker? (stop)
	// assistant: You said: And bidirectional streaming? (stop)
}
