package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"

	"github.com/sagemaker-bidi/sagemaker-bidi/bidi"
	"github.com/sagemaker-bidi/sagemaker-bidi/examples/internal/cli"
	"github.com/sagemaker-bidi/sagemaker-bidi/schema"
	"github.com/sagemaker-bidi/sagemaker-bidi/schema/framing"
)

// conversation is a multi-turn chat over one session.
type conversation struct {
	out       io.Writer
	maxTokens int

	sess    *bidi.Session
	events  *framing.Reader // the model's bytes, framed into events
	history []schema.ChatMessage
	acc     schema.ChatAccumulator
}

func (c *conversation) run(ctx context.Context, client *bidi.Client, in *bidi.OpenInput, prompts []string) error {
	sess, err := client.Open(ctx, in)
	if err != nil {
		return err
	}
	defer sess.Close()
	c.sess = sess
	// One reader for the whole session: the bytes of every answer, in
	// order, regardless of how the model cut them into messages and parts.
	c.events = framing.NewReader(sess.Reader(ctx))

	resp, err := sess.Response(ctx)
	if err != nil {
		return err
	}
	fmt.Fprintf(c.out, "session open: invoked variant %q\n", resp.InvokedProductionVariant)

	for _, p := range prompts {
		if err := c.turn(ctx, p); err != nil {
			return err
		}
	}

	// No more questions: end our side; the stream then ends cleanly.
	if err := sess.CloseSend(); err != nil {
		return err
	}
	if _, err := c.events.Next(); err != io.EOF {
		return fmt.Errorf("after the last answer: want the end of the stream, got %v", err)
	}
	fmt.Fprintf(c.out, "\nsession closed cleanly after %s\n", plural(len(prompts), "turn"))
	return nil
}

// turn asks one question and prints the answer as it streams.
func (c *conversation) turn(ctx context.Context, prompt string) error {
	c.history = append(c.history, schema.ChatMessage{Role: "user", Content: schema.TextContent(prompt)})
	req, err := json.Marshal(schema.ChatCompletionRequest{
		Messages:      c.history,
		MaxTokens:     c.maxTokens,
		Stream:        true,
		StreamOptions: &schema.StreamOptions{IncludeUsage: true},
	})
	if err != nil {
		return err
	}
	fmt.Fprintf(c.out, "\nyou> %s\n", prompt)
	if err := c.sess.Send(ctx, bidi.Message{Data: req, Type: bidi.DataTypeUTF8}); err != nil {
		return err
	}
	fmt.Fprintf(c.out, "      [sent a %d-byte request carrying %s of history]\n", len(req), plural(len(c.history), "message"))

	c.acc.Reset()
	p := &cli.Printer{Out: c.out}
	// An SSE answer ends with "data: [DONE]"; a JSON Lines one with its
	// last chunk. Whatever the model sent after that in the same message
	// or the next (the blank line closing the [DONE] event, say) stays in
	// c.events, which frames the whole session's bytes: it is read as the
	// start of the next turn, or before the end of the stream, never lost
	// nor mistaken for an answer.
	for !c.acc.Done() && !(c.events.Format() == framing.FormatJSONLines && c.acc.Complete()) {
		ev, err := c.events.Next()
		if err == io.EOF {
			return errors.New("the stream ended in the middle of an answer")
		}
		if err != nil {
			return err
		}
		if err := c.acc.AddEvent(ev); err != nil {
			return err
		}
		var chunk schema.ChatCompletionChunk
		if !ev.Done && ev.Decode(&chunk) == nil {
			for _, ch := range chunk.Choices {
				if ch.Index == 0 {
					p.Print("model (thinking)", ch.Delta.ReasoningContent)
					p.Print("model", ch.Delta.Content)
				}
			}
		}
	}
	p.End()

	res, err := c.acc.Result()
	if err != nil {
		return err
	}
	if len(res.Choices) == 0 {
		return errors.New("the model answered with no choices")
	}
	ch := res.Choices[0]
	fmt.Fprintf(c.out, "      [rebuilt by schema: %d bytes of content, %d of reasoning, finish_reason %q",
		len(ch.Message.Content), len(ch.Message.ReasoningContent), ch.FinishReason)
	if res.Usage != nil {
		fmt.Fprintf(c.out, ", %d completion tokens", res.Usage.CompletionTokens)
	}
	fmt.Fprintln(c.out, "]")
	// The rebuilt answer joins the history: the next turn has context.
	c.history = append(c.history, ch.Message.Param())
	return nil
}

// plural returns "1 message", "2 messages", and so on for noun.
func plural(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}
