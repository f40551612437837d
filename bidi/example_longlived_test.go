package bidi_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws/retry"

	"github.com/sagemaker-bidi/sagemaker-bidi/bidi"
	"github.com/sagemaker-bidi/sagemaker-bidi/bidi/biditest"
)

// Ending a session without losing the model's last replies: Finish keeps
// the input open until the model has been quiet for a while, then ends it
// and waits for the stream's end, while another goroutine keeps reading.
func ExampleSession_Finish() {
	srv := biditest.NewServer(biditest.Echo())
	defer srv.Close()
	ctx := context.Background()
	sess, err := srv.Client().Open(ctx, &bidi.OpenInput{EndpointName: "my-endpoint"})
	if err != nil {
		log.Fatal(err)
	}
	defer sess.Close()
	for _, chunk := range []string{"one", "two", "three"} {
		if err := sess.Send(ctx, bidi.Text(chunk)); err != nil {
			log.Fatal(err)
		}
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		for msg, err := range sess.Messages(ctx) {
			if err != nil {
				log.Fatal(err)
			}
			fmt.Println(string(msg.Data))
		}
	}()
	if err := sess.Finish(ctx, 200*time.Millisecond); err != nil {
		log.Fatal(err)
	}
	<-done
	// Output:
	// one
	// two
	// three
}

// Failing fast: with AwaitResponse, Open returns only once the endpoint
// answered, with the typed HTTP error if it refused, so an application can
// know before it opens the microphone.
func ExampleOpenInput_awaitResponse() {
	srv := biditest.NewServer(biditest.HandlerFunc(func(st *biditest.Stream) {
		st.Fail(424, "ModelError", map[string]any{"Message": "Received client error (404) from primary", "OriginalStatusCode": 404})
	}))
	defer srv.Close()
	client := srv.Client(func(o *bidi.Options) {
		// Retries follow an aws.Retryer, as in aws-sdk-go-v2's clients;
		// a 424 whose container answered 4xx is never retried.
		o.Retryer = retry.NewStandard(func(so *retry.StandardOptions) { so.MaxAttempts = 5 })
	})
	_, err := client.Open(context.Background(), &bidi.OpenInput{EndpointName: "my-endpoint", AwaitResponse: true})
	var me *bidi.ModelError
	if errors.As(err, &me) {
		fmt.Println("endpoint refused the stream; container answered", me.OriginalStatusCode)
	}
	// Output:
	// endpoint refused the stream; container answered 404
}
