package main

import (
	"errors"
	"fmt"
	"io"

	"github.com/sagemaker-bidi/sagemaker-bidi/examples/internal/cli"
	"github.com/sagemaker-bidi/sagemaker-bidi/schema"
	"github.com/sagemaker-bidi/sagemaker-bidi/schema/framing"
)

// builder prints the answer as its events arrive and rebuilds it with
// the accumulator for its kind, told by the first event
// (schema.DetectKind): OpenAI chat or text completion chunks, or LMI
// token lines.
type builder struct {
	cli.Printer
	kind   schema.Kind
	chat   schema.ChatAccumulator
	comp   schema.CompletionAccumulator
	lmi    schema.LMIAccumulator
	events int
}

// drain handles the events the decoder has framed so far.
func (b *builder) drain(dec *framing.Decoder) error {
	for {
		ev, err := dec.Next()
		if errors.Is(err, framing.ErrNeedInput) || err == io.EOF {
			return nil
		}
		if err != nil {
			return fmt.Errorf("decoding the model's output: %w", err)
		}
		b.events++
		if err := b.add(ev); err != nil {
			return err
		}
	}
}

func (b *builder) add(ev framing.Event) error {
	if b.kind == schema.KindUnknown {
		if ev.Done {
			return nil
		}
		b.kind = schema.DetectKind(ev.Data)
	}
	switch b.kind {
	case schema.KindChatChunk:
		if err := b.chat.AddEvent(ev); err != nil {
			return err
		}
		var c schema.ChatCompletionChunk
		if !ev.Done && ev.Decode(&c) == nil {
			for _, ch := range c.Choices {
				b.Print("model (thinking)", ch.Delta.ReasoningContent)
				b.Print("model", ch.Delta.Content)
			}
		}
	case schema.KindTextCompletion:
		if err := b.comp.AddEvent(ev); err != nil {
			return err
		}
		var c schema.TextCompletion
		if !ev.Done && ev.Decode(&c) == nil {
			for _, ch := range c.Choices {
				b.Print("model", ch.Text)
			}
		}
	case schema.KindLMIStreamLine:
		if err := b.lmi.AddEvent(ev); err != nil {
			return err
		}
		var l schema.LMIStreamLine
		if !ev.Done && ev.Decode(&l) == nil && !l.Token.SpecialToken {
			b.Print("model", l.Token.Text)
		}
	default:
		return fmt.Errorf("the model sent a %s payload, not a stream this example rebuilds", b.kind)
	}
	return nil
}

// report prints the rebuilt answer; a cut-off answer is an error.
func (b *builder) report(out io.Writer) error {
	switch b.kind {
	case schema.KindChatChunk:
		res, err := b.chat.Result()
		if err != nil {
			return err
		}
		for _, ch := range res.Choices {
			fmt.Fprintf(out, "      [rebuilt chat completion: content %q, %d bytes of reasoning, finish_reason %q",
				ch.Message.Content, len(ch.Message.ReasoningContent), ch.FinishReason)
		}
		if res.Usage != nil {
			fmt.Fprintf(out, ", %d completion tokens", res.Usage.CompletionTokens)
		}
		fmt.Fprintln(out, "]")
	case schema.KindTextCompletion:
		res, err := b.comp.Result()
		if err != nil {
			return err
		}
		for _, ch := range res.Choices {
			fmt.Fprintf(out, "      [rebuilt text completion: %q, finish_reason %q]\n", ch.Text, ch.FinishReason)
		}
	case schema.KindLMIStreamLine:
		res, err := b.lmi.Result()
		if err != nil {
			return err
		}
		fmt.Fprintf(out, "      [rebuilt LMI response: generated_text %q]\n", res.GeneratedText)
	default:
		return errors.New("the model sent no answer")
	}
	return nil
}
