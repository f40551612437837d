package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/sagemaker-bidi/sagemaker-bidi/bidi"
	"github.com/sagemaker-bidi/sagemaker-bidi/bidi/biditest"
	"github.com/sagemaker-bidi/sagemaker-bidi/schema"
	"github.com/sagemaker-bidi/sagemaker-bidi/schema/framing"
)

// turnTimeout bounds one exchange with the model.
const turnTimeout = 2 * time.Minute

// demo runs the scripted session and prints a transcript.
type demo struct {
	out    io.Writer
	client *bidi.Client
	server *biditest.Server // nil against a real endpoint

	sess    *bidi.Session
	history []schema.ChatMessage
	dec     *framing.Decoder
	acc     schema.ChatAccumulator
}

func (d *demo) run(ctx context.Context, o *options, stdin io.Reader) error {
	start := time.Now()
	sess, err := d.client.Open(ctx, o.conn.OpenInput("demo-endpoint"))
	if err != nil {
		return err
	}
	defer sess.Close()
	d.sess = sess
	d.dec = framing.NewDecoder()
	fmt.Fprintf(d.out, "session opened in %s: the request is signed and on its way\n", since(start))

	resp, err := sess.Response(ctx)
	if err != nil {
		return err
	}
	fmt.Fprintf(d.out, "response: HTTP %d, invoked variant %q\n", resp.StatusCode, resp.InvokedProductionVariant)

	for _, p := range o.prompts {
		if err := d.chat(ctx, p); err != nil {
			return err
		}
	}
	if o.audioBytes > 0 {
		if err := d.audio(ctx, o.audioBytes, o.maxPart); err != nil {
			return err
		}
	}
	if o.interactive {
		fmt.Fprintln(d.out, "\ntype a prompt and press Enter (Ctrl-D to finish)")
		for next := readPrompts(ctx, stdin); ; {
			p, ok := next()
			if !ok {
				break
			}
			if err := d.chat(ctx, p); err != nil {
				return err
			}
		}
		if err := ctx.Err(); err != nil {
			return err // interrupted while waiting for a prompt
		}
	}

	if err := sess.CloseSend(); err != nil {
		return err
	}
	if m, err := d.recv(ctx); err != io.EOF {
		if err == nil {
			err = fmt.Errorf("a %d-byte %s message", len(m.Data), m.Type)
		}
		return fmt.Errorf("after CloseSend: got %v, want the end of the stream", err)
	}
	fmt.Fprintln(d.out, "\nclosed our side with a signed end frame; the model finished and the stream ended cleanly")
	if d.server != nil {
		d.report()
	}
	return nil
}

// chat sends one OpenAI chat request and rebuilds the streamed answer.
func (d *demo) chat(ctx context.Context, prompt string) error {
	ctx, cancel := context.WithTimeout(ctx, turnTimeout)
	defer cancel()
	d.history = append(d.history, schema.ChatMessage{Role: "user", Content: schema.TextContent(prompt)})
	req, err := json.Marshal(schema.ChatCompletionRequest{Model: "demo", Stream: true, Messages: d.history})
	if err != nil {
		return err
	}
	fmt.Fprintf(d.out, "\n> %s\n", prompt)
	if err := d.sess.Send(ctx, bidi.Message{Data: req, Type: bidi.DataTypeUTF8}); err != nil {
		return err
	}

	d.acc.Reset()
	parts, messages, received := 0, 0, 0
	// An SSE answer ends with [DONE]; a JSON Lines one with its final
	// chunk. The message carrying the end may go on after it: more
	// PARTIAL parts, its COMPLETE part, the blank line that closes the
	// [DONE] event. Read it to its end, so that the next Recv (the next
	// turn, the audio echo, the end of the stream) starts on a message
	// boundary instead of getting the rest of this answer.
	inMessage := false
	for !d.answered() || inMessage {
		p, err := d.sess.RecvPart(ctx)
		if err != nil {
			return err
		}
		parts++
		received += len(p.Data)
		inMessage = !p.Complete
		if p.Complete {
			messages++
		}
		if err := d.decode(p.Data); err != nil {
			return err
		}
	}
	res, err := d.acc.Result()
	if err != nil {
		return err
	}
	if len(res.Choices) == 0 {
		return errors.New("the model answered with no choices")
	}
	msg := res.Choices[0].Message
	if msg.ReasoningContent != "" {
		fmt.Fprintf(d.out, "< (reasoning) %s\n", msg.ReasoningContent)
	}
	fmt.Fprintf(d.out, "< %s\n", msg.Content)
	fmt.Fprintf(d.out, "  %d bytes of SSE in %d parts forming %d messages, cut anywhere; rebuilt by schema (finish_reason %q", received, parts, messages, res.Choices[0].FinishReason)
	if res.Usage != nil {
		fmt.Fprintf(d.out, ", %d completion tokens", res.Usage.CompletionTokens)
	}
	fmt.Fprintln(d.out, ")")
	d.history = append(d.history, msg.Param())
	return nil
}

