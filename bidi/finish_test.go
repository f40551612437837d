package bidi_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"testing"
	"testing/synctest"
	"time"

	"github.com/sagemaker-bidi/sagemaker-bidi/bidi"
	"github.com/sagemaker-bidi/sagemaker-bidi/bidi/biditest"
)

// collect reads sess until its end and returns the texts and the end.
func collect(ctx context.Context, sess *bidi.Session) <-chan struct {
	texts []string
	err   error
} {
	out := make(chan struct {
		texts []string
		err   error
	}, 1)
	go func() {
		var texts []string
		for {
			m, err := sess.Recv(ctx)
			if err != nil {
				out <- struct {
					texts []string
					err   error
				}{texts, err}
				return
			}
			texts = append(texts, string(m.Data))
		}
	}()
	return out
}

// TestFinishWaitsForQuiet: Finish keeps the input open while the model is
// still answering and sends the end frame only once it has been quiet;
// no reply is lost and the clean end is nil. On the bubble's clock the
// end frame arrives exactly the quiet period after the last reply.
func TestFinishWaitsForQuiet(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const quiet = 150 * time.Millisecond
		sentAll := make(chan time.Time, 1)
		endSeen := make(chan error, 1)
		srv, dial := newMemServer(t, biditest.HandlerFunc(func(st *biditest.Stream) {
			if _, err := st.Recv(); err != nil {
				return
			}
			for _, a := range []string{"a1", "a2", "a3"} {
				time.Sleep(20 * time.Millisecond) // a model that pauses between replies (the subject)
				st.Send(bidi.Text(a))
			}
			sentAll <- time.Now()
			_, err := st.Recv()
			if err == nil {
				err = errors.New("a message, not the end of the input")
			} else if err == io.EOF {
				if d := time.Since(<-sentAll); d != quiet {
					err = fmt.Errorf("the end frame came %v after the last reply, want %v", d, quiet)
				} else {
					err = nil
				}
			}
			endSeen <- err
		}))
		ctx := testCtx(t)
		sess := open(t, srv.Client(dial), ctx)
		if err := sess.Send(ctx, bidi.Text("q")); err != nil {
			t.Fatal(err)
		}
		got := collect(ctx, sess)
		if err := sess.Finish(ctx, quiet); err != nil {
			t.Fatalf("Finish = %v, want nil", err)
		}
		r := <-got
		if len(r.texts) != 3 || r.err != io.EOF {
			t.Fatalf("received %q then %v, want a1 a2 a3 then io.EOF", r.texts, r.err)
		}
		if err := <-endSeen; err != nil {
			t.Fatal(err)
		}
	})
}

// TestFinishQuietWithoutReplies: a session that has received nothing is
// quiet from the moment Finish is called, so its end frame goes out
// exactly the quiet period later, on the bubble's clock too (whose time
// is not the process's).
func TestFinishQuietWithoutReplies(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const quiet = 300 * time.Millisecond
		ended := make(chan time.Time, 1)
		srv, dial := newMemServer(t, biditest.HandlerFunc(func(st *biditest.Stream) {
			if st.Accept() != nil {
				return
			}
			if _, err := st.Recv(); err == io.EOF {
				ended <- time.Now()
			}
		}))
		ctx := testCtx(t)
		sess := open(t, srv.Client(dial), ctx)
		if _, err := sess.Response(ctx); err != nil {
			t.Fatal(err)
		}
		got := collect(ctx, sess)
		began := time.Now()
		if err := sess.Finish(ctx, quiet); err != nil {
			t.Fatalf("Finish = %v, want nil", err)
		}
		if r := <-got; len(r.texts) != 0 || r.err != io.EOF {
			t.Fatalf("received %q then %v, want io.EOF", r.texts, r.err)
		}
		select {
		case at := <-ended:
			if d := at.Sub(began); d != quiet {
				t.Fatalf("the end frame came %v after Finish was called, want %v", d, quiet)
			}
		default:
			t.Fatal("the model did not see the end of the input")
		}
	})
}

// TestFinishNormalClosure: a ModelStreamError with close code 1000 after
// the last reply is a normal end: Finish returns nil, Recv reports the
// error, and IsNormalClosure tells it from a failure; 1013 is retryable.
func TestFinishNormalClosure(t *testing.T) {
	srv := newServer(t, biditest.HandlerFunc(func(st *biditest.Stream) {
		st.Recv()
		st.Send(bidi.Text("last"))
		st.SendException("ModelStreamError", []byte(`{"Message":"Model container closed the WebSocket connection (code 1000)","ErrorCode":"1000"}`))
	}))
	ctx := testCtx(t)
	sess := open(t, srv.Client(), ctx)
	sess.Send(ctx, bidi.Text("q"))
	got := collect(ctx, sess)
	if err := sess.Finish(ctx, time.Minute); err != nil {
		t.Fatalf("Finish = %v, want nil for a normal closure", err)
	}
	r := <-got
	var mse *bidi.ModelStreamError
	if len(r.texts) != 1 || !errors.As(r.err, &mse) || !bidi.IsNormalClosure(r.err) || mse.CloseCode() != 1000 || mse.Retryable() {
		t.Fatalf("received %q then %v", r.texts, r.err)
	}
	for code, retryable := range map[string]bool{"1013": true, "1012": true, "1001": true, "1009": false, "1011": false, "Boom": false} {
		e := &bidi.ModelStreamError{ErrorCode_: code}
		if e.Retryable() != retryable || e.NormalClosure() {
			t.Errorf("code %s: Retryable %v NormalClosure %v", code, e.Retryable(), e.NormalClosure())
		}
	}
}

// TestFinishFailureAndContext: a failure is returned; ctx bounds the
// wait.
func TestFinishFailureAndContext(t *testing.T) {
	srv := newServer(t, biditest.HandlerFunc(func(st *biditest.Stream) {
		m, err := st.Recv()
		if err != nil {
			return
		}
		if string(m.Data) == "fail" {
			st.SendException("ModelStreamError", []byte(`{"Message":"container failed","ErrorCode":"1011"}`))
			return
		}
		<-st.Context().Done()
	}))
	ctx := testCtx(t)
	sess := open(t, srv.Client(), ctx)
	sess.Send(ctx, bidi.Text("fail"))
	collect(ctx, sess)
	var mse *bidi.ModelStreamError
	if err := sess.Finish(ctx, time.Minute); !errors.As(err, &mse) || mse.CloseCode() != 1011 {
		t.Fatalf("Finish = %v, want the ModelStreamError 1011", err)
	}

	sess = open(t, srv.Client(), ctx)
	sess.Send(ctx, bidi.Text("hang"))
	collect(ctx, sess)
	short, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
	defer cancel()
	if err := sess.Finish(short, time.Millisecond); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Finish = %v, want ctx's deadline (the model never ends the stream)", err)
	}
}
