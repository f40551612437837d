package bidi_test

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"

	"github.com/sagemaker-bidi/sagemaker-bidi/bidi"
	"github.com/sagemaker-bidi/sagemaker-bidi/bidi/biditest"
)

// failFirst returns a handler that fails the first n attempts with fail,
// after receiving recvBefore messages, and echoes on later attempts.
func failFirst(n, recvBefore int, attempts *atomic.Int32, fail func(st *biditest.Stream)) biditest.Handler {
	return biditest.HandlerFunc(func(st *biditest.Stream) {
		if int(attempts.Add(1)) <= n {
			for range recvBefore {
				if _, err := st.Recv(); err != nil {
					return
				}
			}
			fail(st)
			return
		}
		biditest.Echo().ServeBidi(st)
	})
}

// TestRetryWithReplay: opening is retried on 503, throttling and the
// transient 424; what was sent before the failure is replayed, re-signed
// on the new request's chain (the server verifies it), exactly once.
func TestRetryWithReplay(t *testing.T) {
	cases := map[string]func(st *biditest.Stream){
		"503": func(st *biditest.Stream) {
			st.Fail(503, "ServiceUnavailableError", map[string]any{"Message": "busy"})
		},
		"throttling": func(st *biditest.Stream) {
			st.Fail(400, "ThrottlingException", map[string]any{"message": "Rate exceeded"})
		},
		"424 WebSocket": func(st *biditest.Stream) {
			st.Fail(424, "ModelError", map[string]any{"Message": "Failed to establish WebSocket connection"})
		},
	}
	for name, fail := range cases {
		t.Run(name, func(t *testing.T) {
			var attempts atomic.Int32
			srv := newServer(t, failFirst(2, 2, &attempts, fail))
			ctx := testCtx(t)
			sess := open(t, srv.Client(fastRetry), ctx)
			for _, s := range []string{"one", "two"} {
				if err := sess.Send(ctx, bidi.Text(s)); err != nil {
					t.Fatalf("Send %s: %v", s, err)
				}
			}
			// Both messages reached attempts 1 and 2 (the handler read
			// them before failing); attempt 3 gets them replayed.
			for _, want := range []string{"one", "two"} {
				m, err := sess.Recv(ctx)
				if err != nil || string(m.Data) != want {
					t.Fatalf("Recv = %q, %v; want %q", m.Data, err, want)
				}
			}
			roundTrip(t, sess, "three")
			sess.CloseSend()
			drainEOF(t, sess)
			if n := attempts.Load(); n != 3 {
				t.Fatalf("%d attempts, want 3", n)
			}
			var got []string
			for _, p := range serverStream(t, srv, 2).Received() {
				got = append(got, string(p.Data))
			}
			if strings.Join(got, ",") != "one,two,three" {
				t.Fatalf("the third attempt received %v", got)
			}
			if resp, err := sess.Response(ctx); err != nil || resp.StatusCode != 200 {
				t.Fatalf("Response = %v, %v", resp, err)
			}
		})
	}
}

