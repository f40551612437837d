package main

import (
	"context"
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/sagemaker-bidi/sagemaker-bidi/bidi"
)

// logger prints timestamped lines from the sending and the receiving
// goroutine.
type logger struct {
	mu    sync.Mutex
	out   io.Writer
	start time.Time
}

func (l *logger) printf(format string, args ...any) {
	l.mu.Lock()
	defer l.mu.Unlock()
	fmt.Fprintf(l.out, "%7.3fs  "+format+"\n", append([]any{time.Since(l.start).Seconds()}, args...)...)
}

// received summarizes what the receiver saw.
type received struct {
	parts int
	first time.Time // arrival of the first part
	err   error
}

// stream sends pcm in chunks paced like live capture while a goroutine
// prints what the model sends back, as it arrives.
func stream(ctx context.Context, sess *bidi.Session, pcm []byte, o *options, l *logger) error {
	done := make(chan received, 1)
	go func() { done <- receive(ctx, sess, l) }()

	lastBegun, lastSent, err := send(ctx, sess, pcm, o, l)
	if err == nil {
		// No more audio: the model finishes, then ends the stream.
		err = sess.CloseSend()
	}
	if err != nil {
		sess.Close()
		<-done
		return err
	}
	r := <-done
	if r.err != nil {
		return r.err
	}
	elapsed := lastSent.Sub(l.start)
	audio := time.Duration(len(pcm)/2) * time.Second / time.Duration(o.sampleRate)
	pace := "unpaced"
	if o.speed > 0 {
		pace = fmt.Sprintf("x%.1f real time", audio.Seconds()/elapsed.Seconds())
	}
	fmt.Fprintf(l.out, "\nstreamed %s of audio in %s (%s); %d parts came back",
		audio.Round(time.Millisecond), elapsed.Round(time.Millisecond), pace, r.parts)
	if r.parts > 0 {
		fmt.Fprintf(l.out, ", the first after %s", r.first.Sub(l.start).Round(time.Millisecond))
		switch {
		case r.first.Before(lastBegun):
			fmt.Fprintf(l.out, "\nlive: the first result arrived %s before the last chunk was sent",
				lastSent.Sub(r.first).Round(time.Millisecond))
		case o.fragment:
			fmt.Fprint(l.out, "\nnot live: the container saw the fragmented message only once complete, "+
				"so the first result waited for the whole recording; send one message per chunk (without -fragment) for live results")
		}
	}
	fmt.Fprintln(l.out)
	return nil
}

// send sends the audio. Chunk i (of chunkMS milliseconds) leaves when a
// live capture would have recorded it, at (i+1)*chunkMS/speed; speed 0
// sends as fast as flow control allows. With fragment set, the chunks are
// the PARTIAL…COMPLETE parts of one message; otherwise each chunk is a
// message of its own, as most streaming speech models expect: the
// container can answer each message as it arrives, while it sees a
// fragmented message only when complete.
//
// It returns when the last chunk began to be sent and when it was sent.
func send(ctx context.Context, sess bidi.Conversation, pcm []byte, o *options, l *logger) (lastBegun, last time.Time, err error) {
	chunk := o.sampleRate * 2 * o.chunkMS / 1000
	n := (len(pcm) + chunk - 1) / chunk
	for i := range n {
		piece := pcm[i*chunk : min((i+1)*chunk, len(pcm))]
		if o.speed > 0 {
			due := l.start.Add(time.Duration(float64(i+1) * float64(o.chunkMS) * float64(time.Millisecond) / o.speed))
			if err := sleepUntil(ctx, due); err != nil {
				return lastBegun, last, err
			}
		}
		lastBegun = time.Now()
		how := "message"
		if o.fragment {
			complete := i == n-1
			how = "PARTIAL part"
			if complete {
				how = "COMPLETE part"
			}
			err = sess.SendPart(ctx, bidi.Part{Data: piece, Type: bidi.DataTypeBinary, Complete: complete})
		} else {
			err = sess.Send(ctx, bidi.Binary(piece))
		}
		if err != nil {
			return lastBegun, last, err
		}
		last = time.Now()
		l.printf("-> chunk %2d/%d: %d bytes of audio as a BINARY %s", i+1, n, len(piece), how)
	}
	return lastBegun, last, nil
}

// receive prints every part the model sends, as it arrives, until the
// stream ends.
func receive(ctx context.Context, sess *bidi.Session, l *logger) received {
	var r received
	for {
		p, err := sess.RecvPart(ctx)
		if err == io.EOF {
			return r
		}
		if err != nil {
			r.err = err
			return r
		}
		if r.parts == 0 {
			r.first = time.Now()
		}
		r.parts++
		state := "PARTIAL"
		if p.Complete {
			state = "COMPLETE"
		}
		if p.Type == bidi.DataTypeUTF8 {
			l.printf("<- UTF8 %s part: %s", state, p.Data)
		} else {
			l.printf("<- BINARY %s part: %d bytes", state, len(p.Data))
		}
	}
}

// sleepUntil waits until t or until ctx ends.
func sleepUntil(ctx context.Context, t time.Time) error {
	timer := time.NewTimer(time.Until(t))
	defer timer.Stop()
	select {
	case <-timer.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
