package biditest_test

import (
	"context"
	"testing"

	"github.com/aws/aws-sdk-go-v2/credentials"

	"github.com/sagemaker-bidi/sagemaker-bidi/bidi"
	"github.com/sagemaker-bidi/sagemaker-bidi/bidi/biditest"
)

func TestForgetStream(t *testing.T) {
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

}

// With OnViolation, violations go to the hook as they are found and the
// server keeps none.
func TestOnViolation(t *testing.T) {
	got := make(chan *biditest.Violation, 2)
	srv := biditest.NewUnstartedServer(nil)
	srv.OnViolation = func(v *biditest.Violation) { got <- v }
	srv.Start()
	defer srv.Close()
	ctx := context.Background()
	// A request signed with another secret is a violation.
	bad := srv.Client(func(o *bidi.Options) {
		o.Credentials = credentials.NewStaticCredentialsProvider(srv.Credentials.AccessKeyID, "another secret", "")
		o.RetryMaxAttempts = 1
	})
	sess, err := bad.Open(ctx, &bidi.OpenInput{EndpointName: "e"})
	if err != nil {
		t.Fatal(err)
	}
	sess.Response(ctx)
	sess.Close()
	select {
	case v := <-got:
		if v.Rule != "signature" || v.StatusCode != 403 || v.ErrorType == "" {
			t.Errorf("OnViolation got %+v, want a 403 signature violation", v)
		}
	default:
		t.Fatal("OnViolation not called before the rejection")
	}
	if len(got) != 0 {
		t.Errorf("OnViolation called %d more times", len(got))
	}
	if v := srv.Violations(); len(v) != 0 {
		t.Errorf("Violations = %v, want none with OnViolation", v)
	}
}
