package biditest_test

import (
	"context"
	"testing"

	"github.com/aws/aws-sdk-go-v2/credentials"

	"github.com/sagemaker-bidi/sagemaker-bidi/bidi"
	"github.com/sagemaker-bidi/sagemaker-bidi/bidi/biditest"
)

func TestForgetStreamAndTakeViolations(t *testing.T) {
	var srv *biditest.Server
	srv = biditest.NewServer(biditest.HandlerFunc(func(st *biditest.Stream) {
		if n := len(srv.Streams()); n != 1 {
			t.Errorf("Streams while the handler runs: %d, want 1", n)
		}
		srv.ForgetStream(st)
		srv.ForgetStream(st) // a second time does nothing
	}))
	defer srv.Close()
	ctx := context.Background()
	sess, err := srv.Client().Open(ctx, &bidi.OpenInput{EndpointName: "e"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := sess.Response(ctx); err != nil {
		t.Fatal(err)
	}
	sess.Close()
	if n := len(srv.Streams()); n != 0 {
		t.Errorf("Streams after ForgetStream: %d, want 0", n)
	}

	// A request signed with another secret is a violation.
	bad := srv.Client(func(o *bidi.Options) {
		o.Credentials = credentials.NewStaticCredentialsProvider(srv.Credentials.AccessKeyID, "another secret", "")
		o.RetryMaxAttempts = 1
	})
	sess, err = bad.Open(ctx, &bidi.OpenInput{EndpointName: "e"})
	if err != nil {
		t.Fatal(err)
	}
	sess.Response(ctx)
	sess.Close()
	if v := srv.TakeViolations(); len(v) != 1 {
		t.Fatalf("TakeViolations = %v, want one", v)
	}
	if v := srv.TakeViolations(); len(v) != 0 {
		t.Errorf("TakeViolations again = %v, want none", v)
	}
}
