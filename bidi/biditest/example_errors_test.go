package biditest_test

import (
	"context"
	"errors"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/credentials"

	"github.com/sagemaker-bidi/sagemaker-bidi/bidi"
	"github.com/sagemaker-bidi/sagemaker-bidi/bidi/biditest"
)

// A model container that fails mid-stream: the service sends a
// ModelStreamError whose ErrorCode is the container's WebSocket close
// code, and the client's Recv returns it typed.
func ExampleStream_SendException() {
	srv := biditest.NewServer(biditest.HandlerFunc(func(st *biditest.Stream) {
		if _, err := st.Recv(); err != nil {
			return
		}
		st.SendException("ModelStreamError", []byte(`{"Message":"the container failed","ErrorCode":"1011"}`))
	}))
	defer srv.Close()

	ctx := context.Background()
	sess, err := srv.Client().Open(ctx, &bidi.OpenInput{EndpointName: "my-endpoint"})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer sess.Close()
	sess.Send(ctx, bidi.Text("hi"))
	_, err = sess.Recv(ctx)
	var mse *bidi.ModelStreamError
	if errors.As(err, &mse) {
		fmt.Println(mse.Message, mse.CloseCode(), mse.Retryable())
	}
	// Output: the container failed 1011 false
}

// A long-running server logs each violation as it is found, through
// OnViolation, instead of keeping them for Violations.
func ExampleServer_OnViolation() {
	srv := biditest.NewUnstartedServer(biditest.Echo())
	srv.OnViolation = func(v *biditest.Violation) {
		fmt.Println("rejected:", v.Rule, v.StatusCode, v.ErrorType)
	}
	srv.Start()
	defer srv.Close()

	// A client signing with the wrong secret.
	client := srv.Client(func(o *bidi.Options) {
		o.Credentials = credentials.NewStaticCredentialsProvider(srv.Credentials.AccessKeyID, "not the secret", "")
		o.RetryMaxAttempts = 1
	})
	ctx := context.Background()
	sess, err := client.Open(ctx, &bidi.OpenInput{EndpointName: "my-endpoint", AwaitResponse: true})
	if err == nil {
		sess.Close()
	}
	fmt.Println("kept:", len(srv.Violations()))
	// Output:
	// rejected: signature 403 InvalidSignatureException
	// kept: 0
}
