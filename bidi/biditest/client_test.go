package biditest_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"testing"
	"time"

	"github.com/sagemaker-bidi/sagemaker-bidi/bidi"
	"github.com/sagemaker-bidi/sagemaker-bidi/bidi/biditest"
)

// These tests run package bidi's real client against the server: each side
// checks the other's signing, framing and error layout.

func TestBidiClientEcho(t *testing.T) {
	srv := biditest.NewServer(biditest.Echo())
	defer srv.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()

	sess, err := srv.Client().Open(ctx, &bidi.OpenInput{EndpointName: "my-endpoint", TargetVariant: "v1"})
	if err != nil {
		t.Fatal(err)
	}
	defer sess.Close()

	big := bytes.Repeat([]byte{0xab}, 200<<10) // fragmented by the client
	for _, m := range []bidi.Message{bidi.Text("hello"), bidi.Binary(big)} {
		if err := sess.Send(ctx, m); err != nil {
			t.Fatal(err)
		}
		got, err := sess.Recv(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if got.Type != m.Type || !bytes.Equal(got.Data, m.Data) {
			t.Fatalf("echo of %d bytes: got %d bytes of %v", len(m.Data), len(got.Data), got.Type)
		}
	}
	if err := sess.CloseSend(); err != nil {
		t.Fatal(err)
	}
	if _, err := sess.Recv(ctx); err != io.EOF {
		t.Fatalf("Recv at end = %v, want io.EOF", err)
	}

	if v := srv.Violations(); len(v) != 0 {
		t.Fatalf("the server saw violations: %v", v)
	}
	st := srv.Streams()[0]
	parts := st.Received()
	if st.TargetVariant != "v1" || len(parts) < 3 || parts[1].Complete || !parts[len(parts)-1].Complete {
		t.Fatalf("stream %q: %d parts", st.TargetVariant, len(parts))
	}
	for i, p := range parts {
		if p.Padding < 0 {
			t.Errorf("part %d carries no padding", i)
		}
	}
}

func TestBidiClientH2C(t *testing.T) {
	srv := biditest.NewUnstartedServer(biditest.Echo())
	srv.H2C = true
	srv.Start()
	defer srv.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	sess, err := srv.Client().Open(ctx, &bidi.OpenInput{EndpointName: "e"})
	if err != nil {
		t.Fatal(err)
	}
	defer sess.Close()
	if err := sess.Send(ctx, bidi.Text("h2c")); err != nil {
		t.Fatal(err)
	}
	if m, err := sess.Recv(ctx); err != nil || string(m.Data) != "h2c" {
		t.Fatalf("Recv = %q, %v", m.Data, err)
	}
}

func TestBidiClientErrors(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()

	t.Run("424 before CloseSend", func(t *testing.T) {
		srv := biditest.NewServer(biditest.HandlerFunc(func(st *biditest.Stream) {
			st.Fail(424, "ModelError", map[string]any{
				"Message": "Failed to establish WebSocket connection", "OriginalStatusCode": 502,
				"OriginalMessage": "bad gateway", "LogStreamArn": "arn:aws:logs:us-west-2:1:log-group:x", "ErrorCode": "ModelError",
			})
		}))
		defer srv.Close()
		sess, err := srv.Client(func(o *bidi.Options) { o.RetryMaxAttempts = 1 }).Open(ctx, &bidi.OpenInput{EndpointName: "e"})
		if err != nil {
			t.Fatal(err)
		}
		defer sess.Close()
		_, err = sess.Recv(ctx)
		var me *bidi.ModelError
		if !errors.As(err, &me) || me.OriginalStatusCode != 502 || me.LogStreamArn == "" {
			t.Fatalf("Recv = %v, want *bidi.ModelError", err)
		}
	})
	t.Run("ModelStreamError", func(t *testing.T) {
		srv := biditest.NewServer(biditest.HandlerFunc(func(st *biditest.Stream) {
			if _, err := st.Recv(); err != nil {
				return
			}
			st.SendException("ModelStreamError", []byte(`{"Message":"model stream broke","ErrorCode":"StreamBroken"}`))
		}))
		defer srv.Close()
		sess, err := srv.Client().Open(ctx, &bidi.OpenInput{EndpointName: "e"})
		if err != nil {
			t.Fatal(err)
		}
		defer sess.Close()
		if err := sess.Send(ctx, bidi.Text("go")); err != nil {
			t.Fatal(err)
		}
		_, err = sess.Recv(ctx)
		var mse *bidi.ModelStreamError
		if !errors.As(err, &mse) || mse.ErrorCode_ != "StreamBroken" || mse.Message != "model stream broke" {
			t.Fatalf("Recv = %v, want *bidi.ModelStreamError", err)
		}
	})
}
