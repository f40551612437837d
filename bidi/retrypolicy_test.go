package bidi_test

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/ratelimit"
	"github.com/aws/aws-sdk-go-v2/aws/retry"

	"github.com/sagemaker-bidi/sagemaker-bidi/bidi"
	"github.com/sagemaker-bidi/sagemaker-bidi/bidi/biditest"
)

// TestRetryTerminal424: a 424 "Failed to establish WebSocket connection"
// whose container answered 4xx (a wrong invocation path) is permanent:
// one attempt, not three.
func TestRetryTerminal424(t *testing.T) {
	for _, original := range []int{403, 404} {
		var attempts atomic.Int32
		srv := newServer(t, biditest.HandlerFunc(func(st *biditest.Stream) {
			attempts.Add(1)
			st.Fail(424, "ModelError", map[string]any{"Message": "Failed to establish WebSocket connection", "OriginalStatusCode": original})
		}))
		ctx := testCtx(t)
		sess := open(t, srv.Client(fastRetry), ctx)
		_, err := sess.Response(ctx)
		var me *bidi.ModelError
		if !errors.As(err, &me) || me.OriginalStatusCode != original {
			t.Fatalf("Response = %v, want the ModelError with OriginalStatusCode %d", err, original)
		}
		if n := attempts.Load(); n != 1 {
			t.Fatalf("OriginalStatusCode %d: %d attempts, want 1", original, n)
		}
	}
}

// countingRetryer wraps a retryer and counts the questions asked.
type countingRetryer struct {
	aws.Retryer
	asked atomic.Int32
}

func (r *countingRetryer) IsErrorRetryable(err error) bool {
	r.asked.Add(1)
	return r.Retryer.IsErrorRetryable(err)
}

// TestRetryerFromConfig: aws.Config.Retryer is honoured, as by
// aws-sdk-go-v2's clients: its MaxAttempts bounds the attempts, and it
// decides for errors the package does not classify (500 here).
func TestRetryerFromConfig(t *testing.T) {
	var attempts atomic.Int32
	srv := newServer(t, biditest.HandlerFunc(func(st *biditest.Stream) {
		attempts.Add(1)
		st.Fail(500, "InternalServerError", map[string]any{"Message": "boom"})
	}))
	cr := &countingRetryer{Retryer: retry.NewStandard(func(o *retry.StandardOptions) {
		o.MaxAttempts = 4
		o.Backoff = retry.BackoffDelayerFunc(func(int, error) (time.Duration, error) { return time.Millisecond, nil })
	})}
	cfg := srv.AWSConfig()
	cfg.Retryer = func() aws.Retryer { return cr }
	c := bidi.NewFromConfig(cfg)
	ctx := testCtx(t)
	sess := open(t, c, ctx)
	_, err := sess.Response(ctx)
	var ie *bidi.InternalServerError
	if !errors.As(err, &ie) {
		t.Fatalf("Response = %v, want InternalServerError", err)
	}
	if n := attempts.Load(); n != 4 {
		t.Fatalf("%d attempts, want the retryer's 4", n)
	}
	if cr.asked.Load() == 0 {
		t.Fatal("the configured retryer was not asked")
	}
}

// TestRetryBudgetShared: the retryer's token bucket is shared by the
// client's sessions: when many fail together, retries stop once the
// budget is spent instead of multiplying the load.
func TestRetryBudgetShared(t *testing.T) {
	var attempts atomic.Int32
	srv := newServer(t, biditest.HandlerFunc(func(st *biditest.Stream) {
		attempts.Add(1)
		st.Fail(503, "ServiceUnavailableError", map[string]any{"Message": "busy"})
	}))
	const sessions = 10
	c := srv.Client(func(o *bidi.Options) {
		o.Retryer = retry.NewStandard(func(so *retry.StandardOptions) {
			so.MaxAttempts = 3
			so.RateLimiter = ratelimit.NewTokenRateLimit(10) // two retries' worth
			so.RetryCost = 5
			so.Backoff = retry.BackoffDelayerFunc(func(int, error) (time.Duration, error) { return time.Millisecond, nil })
		})
	})
	ctx := testCtx(t)
	var wg sync.WaitGroup
	for range sessions {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sess, err := c.Open(ctx, &bidi.OpenInput{EndpointName: "ep", AwaitResponse: true})
			if err == nil {
				sess.Close()
				t.Error("Open succeeded against a server that always answers 503")
			}
		}()
	}
	wg.Wait()
	if n := attempts.Load(); n > sessions+2 {
		t.Fatalf("%d attempts for %d sessions with a budget of 2 retries; without a shared budget it would be %d", n, sessions, 3*sessions)
	}
}

// TestClockSkewCorrected: a client whose clock is 20 minutes off gets a
// 403 "Signature expired" once; the skew is measured from the response's
// Date header, the open is retried at once (even with RetryMaxAttempts 1)
// and later sessions sign with the corrected clock from the start.
func TestClockSkewCorrected(t *testing.T) {
	var refused atomic.Int32
	// Not newServer: the skewed attempt is a violation the server records.
	srv := biditest.NewServer(biditest.Echo())
	defer srv.Close()
	c := srv.Client(func(o *bidi.Options) {
		o.RetryMaxAttempts = 1
		o.Now = func() time.Time { return time.Now().Add(-20 * time.Minute) }
	})
	ctx := testCtx(t)
	for i := range 2 {
		sess := open(t, c, ctx)
		roundTrip(t, sess, "on time")
		sess.CloseSend()
		drainEOF(t, sess)
		if i == 0 {
			refused.Store(int32(len(srv.Violations())))
		}
	}
	if n := refused.Load(); n != 1 {
		t.Fatalf("first session: %d refusals by the server, want 1 (the skewed attempt)", n)
	}
	if n := len(srv.Violations()); n != 1 {
		t.Fatalf("second session was refused too: %d refusals in all", n)
	}
}

// TestAwaitResponse: with AwaitResponse, Open returns only once the
// service answered, and returns the typed HTTP error itself.
func TestAwaitResponse(t *testing.T) {
	release := make(chan struct{})
	srv := newServer(t, biditest.HandlerFunc(func(st *biditest.Stream) {
		if st.EndpointName == "fail" {
			st.Fail(424, "ModelError", map[string]any{"Message": "container refused", "OriginalStatusCode": 500})
			return
		}
		<-release
		st.Accept()
		biditest.Echo().ServeBidi(st)
	}))
	c := srv.Client(func(o *bidi.Options) { o.RetryMaxAttempts = 1 })
	ctx := testCtx(t)

	_, err := c.Open(ctx, &bidi.OpenInput{EndpointName: "fail", AwaitResponse: true})
	var me *bidi.ModelError
	if !errors.As(err, &me) {
		t.Fatalf("Open = %v, want the 424 ModelError from Open itself", err)
	}

	opened := make(chan *bidi.Session, 1)
	go func() {
		sess, err := c.Open(ctx, &bidi.OpenInput{EndpointName: "ok", AwaitResponse: true})
		if err != nil {
			t.Error(err)
		}
		opened <- sess
	}()
	// Open must still be waiting: the handler has not answered.
	select {
	case <-opened:
		t.Fatal("Open returned before the response head")
	case <-time.After(50 * time.Millisecond): // absence of an event: a bounded wait is the test
	}
	close(release)
	sess := <-opened
	if sess == nil {
		t.FailNow()
	}
	defer sess.Close()
	if r, err := sess.Response(context.Background()); err != nil || r.StatusCode != 200 {
		t.Fatalf("Response = %v, %v", r, err)
	}
	roundTrip(t, sess, "answered")
}
