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
//
// Without -json the text of a streamed answer (its first choice) is
// printed live, delta by delta as the events arrive, and the line is
// ended when the answer is complete; with -json each answer is one
// object, printed once complete, or as far as it got, with "complete":
// false, when the stream ends or fails first.
type answerer struct {
	out  *output
	kind schema.Kind // of the response in progress; KindUnknown between responses
	chat schema.ChatAccumulator
	comp schema.CompletionAccumulator
	lmi  schema.LMIAccumulator

	live  bool       // text of the answer in progress was printed live
	delta deltaChunk // decoding buffer of liveText
}

// deltaChunk holds what a streamed event adds to the text of the first
// choice: a chat delta's content, a text completion's text, an LMI
// token's text.
type deltaChunk struct {
	Choices []struct {
		Index int    `json:"index"`
		Text  string `json:"text"`
		Delta struct {
			Content string `json:"content"`
		} `json:"delta"`
	} `json:"choices"`
	Token struct {
		Text    string `json:"text"`
		Special bool   `json:"special"`
	} `json:"token"`
}

// liveText prints, without -json, the text ev adds to the first choice
// of the answer in progress.
func (a *answerer) liveText(ev framing.Event) error {
	if a.out.o.json || ev.Done {
		return nil
	}
	a.delta = deltaChunk{}
	if ev.Decode(&a.delta) != nil {
		return nil // the accumulator reports it
	}
	var text string
	switch a.kind {
	case schema.KindLMIStreamLine:
		if !a.delta.Token.Special {
			text = a.delta.Token.Text
		}
	default:
		for _, c := range a.delta.Choices {
			if c.Index == 0 {
				text += c.Delta.Content + c.Text
			}
		}
	}
	if text == "" {
		return nil
	}
	a.live = true
	return a.out.write([]byte(text))
}

// jsonAnswer is the -json line of a rebuilt answer.
type jsonAnswer struct {
	Type      string `json:"type"`
	Kind      string `json:"kind"`
	Text      string `json:"text"`
	Reasoning string `json:"reasoning,omitempty"`
	Complete  bool   `json:"complete"`
	Answer    any    `json:"answer"`

	// others is the text of the choices after the first, a line each,
	// for an answer whose first choice was printed live.
	others string
}

// add adds one event; it prints the answer when the response is complete.
func (a *answerer) add(ev framing.Event, format framing.Format) error {
	if a.kind == schema.KindUnknown {
		if ev.Done {
			return nil // the [DONE] of a response already printed
		}
		a.kind = schema.DetectKind(ev.Data)
		a.out.st.answerBegin()
	}
	switch a.kind {
	case schema.KindChatChunk:
		if err := a.chat.AddEvent(ev); err != nil {
			return a.fail(err)
		}
		if err := a.liveText(ev); err != nil {
			return err
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
		if err := a.liveText(ev); err != nil {
			return err
		}
		if a.comp.Done() || (format == framing.FormatJSONLines && a.comp.Complete()) {
			return a.flush(true)
		}
	case schema.KindLMIStreamLine:
		if err := a.lmi.AddEvent(ev); err != nil {
			return a.fail(err)
		}
		if err := a.liveText(ev); err != nil {
			return err
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
		if c != nil {
			for _, ch := range c.Choices[min(1, len(c.Choices)):] {
				j.others += ch.Message.Content + "\n"
			}
		}
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
		for _, t := range texts[min(1, len(texts)):] {
			j.others += t + "\n"
		}
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

// finish is called at the end of the stream, clean or not: an answer
// still in progress was cut off, and is printed as far as it goes,
// marked incomplete (with why on stderr, or "complete": false with
// -json). After a clean end it is a problem of the model's output.
func (a *answerer) finish(why string) error {
	switch a.kind {
	case schema.KindChatChunk, schema.KindTextCompletion, schema.KindLMIStreamLine:
		if err := a.flush(false); err != nil {
			return err
		}
		return a.out.problem("answer", fmt.Errorf("%w: %s; the answer above is as far as it got", schema.ErrIncomplete, why))
	}
	return nil
}

// print prints an answer and resets the accumulators for the next one.
// An answer printed live gets its line end, and the choices after the
// first one line each.
func (a *answerer) print(j jsonAnswer) error {
	live := a.live
	a.reset()
	a.out.answers++
	a.out.st.answerEnd()
	if a.out.o.json {
		j.Type = "answer"
		return a.out.emit(j)
	}
	if live {
		return a.out.write([]byte("\n" + j.others))
	}
	return a.out.write([]byte(j.Text + "\n"))
}

// fail reports an answer that could not be rebuilt and starts over.
func (a *answerer) fail(err error) error {
	if a.live && !a.out.o.json {
		a.out.write([]byte("\n"))
	}
	if a.kind != schema.KindUnknown {
		a.out.st.answerEnd()
	}
	a.reset()
	var er *schema.ErrorResponse
	if errors.As(err, &er) {
		return a.out.problem("model", fmt.Errorf("the model answered with an error: %w", er))
	}
	return a.out.problem("answer", err)
}

func (a *answerer) reset() {
	a.kind = schema.KindUnknown
	a.live = false
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
