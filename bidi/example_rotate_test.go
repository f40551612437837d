package bidi_test

import (
	"context"
	"fmt"
	"log"
	"sync/atomic"
	"time"

	"github.com/sagemaker-bidi/sagemaker-bidi/bidi"
	"github.com/sagemaker-bidi/sagemaker-bidi/bidi/biditest"
)

// A conversation that outlives SageMaker's 30-minute cap on a stream: the
// session replaces its stream before the cap, make-before-break. The test
// server stands in for the service with a cap of 500 ms, and the session
// rotates after 200 ms instead of 29 minutes. Each stream begins with a
// configuration message and ends with a "Finalize" message, which the
// echo model sends back. RecvGeneration tells which stream each reply
// came from: the old stream's last replies (here its "Finalize") may come
// after the successor's first ones, hence the unordered output.
func ExampleClient_OpenRotating() {
	srv := biditest.NewUnstartedServer(biditest.Echo())
	srv.MaxStreamAge = 500 * time.Millisecond // SageMaker's 30 minutes
	srv.Start()
	defer srv.Close()
	client := srv.Client()

	ctx := context.Background()
	rotated := make(chan struct{}, 1)
	rs, err := client.OpenRotating(ctx, &bidi.OpenInput{EndpointName: "transcriber"}, &bidi.Rotation{
		After:       200 * time.Millisecond,
		FinishQuiet: 20 * time.Millisecond, // end the old input once its model is quiet
		Preamble: func(ctx context.Context, send func(bidi.Message) error) error {
			return send(bidi.Text(`{"config":{"language":"en-US"}}`))
		},
		Finish: func(ctx context.Context, send func(bidi.Message) error) error {
			return send(bidi.Text(`{"type":"Finalize"}`))
		},
		OnRotate: func(ev bidi.RotationEvent) {
			fmt.Printf("stream %d -> %d (%v)\n", ev.From, ev.To, ev.Reason)
			rotated <- struct{}{}
		},
	})
	if err != nil {
		log.Fatal(err)
	}
	defer rs.Close()

	done := make(chan struct{})
	go func() {
		defer close(done)
		for msg, err := range rs.Messages(ctx) {
			if err != nil {
				log.Fatal(err)
			}
			fmt.Printf("stream %d: %s\n", rs.RecvGeneration(), msg.Data)
		}
	}()

	if err := rs.Send(ctx, bidi.Text("hello")); err != nil {
		log.Fatal(err)
	}
	<-rotated // the receiver has seen the successor
	if err := rs.Send(ctx, bidi.Text("world")); err != nil {
		log.Fatal(err)
	}
	// The graceful end: every reply of every stream comes back.
	if err := rs.Finish(ctx, 50*time.Millisecond); err != nil {
		log.Fatal(err)
	}
	<-done
	// Unordered output:
	// stream 1: {"config":{"language":"en-US"}}
	// stream 1: hello
	// stream 1: {"type":"Finalize"}
	// stream 1 -> 2 (age)
	// stream 2: {"config":{"language":"en-US"}}
	// stream 2: world
}

// After a fault, the replay window sends the input the failed stream may
// not have answered to its successor, and the rotation event says which
// messages, so that the application keeps each answer once. The test
// model stamps its answers (biditest.StampedEcho) and resets its first
// stream when the third frame arrives, before answering it.
func ExampleRotation_replayWindow() {
	var reset atomic.Bool
	srv := biditest.NewServer(biditest.StampedEcho(0, func(st *biditest.Stream, seq int) bool {
		return seq == 2 && reset.CompareAndSwap(false, true) // once
	}))
	defer srv.Close()

	ctx := context.Background()
	rotated := make(chan struct{})
	rs, err := srv.Client().OpenRotating(ctx, &bidi.OpenInput{EndpointName: "asr"}, &bidi.Rotation{
		ReplayWindow: 8 * time.Second, // the last 8 s of input
		OnRotate: func(ev bidi.RotationEvent) {
			fmt.Printf("stream %d -> %d (%v): messages %d to %d replayed\n",
				ev.From, ev.To, ev.Reason, ev.ReplayFrom, ev.ReplayFrom+int64(ev.Replayed)-1)
			close(rotated)
		},
	})
	if err != nil {
		log.Fatal(err)
	}
	defer rs.Close()

	done := make(chan struct{})
	go func() {
		defer close(done)
		answered := map[byte]bool{}
		for msg, err := range rs.Messages(ctx) {
			if err != nil {
				log.Fatal(err)
			}
			st, err := biditest.ParseStamp(msg.Data)
			if err != nil {
				log.Fatal(err)
			}
			if frame := st.Data[0]; !answered[frame] { // a replayed frame may be answered twice
				answered[frame] = true
				fmt.Printf("answer to frame %d\n", frame)
			}
		}
	}()
	for frame := range byte(3) {
		if err := rs.Send(ctx, bidi.Binary([]byte{frame})); err != nil {
			log.Fatal(err)
		}
	}
	<-rotated
	if err := rs.Finish(ctx, 100*time.Millisecond); err != nil {
		log.Fatal(err)
	}
	<-done
	// Unordered output:
	// stream 1 -> 2 (early end): messages 0 to 2 replayed
	// answer to frame 0
	// answer to frame 1
	// answer to frame 2
}
