package cassette_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/sagemaker-bidi/sagemaker-bidi/bidi"
	"github.com/sagemaker-bidi/sagemaker-bidi/bidi/biditest"
	"github.com/sagemaker-bidi/sagemaker-bidi/bidi/biditest/replay"
	"github.com/sagemaker-bidi/sagemaker-bidi/bidi/cassette"
)

// fragmenter answers every message with its bytes in PARTIAL parts (3
// bytes of text, 16 KiB of binary) and a COMPLETE part, and fails the
// stream with ModelStreamError 1011 on the text "fail".
func fragmenter() biditest.Handler {
	return biditest.HandlerFunc(func(st *biditest.Stream) {
		for {
			m, err := st.Recv()
			if err != nil {
				return
			}
			if string(m.Data) == "fail" {
				st.SendException("ModelStreamError", []byte(`{"Message":"boom","ErrorCode":"1011"}`))
				return
			}
			d, n := m.Data, 3
			if m.Type == bidi.DataTypeBinary {
				n = 16 << 10
			}
			for len(d) > n {
				if st.SendPart(bidi.Part{Data: d[:n], Type: m.Type}) != nil {
					return
				}
				d = d[n:]
			}
			if st.SendPart(bidi.Part{Data: d, Type: m.Type, Complete: true}) != nil {
				return
			}
		}
	})
}

// run sends msgs with send, then reads until the end with recv.
func run(t *testing.T, send func(bidi.Message) error, recv func() (bidi.Message, error), msgs []bidi.Message) ([]bidi.Message, error) {
	t.Helper()
	for _, m := range msgs {
		if err := send(m); err != nil {
			t.Fatal(err)
		}
	}
	var got []bidi.Message
	for {
		m, err := recv()
		if err != nil {
			return got, err
		}
		got = append(got, m)
	}
}

// A session recorded with Record replays through biditest with the same
// messages and the same end, fragments and error included.
func TestRecordReplaysTheSession(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	model := biditest.NewServer(fragmenter())
	defer model.Close()
	msgs := []bidi.Message{bidi.Text("hello, world"), bidi.Binary(bytes.Repeat([]byte{7, 0}, 40<<10)), bidi.Text("fail")}

	var file bytes.Buffer
	w, _ := cassette.NewWriter(&file, nil)
	in := &bidi.OpenInput{EndpointName: "recorded"}
	sess, err := model.Client().Open(ctx, in)
	if err != nil {
		t.Fatal(err)
	}
	rec := cassette.Record(sess, in, w, nil)
	want, wantErr := run(t, func(m bidi.Message) error { return rec.Send(ctx, m) }, func() (bidi.Message, error) { return rec.Recv(ctx) }, msgs)
	if err := rec.Close(); err != nil {
		t.Fatal(err)
	}
	var mse *bidi.ModelStreamError
	if len(want) != 2 || !errors.As(wantErr, &mse) {
		t.Fatalf("recording: %d messages, %v", len(want), wantErr)
	}
	c, err := cassette.Load(&file)
	if err != nil {
		t.Fatal(err)
	}
	recvs, sends := 0, 0
	for _, e := range c.Events {
		switch e.Kind {
		case cassette.KindRecv:
			recvs++
		case cassette.KindSend:
			sends++
		}
	}
	// 12 bytes in 4 parts, 80 KiB in 5; 1 + 2 (64 KiB parts) + 1 sent.
	if recvs != 4+5 || sends != 4 {
		t.Errorf("%d parts received, %d sent recorded", recvs, sends)
	}
	if last := c.Events[len(c.Events)-1]; last.Kind != cassette.KindEnd || last.Reason != cassette.EndException || last.CloseCode != 1011 {
		t.Errorf("last event %+v", last)
	}

	rsrv, r := replay.NewServer(t, c, &replay.Options{TimeScale: -1})
	sess, err = rsrv.Client().Open(ctx, in)
	if err != nil {
		t.Fatal(err)
	}
	defer sess.Close()
	got, gotErr := run(t, func(m bidi.Message) error { return sess.Send(ctx, m) }, func() (bidi.Message, error) { return sess.Recv(ctx) }, msgs)
	if len(got) != len(want) {
		t.Fatalf("replay: %d messages, recording %d", len(got), len(want))
	}
	for i := range got {
		if got[i].Type != want[i].Type || !bytes.Equal(got[i].Data, want[i].Data) {
			t.Errorf("message %d differs", i)
		}
	}
	if gotErr.Error() != wantErr.Error() {
		t.Errorf("replay ended with %v, recording with %v", gotErr, wantErr)
	}
	rsrv.Close()
	if err := r.Err(); err != nil {
		t.Error(err)
	}
}

// Closing a recording records the end as "closed" once, and a receive
// cut by the caller's context records nothing.
func TestRecordClose(t *testing.T) {
	model := biditest.NewServer(biditest.Echo())
	defer model.Close()
	var file bytes.Buffer
	w, _ := cassette.NewWriter(&file, nil)
	sess, err := model.Client().Open(context.Background(), &bidi.OpenInput{EndpointName: "recorded"})
	if err != nil {
		t.Fatal(err)
	}
	rec := cassette.Record(sess, nil, w, nil)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := rec.Recv(ctx); !errors.Is(err, context.Canceled) {
		t.Fatalf("Recv = %v", err)
	}
	rec.Close()
	rec.Close()
	c, err := cassette.Load(&file)
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Events) != 2 || c.Events[1].Kind != cassette.KindEnd || c.Events[1].Reason != cassette.EndClosed {
		t.Errorf("events %+v", c.Events)
	}
	if _, err := rec.Recv(context.Background()); err == nil || err == io.EOF {
		t.Errorf("Recv after Close = %v", err)
	}
}

