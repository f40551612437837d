package main

import (
	"context"
	"encoding/json"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/sagemaker-bidi/sagemaker-bidi/bidi"
)

// demoFault returns the demo recognizer's fault: with -rotate-after, a
// reset of the stream once -fault-at seconds of audio reached the model
// (replays included), once; nil otherwise.
func (o *options) demoFault() func() bool {
	if o.rotateAfter <= 0 || o.faultAt < 0 {
		return nil
	}
	at := int64(o.faultAt * 1000 / float64(o.chunkMS))
	var chunks atomic.Int64
	return func() bool { return chunks.Add(1) == at }
}

// transcript is the receiving side of a rotating call: it prints each
// partial result at its place on the call's audio timeline, rebasing the
// position the model counts from its own stream's start with the stream's
// start (RotationEvent.Start.Bytes), and drops the answers to audio that
// was replayed after a fault and had been answered already.
type transcript struct {
	l          *logger
	bytesPerMS int64

	// Owned by the receiving goroutine (OnRotate and OnStreamEnd run on
	// it, inside Recv).
	starts   map[int]int64 // generation -> audio bytes sent before it
	lastMS   int64         // the latest position printed
	partials int
	dropped  int // answers to replayed audio, already printed
	rotation []string
}

func (t *transcript) onRotate(ev bidi.RotationEvent) {
	t.starts[ev.To] = ev.Start.Bytes
	what := fmt.Sprintf("stream %d -> %d (%v) at %.3fs of audio", ev.From, ev.To, ev.Reason, float64(ev.Start.Bytes/t.bytesPerMS)/1000)
	if ev.Err != nil {
		what += fmt.Sprintf(", after %v", ev.Err)
	}
	if ev.Replayed > 0 {
		what += fmt.Sprintf(", %d chunks replayed (from chunk %d)", ev.Replayed, ev.ReplayFrom+1)
	}
	t.rotation = append(t.rotation, what)
	t.l.printf("== %s", what)
}

func (t *transcript) onStreamEnd(gen int, err error) {
	if err != nil {
		t.l.printf("== stream %d ended: %v", gen, err)
		return
	}
	t.l.printf("== stream %d ended", gen)
}

// add prints one reply of stream gen.
func (t *transcript) add(gen int, m bidi.Message) {
	var r result
	if m.Type != bidi.DataTypeUTF8 || json.Unmarshal(m.Data, &r) != nil {
		t.l.printf("<- stream %d: %d bytes", gen, len(m.Data))
		return
	}
	at := t.starts[gen]/t.bytesPerMS + int64(r.AudioMS) // on the call's timeline
	switch {
	case r.Type == "final":
		t.l.printf("<- stream %d final: %d chunks, its audio ends at %.3fs", gen, r.Parts, float64(at)/1000)
	case at <= t.lastMS:
		t.dropped++ // a replayed chunk's answer, seen before
	default:
		t.partials++
		t.lastMS = at
		t.l.printf("<- [%7.3fs] stream %d: level %.1f dBFS, pitch %d Hz", float64(at)/1000, gen, r.LevelDBFS, r.PitchHz)
	}
}

// rotating streams pcm paced like live capture on a RotatingSession that
// outlives its streams' cap, replays the audio a failed stream may have
// lost, and ends with Finish so that the last answers are not lost.
func rotating(ctx context.Context, client *bidi.Client, pcm []byte, o *options, l *logger) error {
	t := &transcript{l: l, bytesPerMS: int64(o.sampleRate) * 2 / 1000, starts: map[int]int64{1: 0}}
	rs, err := client.OpenRotating(ctx, o.conn.OpenInput("demo-asr"), &bidi.Rotation{
		After:        o.rotateAfter,
		FinishQuiet:  300 * time.Millisecond,
		ReplayWindow: o.replay,
		OnRotate:     t.onRotate,
		OnStreamEnd:  t.onStreamEnd,
	})
	if err != nil {
		return err
	}
	defer rs.Close()
	received := make(chan error, 1)
	go func() {
		for m, err := range rs.Messages(ctx) {
			if err != nil {
				received <- err
				return
			}
			t.add(rs.RecvGeneration(), m)
		}
		received <- nil
	}()
	_, _, err = send(ctx, rs, pcm, o, l)
	if err == nil {
		// The graceful end: the input stays open until the model is
		// quiet, so that its last answers are not lost.
		err = rs.Finish(ctx, 300*time.Millisecond)
	}
	if err != nil {
		rs.Close()
		<-received
		return err
	}
	if err := <-received; err != nil {
		return err
	}
	chunk := o.sampleRate * 2 * o.chunkMS / 1000
	fmt.Fprintf(l.out, "\n%d chunks sent on %d streams; %d partial results on the call's timeline, up to %.3fs; %d answers to replayed audio dropped\n",
		(len(pcm)+chunk-1)/chunk, rs.RecvGeneration(), t.partials, float64(t.lastMS)/1000, t.dropped)
	return nil
}