// TestRetryLimits: attempts are bounded; non-transient errors, streams the
// model answered and replays over ReplayLimit are not retried.
func TestRetryLimits(t *testing.T) {
	unavailable := func(st *biditest.Stream) {
		st.Fail(503, "ServiceUnavailableError", map[string]any{"Message": "busy"})
	}
	t.Run("attempts exhausted", func(t *testing.T) {
		var attempts atomic.Int32
		srv := newServer(t, failFirst(100, 0, &attempts, unavailable))
		ctx := testCtx(t)
		sess := open(t, srv.Client(fastRetry), ctx)
		_, err := sess.Recv(ctx)
		var su *bidi.ServiceUnavailableError
		if !errors.As(err, &su) {
			t.Fatalf("Recv = %v, want *ServiceUnavailableError", err)
		}
		if n := attempts.Load(); n != 3 {
			t.Fatalf("%d attempts, want RetryMaxAttempts = 3", n)
		}
	})
	t.Run("other 424", func(t *testing.T) {
		var attempts atomic.Int32
		srv := newServer(t, failFirst(1, 0, &attempts, func(st *biditest.Stream) {
			st.Fail(424, "ModelError", map[string]any{"Message": "Received server error (500) from primary"})
		}))
		ctx := testCtx(t)
		sess := open(t, srv.Client(fastRetry), ctx)
		_, err := sess.Recv(ctx)
		var me *bidi.ModelError
		if !errors.As(err, &me) || attempts.Load() != 1 {
			t.Fatalf("Recv = %v after %d attempts, want *ModelError after 1", err, attempts.Load())
		}
	})
	t.Run("answered", func(t *testing.T) {
		var attempts atomic.Int32
		srv := newServer(t, biditest.HandlerFunc(func(st *biditest.Stream) {
			attempts.Add(1)
			st.Accept()
			st.SendException("InternalStreamFailure", []byte(`{"Message":"failed after answering"}`))
		}))
		ctx := testCtx(t)
		sess := open(t, srv.Client(fastRetry), ctx)
		_, err := sess.Recv(ctx)
		var isf *bidi.InternalStreamFailure
		if !errors.As(err, &isf) {
			t.Fatalf("Recv = %v", err)
		}
		// The session's goroutine, the one that would retry, has exited:
		// no attempt can follow.
		waitNoBidiGoroutines(t, leakBound)
		if n := attempts.Load(); n != 1 {
			t.Fatalf("%d attempts: a stream the model answered was retried", n)
		}
	})
	t.Run("replay limit", func(t *testing.T) {
		var attempts atomic.Int32
		srv := newServer(t, failFirst(1, 1, &attempts, unavailable))
		ctx := testCtx(t)
		sess := open(t, srv.Client(fastRetry, func(o *bidi.Options) { o.ReplayLimit = 100 }), ctx)
		if err := sess.Send(ctx, bidi.Binary(make([]byte, 500))); err != nil {
			t.Fatal(err)
		}
		_, err := sess.Recv(ctx)
		var su *bidi.ServiceUnavailableError
		if !errors.As(err, &su) || attempts.Load() != 1 {
			t.Fatalf("Recv = %v after %d attempts; want the 503 after 1 (500 bytes sent > ReplayLimit)", err, attempts.Load())
		}
	})
}

// TestRetryEndsBeforeNextAttempt: when the next attempt of a retried open
// cannot be made (its credentials fail, or Open's context ends while they
// are retrieved), the session fails with that cause; it used to panic on
// the attempt that was never made.
func TestRetryEndsBeforeNextAttempt(t *testing.T) {
	errBroken := errors.New("credential source broken")
	for _, cancelOpen := range []bool{false, true} {
		name := "credentials fail"
		if cancelOpen {
			name = "Open's context cancelled"
		}
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			ctx, cancel := context.WithCancel(testCtx(t))
			defer cancel()
			var (
				calls atomic.Int32
				cache *aws.CredentialsCache
			)
			var attempts atomic.Int32
			srv := newServer(t, failFirst(1, 0, &attempts, func(st *biditest.Stream) {
				// The retry must retrieve credentials again.
				cache.Invalidate()
				st.Fail(503, "ServiceUnavailableError", map[string]any{"Message": "busy"})
			}))
			c := srv.Client(fastRetry, func(o *bidi.Options) {
				inner := o.Credentials
				cache = aws.NewCredentialsCache(aws.CredentialsProviderFunc(func(pctx context.Context) (aws.Credentials, error) {
					if calls.Add(1) == 1 {
						return inner.Retrieve(pctx)
					}
					if cancelOpen {
						cancel()
						return aws.Credentials{}, pctx.Err()
					}
					return aws.Credentials{}, errBroken
				}))
				o.Credentials = cache
			})
			sess, err := c.Open(ctx, &bidi.OpenInput{EndpointName: "my-endpoint"})
			if err == nil {
				defer sess.Close()
				_, err = sess.Response(context.Background())
			}
			if cancelOpen {
				if !errors.Is(err, context.Canceled) {
					t.Fatalf("error = %v, want context.Canceled", err)
				}
			} else if !errors.Is(err, errBroken) {
				t.Fatalf("error = %v, want the credential error", err)
			}
			if n := calls.Load(); n != 2 {
				t.Fatalf("credentials retrieved %d times, want 2", n)
			}
		})
	}
}