// A recording's send events carry the padding length the session gave
// each part (what the server received in P; 0 where there was none), as
// the client's padding policy decides it; received parts' is unknown.
func TestRecordPadding(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	msgs := []bidi.Message{bidi.Text(""), bidi.Text("hello"), bidi.Binary(make([]byte, 1500)), bidi.Text(string(bytes.Repeat([]byte("x"), 20000)))}
	for _, tc := range []struct {
		name   string
		policy func(payloadLen int) int // the client's and the recording's; nil: the defaults
	}{
		{"default", nil},
		{"fixed-100", func(n int) int { return (n/100+1)*100 - n }},
		{"none", func(int) int { return 0 }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			model := biditest.NewServer(biditest.Echo())
			defer model.Close()
			var file bytes.Buffer
			w, _ := cassette.NewWriter(&file, nil)
			sess, err := model.Client(func(o *bidi.Options) { o.Padding = tc.policy }).Open(ctx, &bidi.OpenInput{EndpointName: "pad"})
			if err != nil {
				t.Fatal(err)
			}
			rec := cassette.Record(sess, nil, w, &cassette.RecordOptions{Padding: tc.policy})
			for _, m := range msgs {
				if err := rec.Send(ctx, m); err != nil {
					t.Fatal(err)
				}
			}
			rec.CloseSend()
			for {
				if _, err := rec.Recv(ctx); err != nil {
					break
				}
			}
			rec.Close()
			c, err := cassette.Load(&file)
			if err != nil {
				t.Fatal(err)
			}
			var recorded, recvPads []int
			for _, e := range c.Events {
				switch e.Kind {
				case cassette.KindSend:
					recorded = append(recorded, e.Padding)
				case cassette.KindRecv:
					recvPads = append(recvPads, e.Padding)
				}
			}
			var wire []int
			for _, p := range model.Streams()[0].Received() {
				wire = append(wire, max(p.Padding, 0))
			}
			if len(recorded) != len(msgs) || !slices.Equal(recorded, wire) {
				t.Errorf("recorded pads %v, the server received %v", recorded, wire)
			}
			if tc.policy == nil && recorded[1] != 59 {
				t.Errorf("a 5-byte part recorded with %d bytes of padding, want 59 (a 64-byte bucket)", recorded[1])
			}
			for _, p := range recvPads {
				if p != -1 {
					t.Errorf("a received part recorded with padding %d, want -1 (unknown)", p)
				}
			}
		})
	}
}

// The model may end the stream as soon as the end frame reaches it,
// before the session's CloseSend has returned to the Recording: the
// receiver that sees that end records it after the send_end, not before
// (nor drops it, once the recording is stopped). Found as a rare failure
// of bidicat's TestRecord under load: "open send send response recv recv
// end", no send_end.
func TestRecordEndAfterCloseSend(t *testing.T) {
	model := biditest.NewServer(biditest.Echo()) // ends the stream when the input ends
	defer model.Close()
	var file bytes.Buffer
	w, _ := cassette.NewWriter(&file, nil)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	sess, err := model.Client().Open(ctx, &bidi.OpenInput{EndpointName: "recorded"})
	if err != nil {
		t.Fatal(err)
	}
	closeSent := make(chan struct{})
	release := make(chan struct{})
	awaiting := make(chan struct{}, 1)
	defer cassette.SetCloseSendHooks(
		func() { close(closeSent); <-release },
		func() {
			select {
			case awaiting <- struct{}{}:
			default:
			}
		})()
	rec := cassette.Record(sess, nil, w, nil)
	if err := rec.Send(ctx, bidi.Text("hi")); err != nil {
		t.Fatal(err)
	}
	received := make(chan error, 1)
	go func() {
		for {
			if _, err := rec.Recv(ctx); err != nil {
				received <- err
				return
			}
		}
	}()
	closed := make(chan error, 1)
	go func() { closed <- rec.CloseSend() }()
	<-closeSent // the end frame is on its way; CloseSend has not recorded it
	select {
	case <-awaiting: // the receiver saw the end and waits for CloseSend
	case err := <-received:
		close(release)
		t.Fatalf("the end (%v) was recorded while CloseSend was under way", err)
	case <-ctx.Done():
		t.Fatal("the receiver neither waited nor ended")
	}
	close(release)
	if err := <-closed; err != nil {
		t.Fatalf("CloseSend = %v", err)
	}
	if err := <-received; err != io.EOF {
		t.Fatalf("Recv = %v, want io.EOF", err)
	}
	rec.Close()
	c, err := cassette.Load(&file)
	if err != nil {
		t.Fatal(err)
	}
	var kinds []string
	for _, e := range c.Events {
		kinds = append(kinds, string(e.Kind))
	}
	if got, want := strings.Join(kinds, " "), "open send response recv send_end end"; got != want {
		t.Errorf("events %q, want %q", got, want)
	}
}
