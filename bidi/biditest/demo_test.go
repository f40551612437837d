package biditest_test

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/sagemaker-bidi/sagemaker-bidi/bidi"
	"github.com/sagemaker-bidi/sagemaker-bidi/bidi/biditest"
)

func openDemo(t *testing.T, opts *biditest.DemoOptions) (*bidi.Session, context.Context) {
	t.Helper()
	srv := biditest.NewServer(biditest.DemoModel(opts))
	t.Cleanup(srv.Close)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	t.Cleanup(cancel)
	sess, err := srv.Client().Open(ctx, &bidi.OpenInput{EndpointName: "demo"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sess.Close() })
	return sess, ctx
}

// TestDemoModelStreamsCutSSE checks that a streamed answer arrives as many
// fragmented messages whose bytes, joined, are the SSE events of the
// answer, with events cut across message boundaries.
func TestDemoModelStreamsCutSSE(t *testing.T) {
	sess, ctx := openDemo(t, &biditest.DemoOptions{Seed: 7, MaxCut: 16})
	req := `{"model":"demo","stream":true,"messages":[{"role":"user","content":"héllo wörld"}]}`
	if err := sess.Send(ctx, bidi.Text(req)); err != nil {
		t.Fatal(err)
	}
	var all []byte
	parts, partial := 0, 0
	for !bytes.HasSuffix(all, []byte("data: [DONE]\n\n")) {
		p, err := sess.RecvPart(ctx)
		if err != nil {
			t.Fatalf("after %d bytes: %v", len(all), err)
		}
		if p.Type != bidi.DataTypeUTF8 {
			t.Fatalf("part type %v, want UTF8", p.Type)
		}
		parts++
		if !p.Complete {
			partial++
		}
		all = append(all, p.Data...)
	}
	if partial == 0 || parts < 20 {
		t.Fatalf("%d parts, %d PARTIAL: the answer was not cut", parts, partial)
	}
	var content, reasoning strings.Builder
	events := strings.Split(strings.TrimSuffix(string(all), "\n\n"), "\n\n")
	for _, ev := range events[:len(events)-1] {
		var c struct {
			Choices []struct {
				Delta struct {
					Content          string `json:"content"`
					ReasoningContent string `json:"reasoning_content"`
				} `json:"delta"`
			} `json:"choices"`
		}
		data, ok := strings.CutPrefix(ev, "data: ")
		if !ok || json.Unmarshal([]byte(data), &c) != nil || len(c.Choices) != 1 {
			t.Fatalf("event %q is not a chat chunk", ev)
		}
		content.WriteString(c.Choices[0].Delta.Content)
		reasoning.WriteString(c.Choices[0].Delta.ReasoningContent)
	}
	if content.String() != "You said: héllo wörld" {
		t.Errorf("content = %q", content.String())
	}
	if !strings.Contains(reasoning.String(), "héllo wörld") {
		t.Errorf("reasoning = %q", reasoning.String())
	}
}

func TestDemoModelEchoesBinaryInFragments(t *testing.T) {
	sess, ctx := openDemo(t, &biditest.DemoOptions{FragmentSize: 100})
	audio := bytes.Repeat([]byte{1, 2, 3, 4, 5}, 70) // 350 bytes
	if err := sess.Send(ctx, bidi.Binary(audio)); err != nil {
		t.Fatal(err)
	}
	var got []byte
	for i := 1; ; i++ {
		p, err := sess.RecvPart(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if p.Type != bidi.DataTypeBinary {
			t.Fatalf("part %d type %v", i, p.Type)
		}
		got = append(got, p.Data...)
		if p.Complete {
			if i != 4 {
				t.Errorf("echo came in %d parts, want 4 of at most 100 bytes", i)
			}
			break
		}
	}
	if !bytes.Equal(got, audio) {
		t.Fatal("echoed audio differs")
	}
	if err := sess.Send(ctx, bidi.Text("plain text")); err != nil {
		t.Fatal(err)
	}
	m, err := sess.Recv(ctx)
	if err != nil || string(m.Data) != "plain text" || m.Type != bidi.DataTypeUTF8 {
		t.Fatalf("text echo = %q %v, %v", m.Data, m.Type, err)
	}
}
