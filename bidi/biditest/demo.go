package biditest

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/sagemaker-bidi/sagemaker-bidi/bidi"
	"github.com/sagemaker-bidi/sagemaker-bidi/internal/demomodel"
)

// DemoOptions configures [DemoModel]. The zero value is ready to use.
type DemoOptions struct {
	// Seed seeds the random cuts of streamed answers, so a run can be
	// replayed. Zero means 1.
	Seed uint64
	// MaxCut is the largest number of bytes between two cuts of a streamed
	// answer. Zero means 48.
	MaxCut int
	// FragmentSize is the size of the parts a binary message is echoed in.
	// Zero means 1024.
	FragmentSize int
	// Now gives the "created" time of completions. Nil means a fixed time,
	// so that answers are reproducible.
	Now func() time.Time
}

// DemoModel returns a handler that plays a small OpenAI-compatible chat
// model of the kind SageMaker hosts, for demos and tests:
//
//   - A UTF8 message holding an OpenAI chat request with "stream": true is
//     answered with chat.completion.chunk server-sent events
//     (reasoning_content deltas, then content deltas, then a chunk with
//     finish_reason and usage, then "data: [DONE]"). The bytes of the
//     answer are cut at random points, so events and even UTF-8 sequences
//     straddle messages, and each piece is sent as PARTIAL…COMPLETE parts
//     of random sizes: a client must reassemble and frame it properly.
//     The parts of one answer are written back to back and flushed
//     together, so several share a DATA frame.
//   - A chat request without "stream" is answered with one chat.completion
//     JSON message.
//   - Other text is echoed as one part.
//   - A BINARY message (audio, say) is echoed back in PARTIAL parts of
//     FragmentSize bytes ending with a COMPLETE part.
//
// Like a model container behind SageMaker's WebSocket bridge that reads
// whole messages, it answers a message only once its COMPLETE part has
// arrived (PARTIAL parts are reassembled first), and a message over
// [Server.MaxRecvMessageSize] ends the stream with the ModelStreamError
// "1009" such a container's read limit causes. The server reports the
// target variant, or [Server.ProductionVariant], as the invoked production
// variant. The model "reasons" about the last user message, then repeats
// it: the answer to "hi" is "You said: hi". Every answer ends when the
// client ends its side of the stream.
func DemoModel(opts *DemoOptions) Handler {
	var o DemoOptions
	if opts != nil {
		o = *opts
	}
	if o.Seed == 0 {
		o.Seed = 1
	}
	if o.MaxCut <= 0 {
		o.MaxCut = 48
	}
	if o.FragmentSize <= 0 {
		o.FragmentSize = 1024
	}
	if o.Now == nil {
		fixed := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
		o.Now = func() time.Time { return fixed }
	}
	return HandlerFunc(func(st *Stream) {
		rng := rand.New(rand.NewPCG(o.Seed, 0x5eed))
		if st.Accept() != nil {
			return
		}
		for turn := 1; ; turn++ {
			m, err := st.Recv()
			if errors.As(err, new(*bidi.MessageTooLargeError)) {
				st.sendMessageTooLarge(st.s.maxRecvMessageSize())
			}
			if err != nil {
				return
			}
			if err := answer(st, m, turn, rng, &o); err != nil {
				return
			}
		}
	})
}

// answer sends the demo model's reply to one message.
func answer(st *Stream, m bidi.Message, turn int, rng *rand.Rand, o *DemoOptions) error {
	if m.Type == bidi.DataTypeBinary {
		return burst(st, func() error {
			return bufferFragments(st, m, func(int) int { return o.FragmentSize })
		})
	}
	req, ok := demomodel.ParseChatRequest(m.Data)
	if !ok {
		return st.Send(m)
	}
	c := demomodel.NewCompletion(req, fmt.Sprintf("chatcmpl-demo-%d", turn), o.Now().Unix())
	if !req.Stream {
		return st.Send(bidi.Text(string(c.Message())))
	}
	var sse []byte
	for _, ev := range c.Events() {
		sse = append(sse, ev...)
	}
	return burst(st, func() error {
		for len(sse) > 0 {
			n := min(1+rng.IntN(o.MaxCut), len(sse))
			piece := bidi.Message{Data: sse[:n], Type: bidi.DataTypeUTF8}
			sse = sse[n:]
			if err := bufferFragments(st, piece, func(rest int) int { return 1 + rng.IntN(rest) }); err != nil {
				return err
			}
		}
		return nil
	})
}

// burst runs write, which buffers parts with st.wmu held, then flushes
// them together, as a model that has its whole answer at once: the parts
// keep their cuts and reach the client back to back, in as few DATA
// frames as the response buffer and the client's window allow. (A flush
// per part would cost net/http a goroutine and a TLS record each, most of
// the CPU of a test that streams thousands of tiny parts.)
func burst(st *Stream, write func() error) error {
	st.wmu.Lock()
	defer st.wmu.Unlock()
	if err := write(); err != nil {
		return err
	}
	return st.flushLocked()
}

// bufferFragments buffers m as PARTIAL parts whose sizes size returns
// (given the bytes left), ending with a COMPLETE part. st.wmu is held.
func bufferFragments(st *Stream, m bidi.Message, size func(rest int) int) error {
	data := m.Data
	for {
		n := min(size(max(len(data), 1)), len(data))
		last := n == len(data)
		if err := st.bufferPartLocked(bidi.Part{Data: data[:n], Type: m.Type, Complete: last}); err != nil {
			return err
		}
		if last {
			return nil
		}
		data = data[n:]
	}
}
