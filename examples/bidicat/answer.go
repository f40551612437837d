package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/sagemaker-bidi/sagemaker-bidi/schema"
	"github.com/sagemaker-bidi/sagemaker-bidi/schema/framing"
)

// answerer rebuilds the model's answers from the events of -o answer. It
// tells what each response is from its first event (schema.DetectKind):
// OpenAI chat or text completion chunks, LMI token lines, or a whole
// response; a session may carry several responses one after the other.
type answerer struct {
	out  *output
	kind schema.Kind // of the response in progress; KindUnknown between responses
	chat schema.ChatAccumulator
	comp schema.CompletionAccumulator
	lmi  schema.LMIAccumulator
}

// jsonAnswer is the -json line of a rebuilt answer.
type jsonAnswer struct {
	Type      string `json:"type"`
	Kind      string `json:"kind"`
	Text      string `json:"text"`
	Reasoning string `json:"reasoning,omitempty"`
	Complete  bool   `json:"complete"`
	Answer    any    `json:"answer"`
}

// add adds one event; it prints the answer when the response is complete.
func (a *answerer) add(ev framing.Event, format framing.Format) error {
	if a.kind == schema.KindUnknown {
		if ev.Done {
			return nil // the [DONE] of a response already printed
		}
		a.kind = schema.DetectKind(ev.Data)
	}
	switch a.kind {
	case schema.KindChatChunk:
		if err := a.chat.AddEvent(ev); err != nil {
			return a.fail(err)
		}
		// An SSE response ends with [DONE]; a JSON Lines one with its
		// final chunk.
		if a.chat.Done() || (format == framing.FormatJSONLines && a.chat.Complete()) {
			return a.flush(true)
		}
	case schema.KindTextCompletion:
		if err := a.comp.AddEvent(ev); err != nil {
			return a.fail(err)
		}
		if a.comp.Done() || (format == framing.FormatJSONLines && a.comp.Complete()) {
			return a.flush(true)
		}
	case schema.KindLMIStreamLine:
		if err := a.lmi.AddEvent(ev); err != nil {
			return a.fail(err)
		}
		if a.lmi.Complete() {
			return a.flush(true)
		}
	case schema.KindChatCompletion:
		var c schema.ChatCompletion
		if err := ev.Decode(&c); err != nil {
			return a.fail(err)
		}
		text, reasoning := chatText(&c)
		return a.print(jsonAnswer{Kind: "chat", Text: text, Reasoning: reasoning, Complete: true, Answer: &c})
	case schema.KindLMIResponse:
		var rs schema.LMIResponses
		if err := ev.Decode(&rs); err != nil {
			return a.fail(err)
		}
		var texts []string
		for _, r := range rs {
			texts = append(texts, r.GeneratedText)
		}
		return a.print(jsonAnswer{Kind: "lmi", Text: strings.Join(texts, "\n"), Complete: true, Answer: rs})
	case schema.KindError:
		var e schema.ErrorResponse
		if err := ev.Decode(&e); err != nil {
			return a.fail(err)
		}
		return a.fail(&e)
	default:
		// Something else (a dynamic-batch line, an unknown JSON value):
		// print it as it is.
		var b bytes.Buffer
		if json.Compact(&b, ev.Data) != nil {
			b.Reset()
			b.Write(ev.Data)
		}
		return a.print(jsonAnswer{Kind: "other", Text: b.String(), Complete: true, Answer: json.RawMessage(b.Bytes())})
	}
	return nil
}

// flush prints the answer rebuilt so far and starts over.
func (a *answerer) flush(complete bool) error {
	var j jsonAnswer
	var err error
	switch a.kind {
	case schema.KindChatChunk:
		var c *schema.ChatCompletion
		c, err = a.chat.Result()
		j = jsonAnswer{Kind: "chat", Answer: c}
		j.Text, j.Reasoning = chatText(c)
	case schema.KindTextCompletion:
		var c *schema.TextCompletion
		c, err = a.comp.Result()
		var texts []string
		if c != nil {
			for _, ch := range c.Choices {
				texts = append(texts, ch.Text)
			}
		}
		j = jsonAnswer{Kind: "completion", Text: strings.Join(texts, "\n"), Answer: c}
	case schema.KindLMIStreamLine:
		var r *schema.LMIResponse
		r, err = a.lmi.Result()
		j = jsonAnswer{Kind: "lmi", Answer: r}
		if r != nil {
			j.Text = r.GeneratedText
		}
	default:
		return nil
	}
	j.Complete = complete && err == nil
	if perr := a.print(j); perr != nil {
		return perr
	}
	if err != nil && !errors.Is(err, schema.ErrIncomplete) {
		return a.fail(err)
	}
	return nil
}

// finish is called at the end of the stream: an answer still in progress
// was cut off, and is printed as far as it goes.
func (a *answerer) finish() error {
	switch a.kind {
	case schema.KindChatChunk, schema.KindTextCompletion, schema.KindLMIStreamLine:
		if err := a.flush(false); err != nil {
			return err
		}
		return a.out.problem("answer", schema.ErrIncomplete)
	}
	return nil
}

// print prints an answer and resets the accumulators for the next one.
func (a *answerer) print(j jsonAnswer) error {
	a.reset()
	a.out.answers++
	if a.out.o.json {
		j.Type = "answer"
		return a.out.emit(j)
	}
	return a.out.write([]byte(j.Text + "\n"))
}

// fail reports an answer that could not be rebuilt and starts over.
func (a *answerer) fail(err error) error {
	a.reset()
	var er *schema.ErrorResponse
	if errors.As(err, &er) {
		return a.out.problem("model", fmt.Errorf("the model answered with an error: %w", er))
	}
	return a.out.problem("answer", err)
}

func (a *answerer) reset() {
	a.kind = schema.KindUnknown
	a.chat.Reset()
	a.comp.Reset()
	a.lmi.Reset()
}

// chatText returns the content and the reasoning of a chat completion's
// choices, one line per choice.
func chatText(c *schema.ChatCompletion) (text, reasoning string) {
	if c == nil {
		return "", ""
	}
	var t, r []string
	for _, ch := range c.Choices {
		t = append(t, ch.Message.Content)
		if ch.Message.ReasoningContent != "" {
			r = append(r, ch.Message.ReasoningContent)
		}
	}
	return strings.Join(t, "\n"), strings.Join(r, "\n")
}
