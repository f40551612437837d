package biditest_test

import (
	"context"
	"fmt"
	"io"
	"strings"

	"github.com/sagemaker-bidi/sagemaker-bidi/bidi"
	"github.com/sagemaker-bidi/sagemaker-bidi/bidi/biditest"
)

// A handler scripts the model: here it answers every message in upper
// case. The server verifies the client's signatures and records what it
// received.
func Example() {
	srv := biditest.NewServer(biditest.HandlerFunc(func(st *biditest.Stream) {
		for {
			m, err := st.Recv()
			if err != nil {
				return // io.EOF after the client's end frame
			}
			if err := st.Send(bidi.Text(strings.ToUpper(string(m.Data)))); err != nil {
				return
			}
		}
	}))
	defer srv.Close()

	ctx := context.Background()
	sess, err := srv.Client().Open(ctx, &bidi.OpenInput{EndpointName: "my-endpoint"})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer sess.Close()

	for _, text := range []string{"hello", "world"} {
		if err := sess.Send(ctx, bidi.Text(text)); err != nil {
			fmt.Println(err)
			return
		}
		reply, err := sess.Recv(ctx)
		if err != nil {
			fmt.Println(err)
			return
		}
		fmt.Println(string(reply.Data))
	}
	sess.CloseSend()
	if _, err := sess.Recv(ctx); err == io.EOF {
		fmt.Println("end of stream")
	}

	st := srv.Streams()[0]
	fmt.Println("endpoint:", st.EndpointName)
	fmt.Println("parts received:", len(st.Received()))
	fmt.Println("violations:", len(srv.Violations()))
	// Output:
	// HELLO
	// WORLD
	// end of stream
	// endpoint: my-endpoint
	// parts received: 2
	// violations: 0
}
