package bidi_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sagemaker-bidi/sagemaker-bidi/bidi"
	"github.com/sagemaker-bidi/sagemaker-bidi/bidi/biditest"
	"github.com/sagemaker-bidi/sagemaker-bidi/eventstream"
	"github.com/sagemaker-bidi/sagemaker-bidi/internal/wire"
)

// TestRecvResumesInsideAFrame: Recv decodes on the caller's goroutine, so
// a Recv whose context ends while only part of a frame has arrived must
// leave those bytes in place: the next Recv returns the whole message,
// then the one after it.
func TestRecvResumesInsideAFrame(t *testing.T) {
	frame, err := eventstream.AppendMessage(nil, &eventstream.Message{
		Headers: wire.AppendPartHeaders(nil, &wire.Part{DataType: wire.DataTypeUTF8, CompletionState: wire.CompletionComplete}),
		Payload: []byte("a message sent in three writes"),
	})
	if err != nil {
		t.Fatal(err)
	}
	next := make(chan struct{})
	srv := newServer(t, biditest.HandlerFunc(func(st *biditest.Stream) {
		st.WriteRaw(frame[:5]) // inside the prelude
		<-next
		st.WriteRaw(frame[5 : len(frame)-3])
		<-next
		st.WriteRaw(frame[len(frame)-3:])
		st.Send(bidi.Text("after"))
		<-st.Context().Done()
	}))
	c := srv.Client()
	ctx := testCtx(t)
	sess := open(t, c, ctx)
	for range 2 {
		// The timeout only decides how much of the frame has
		// arrived when Recv gives up; whatever it is, the
		// result below must be the same.
		short, cancel := context.WithTimeout(ctx, 20*time.Millisecond)
		_, err := sess.Recv(short)
		cancel()
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("Recv with a short context = %v, want its deadline", err)
		}
		next <- struct{}{}
	}
	for _, want := range []string{"a message sent in three writes", "after"} {
		if m, err := sess.Recv(ctx); err != nil || string(m.Data) != want {
			t.Fatalf("Recv = %q, %v; want %q", m.Data, err, want)
		}
	}
}

// TestRecvPartReusesSmallBuffer: RecvPart returns a small part in a buffer
// of the session's that the next call reuses (its Data is valid until
// then, as documented), so a stream of small parts allocates no data
// buffers; a part over 4 KiB is a copy of its own that outlives the next
// call.
func TestRecvPartReusesSmallBuffer(t *testing.T) {
	srv := newServer(t, biditest.Echo())
	ctx := testCtx(t)
	sess := open(t, srv.Client(), ctx)
	recvPart := func(send []byte) bidi.Part {
		t.Helper()
		if err := sess.Send(ctx, bidi.Binary(send)); err != nil {
			t.Fatal(err)
		}
		p, err := sess.RecvPart(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(p.Data, send) || !p.Complete {
			t.Fatalf("RecvPart = %d bytes (complete %v), want the %d sent", len(p.Data), p.Complete, len(send))
		}
		return p
	}
	first := recvPart(bytes.Repeat([]byte{1}, 640))
	second := recvPart(bytes.Repeat([]byte{2}, 100))
	if &first.Data[0] != &second.Data[0] || cap(second.Data) != len(second.Data) {
		t.Fatal("small parts do not share the session's buffer, or its capacity shows past the part")
	}
	big := recvPart(bytes.Repeat([]byte{3}, 5000))
	recvPart(bytes.Repeat([]byte{4}, 640))
	if !bytes.Equal(big.Data, bytes.Repeat([]byte{3}, 5000)) {
		t.Fatal("a large part changed under the next RecvPart")
	}
}

// TestRecvGivesUpBeforeAnswer: a Recv that returns before the model
// answered (the session was closed) does not touch the receive state that
// the session's goroutine sets up when the answer comes (a data race
// under -race before).
func TestRecvGivesUpBeforeAnswer(t *testing.T) {
	srv := newServer(t, biditest.Echo())
	ctx := testCtx(t)
	recvDone := make(chan error, 1)
	t.Cleanup(bidi.SetAnsweredHook(func(s *bidi.Session) {
		s.Close()
		go func() {
			_, err := s.Recv(ctx)
			recvDone <- err
		}()
	}))
	// Open may return the session or, if it sees the close first, its
	// error: either way the hook ran.
	if sess, err := srv.Client().Open(ctx, &bidi.OpenInput{EndpointName: "my-endpoint"}); err == nil {
		defer sess.Close()
	} else if !errors.Is(err, bidi.ErrSessionClosed) {
		t.Fatalf("Open = %v", err)
	}
	if err := <-recvDone; !errors.Is(err, bidi.ErrSessionClosed) {
		t.Fatalf("Recv = %v, want ErrSessionClosed", err)
	}
}

// TestConcurrentRecv: Recv calls from several goroutines take turns: each
// fragmented message is returned whole, by exactly one of them, and every
// one of them returns io.EOF once the stream ended.
func TestConcurrentRecv(t *testing.T) {
	const receivers, messages = 4, 200
	srv := newServer(t, biditest.Echo())
	ctx := testCtx(t)
	sess := open(t, srv.Client(func(o *bidi.Options) { o.MaxPartSize = 64 }), ctx)
	var (
		mu   sync.Mutex
		seen = make(map[string]int)
		wg   sync.WaitGroup
	)
	for range receivers {
		wg.Go(func() {
			for {
				m, err := sess.Recv(ctx)
				if err == io.EOF {
					return
				}
				if err != nil {
					t.Errorf("Recv: %v", err)
					return
				}
				mu.Lock()
				seen[string(m.Data)]++
				mu.Unlock()
			}
		})
	}
	for i := range messages {
		// 3 to 5 parts of 64 bytes each.
		msg := fmt.Sprintf("%03d:%s", i, strings.Repeat(string(rune('a'+i%26)), 150+i%100))
		if err := sess.Send(ctx, bidi.Text(msg)); err != nil {
			t.Fatalf("Send %d: %v", i, err)
		}
	}
	if err := sess.CloseSend(); err != nil {
		t.Fatal(err)
	}
	wg.Wait()
	if len(seen) != messages {
		t.Fatalf("%d distinct messages received, want %d", len(seen), messages)
	}
	for i := range messages {
		msg := fmt.Sprintf("%03d:%s", i, strings.Repeat(string(rune('a'+i%26)), 150+i%100))
		if n := seen[msg]; n != 1 {
			t.Fatalf("message %d received %d times whole, want once", i, n)
		}
	}
}
