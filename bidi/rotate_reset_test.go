package bidi_test

import (
	"context"
	"encoding/binary"
	"errors"
	"io"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/sagemaker-bidi/sagemaker-bidi/bidi"
	"github.com/sagemaker-bidi/sagemaker-bidi/bidi/biditest"
)

// A stream reset while more replies than the session reads ahead wait
// unread is over for the rotator as soon as its session knows, not once
// Recv got through those replies: the rotation that follows is an early
// end, with the frames the reset stream never answered replayed, even
// when a planned rotation (Rotate) is asked for meanwhile.
func TestRotationResetBehindUnreadReplies(t *testing.T) {
	synctest.Test(t, rotationResetBehindUnreadReplies)
}

func rotationResetBehindUnreadReplies(t *testing.T) {
	const before = 100    // frames answered before the reset: more than the session decodes ahead
	var reset atomic.Bool // the first stream only
	srv, dial := newMemServer(t, biditest.HandlerFunc(func(st *biditest.Stream) {
		if st.Accept() != nil {
			return
		}
		for seq := 0; ; seq++ {
			m, err := st.Recv()
			if err != nil {
				return
			}
			if seq == before && !reset.Swap(true) {
				st.Reset()
			}
			if st.Send(m) != nil {
				return
			}
		}
	}))
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	events := make(chan bidi.RotationEvent, 4)
	r := &bidi.Rotation{ReplayWindow: time.Minute, Backoff: func(int) time.Duration { return 0 },
		OnRotate: func(ev bidi.RotationEvent) { events <- ev }}
	rs, err := srv.Client(dial).OpenRotating(ctx, &bidi.OpenInput{EndpointName: "reset"}, r)
	if err != nil {
		t.Fatal(err)
	}
	defer rs.Close()
	frame := func(i int) bidi.Message { return bidi.Binary(binary.BigEndian.AppendUint32(nil, uint32(i))) }
	for i := range before + 1 { // frame `before` resets the stream
		if err := rs.Send(ctx, frame(i)); err != nil {
			t.Fatalf("Send %d: %v", i, err)
		}
	}
	select {
	case <-bidi.RotatingStreamOver(rs):
	case <-ctx.Done():
		t.Fatal("the session never saw the reset")
	}
	if err := rs.Rotate(ctx); err != nil {
		t.Fatalf("Rotate: %v", err)
	}
	if err := rs.Send(ctx, frame(before+1)); err != nil {
		t.Fatalf("Send after the reset: %v", err)
	}
	answered := make(map[int]bool)
	done := make(chan error, 1)
	go func() {
		for {
			m, err := rs.Recv(ctx)
			if err != nil {
				done <- err
				return
			}
			answered[int(binary.BigEndian.Uint32(m.Data))] = true
		}
	}()
	if err := rs.Finish(ctx, 50*time.Millisecond); err != nil {
		t.Errorf("Finish: %v", err)
	}
	if err := <-done; !errors.Is(err, io.EOF) {
		t.Errorf("Recv ended with %v, want io.EOF", err)
	}
	ev := <-events
	if ev.From != 1 || ev.Reason != bidi.RotationEarlyEnd || ev.Err == nil {
		t.Errorf("first rotation %+v, want an early end of stream 1 with its error", ev)
	}
	for i := range before + 2 {
		if !answered[i] {
			t.Errorf("frame %d never answered", i)
		}
	}
}