// answered reports whether the answer being rebuilt is complete.
func (d *demo) answered() bool {
	return d.acc.Done() || (d.acc.Complete() && d.dec.Format() == framing.FormatJSONLines)
}

// decode frames the model's bytes and adds the events to the answer.
// Events that follow the end of the answer are an error: the model sent
// more than one answer to one request.
func (d *demo) decode(data []byte) error {
	d.dec.Write(data)
	for {
		ev, err := d.dec.Next()
		if errors.Is(err, framing.ErrNeedInput) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("decoding the model's answer: %w", err)
		}
		if d.answered() {
			return errors.New("the model sent more events after its answer")
		}
		if err := d.acc.AddEvent(ev); err != nil {
			return err
		}
	}
}

// recv receives the next message that is not the tail of an answer: a
// model may send the blank line that ends its last SSE event (or the line
// end of its last JSON line) as a message of its own, after the message
// holding [DONE]. Such whitespace goes to the decoder, as the tail of
// the answer, and is skipped.
func (d *demo) recv(ctx context.Context) (bidi.Message, error) {
	for {
		m, err := d.sess.Recv(ctx)
		if err != nil || m.Type != bidi.DataTypeUTF8 || len(m.Data) == 0 || len(bytes.TrimLeft(m.Data, "\r\n")) > 0 {
			return m, err
		}
		if err := d.decode(m.Data); err != nil {
			return m, err
		}
	}
}

// audio sends a binary message larger than a part and checks its echo.
func (d *demo) audio(ctx context.Context, size, maxPart int) error {
	ctx, cancel := context.WithTimeout(ctx, turnTimeout)
	defer cancel()
	pcm := make([]byte, size)
	for i := range pcm {
		pcm[i] = byte(i * 7)
	}
	limit := fmt.Sprintf("%d bytes", maxPart)
	if maxPart == 64<<10 {
		limit += " (Options.MaxPartSize, 64 KiB by default)"
	}
	fmt.Fprintf(d.out, "\n> %d bytes of binary audio: Send splits it into %d PARTIAL…COMPLETE parts of at most %s\n",
		size, (size+maxPart-1)/maxPart, limit)
	if err := d.sess.Send(ctx, bidi.Binary(pcm)); err != nil {
		return err
	}
	msg, err := d.recv(ctx)
	if err != nil {
		return err
	}
	same := "identical"
	if msg.Type != bidi.DataTypeBinary || !bytes.Equal(msg.Data, pcm) {
		same = "DIFFERENT"
	}
	fmt.Fprintf(d.out, "< echo of %d bytes, reassembled by Recv from the model's fragments: %s\n", len(msg.Data), same)
	if same != "identical" {
		return errors.New("the echoed audio differs from what was sent")
	}
	return nil
}

// report prints what the local server saw on the wire.
func (d *demo) report() {
	streams := d.server.Streams()
	if len(streams) == 0 {
		return
	}
	parts := streams[len(streams)-1].Received()
	fmt.Fprintf(d.out, "\nthe server verified %d signed envelopes (and the end frame); %d protocol violations\n", len(parts), len(d.server.Violations()))
	fmt.Fprintln(d.out, "every part is padded (P header) so the wire shows size buckets, not exact sizes:")
	for i, p := range parts {
		state := "PARTIAL"
		if p.Complete {
			state = "COMPLETE"
		}
		fmt.Fprintf(d.out, "  part %d: %-6s %-8s payload %6d B + padding %4d B = %6d B, envelope %6d B\n",
			i+1, p.Type, state, len(p.Data), p.Padding, len(p.Data)+p.Padding, p.EnvelopeLen)
	}
}
