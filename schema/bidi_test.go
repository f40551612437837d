package schema_test

import (
	"context"
	"encoding/json"
	"errors"
	"reflect"
	"testing"
	"time"

	"github.com/sagemaker-bidi/sagemaker-bidi/bidi"
	"github.com/sagemaker-bidi/sagemaker-bidi/bidi/biditest"
	"github.com/sagemaker-bidi/sagemaker-bidi/schema"
	"github.com/sagemaker-bidi/sagemaker-bidi/schema/framing"
)

// chatOverBidi runs two chat turns on one session against the demo model
// cut with the given seed and returns the rebuilt answers. push selects
// the push-style Decoder fed by RecvPart instead of a Reader over the
// session.
func chatOverBidi(t *testing.T, seed uint64, maxCut int, push bool) []*schema.ChatCompletion {
	t.Helper()
	srv := biditest.NewServer(biditest.DemoModel(&biditest.DemoOptions{Seed: seed, MaxCut: maxCut}))
	defer srv.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	sess, err := srv.Client().Open(ctx, &bidi.OpenInput{EndpointName: "chat"})
	if err != nil {
		t.Fatal(err)
	}
	defer sess.Close()

	reader := framing.NewReader(sess.Reader(ctx))
	dec := framing.NewDecoder()
	next := func() (framing.Event, error) {
		if !push {
			return reader.Next()
		}
		for {
			ev, err := dec.Next()
			if !errors.Is(err, framing.ErrNeedInput) {
				return ev, err
			}
			p, err := sess.RecvPart(ctx)
			if err != nil {
				return framing.Event{}, err
			}
			dec.Write(p.Data)
		}
	}

	var answers []*schema.ChatCompletion
	var history []schema.ChatMessage
	for _, prompt := range []string{"héllo — wörld 👋", "second turn"} {
		history = append(history, schema.ChatMessage{Role: "user", Content: schema.TextContent(prompt)})
		req, err := json.Marshal(schema.ChatCompletionRequest{Model: "demo", Stream: true, Messages: history})
		if err != nil {
			t.Fatal(err)
		}
		if err := sess.Send(ctx, bidi.Message{Data: req, Type: bidi.DataTypeUTF8}); err != nil {
			t.Fatal(err)
		}
		var acc schema.ChatAccumulator
		for !acc.Done() {
			ev, err := next()
			if err != nil {
				t.Fatalf("seed %d: %v", seed, err)
			}
			if err := acc.AddEvent(ev); err != nil {
				t.Fatalf("seed %d: %v", seed, err)
			}
		}
		res, err := acc.Result()
		if err != nil {
			t.Fatal(err)
		}
		answers = append(answers, res)
		history = append(history, res.Choices[0].Message.Param())
	}
	if err := sess.CloseSend(); err != nil {
		t.Fatal(err)
	}
	if _, err := next(); err == nil {
		t.Fatal("an event after the last answer")
	}
	return answers
}

// TestChatOverBidiAnySplit checks that the answers rebuilt from a session
// do not depend on where the model's bytes were cut into parts, with the
// pull Reader and with the push Decoder.
func TestChatOverBidiAnySplit(t *testing.T) {
	want := chatOverBidi(t, 1, 4096, false) // few cuts
	if len(want) != 2 {
		t.Fatalf("%d answers", len(want))
	}
	for i, text := range []string{"You said: héllo — wörld 👋", "You said: second turn"} {
		m := want[i].Choices[0].Message
		if m.Content != text || m.Role != "assistant" || want[i].Choices[0].FinishReason != "stop" {
			t.Errorf("answer %d = %+v", i, want[i].Choices[0])
		}
		if m.ReasoningContent == "" || want[i].Usage == nil || want[i].Usage.CompletionTokens == 0 {
			t.Errorf("answer %d lacks reasoning or usage: %+v", i, want[i])
		}
	}
	for seed := uint64(2); seed < 12; seed++ {
		for _, push := range []bool{false, true} {
			got := chatOverBidi(t, seed, 1+int(seed)*3, push)
			if !reflect.DeepEqual(got, want) {
				t.Fatalf("seed %d push %v: answers differ:\n got %+v\nwant %+v", seed, push, got, want)
			}
		}
	}
}
