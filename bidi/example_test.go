package bidi_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"log"
	"strings"

	"github.com/aws/aws-sdk-go-v2/config"

	"github.com/sagemaker-bidi/sagemaker-bidi/bidi"
	"github.com/sagemaker-bidi/sagemaker-bidi/bidi/biditest"
)

// A session with an in-process test server that echoes every message.
func Example() {
	srv := biditest.NewServer(biditest.Echo())
	defer srv.Close()
	client := srv.Client() // bidi.NewFromConfig, pointed at srv

	ctx := context.Background()
	sess, err := client.Open(ctx, &bidi.OpenInput{EndpointName: "my-endpoint"})
	if err != nil {
		log.Fatal(err)
	}
	defer sess.Close()

	if err := sess.Send(ctx, bidi.Text(`{"inputs":"hello"}`)); err != nil {
		log.Fatal(err)
	}
	if err := sess.Send(ctx, bidi.Binary([]byte{1, 2, 3})); err != nil {
		log.Fatal(err)
	}
	sess.CloseSend() // no more input; the replies keep coming

	for msg, err := range sess.Messages(ctx) {
		if err != nil {
			log.Fatal(err)
		}
		fmt.Printf("%s %q\n", msg.Type, msg.Data)
	}
	// Output:
	// UTF8 "{\"inputs\":\"hello\"}"
	// BINARY "\x01\x02\x03"
}

// Talking to a real endpoint: credentials and region come from the usual
// AWS configuration (environment, shared files, IAM role). The example has
// no Output comment, so it is compiled but not run: it needs AWS.
func ExampleNewFromConfig() {
	ctx := context.Background()
	cfg, err := config.LoadDefaultConfig(ctx, config.WithRegion("us-west-2"))
	if err != nil {
		log.Fatal(err)
	}
	client := bidi.NewFromConfig(cfg, func(o *bidi.Options) {
		o.MaxMessageSize = 4 << 20
	})
	sess, err := client.Open(ctx, &bidi.OpenInput{EndpointName: "my-endpoint"})
	if err != nil {
		log.Fatal(err)
	}
	defer sess.Close()
	// ... Send, Recv, CloseSend as in the package example.
}

// An HTTP error, here a 424 from a model container that failed, reaches
// the caller as a typed error as soon as it arrives, without CloseSend.
func Example_errors() {
	srv := biditest.NewServer(biditest.HandlerFunc(func(st *biditest.Stream) {
		st.Fail(424, "ModelError", map[string]any{
			"Message":            "Received server error (500) from primary",
			"OriginalStatusCode": 500,
		})
	}))
	defer srv.Close()

	ctx := context.Background()
	sess, err := srv.Client().Open(ctx, &bidi.OpenInput{EndpointName: "my-endpoint"})
	if err == nil {
		defer sess.Close()
		_, err = sess.Recv(ctx)
	}
	var me *bidi.ModelError
	if errors.As(err, &me) {
		fmt.Println("model error:", me.Message, "- container status", me.OriginalStatusCode)
	}
	// Output:
	// model error: Received server error (500) from primary - container status 500
}

// A model that streams its answer in parts, read as a byte stream.
func ExampleSession_Reader() {
	srv := biditest.NewServer(biditest.HandlerFunc(func(st *biditest.Stream) {
		prompt, err := st.Recv()
		if err != nil {
			return
		}
		for _, chunk := range []string{"You said: ", string(prompt.Data), "\nBye.\n"} {
			st.SendPart(bidi.Part{Data: []byte(chunk), Type: bidi.DataTypeUTF8})
		}
		st.SendPart(bidi.Part{Type: bidi.DataTypeUTF8, Complete: true})
	}))
	defer srv.Close()

	ctx := context.Background()
	sess, err := srv.Client().Open(ctx, &bidi.OpenInput{EndpointName: "chat"})
	if err != nil {
		log.Fatal(err)
	}
	defer sess.Close()
	sess.Send(ctx, bidi.Text("hi"))
	sess.CloseSend()

	sc := bufio.NewScanner(sess.Reader(ctx))
	for sc.Scan() {
		fmt.Println(strings.ToUpper(sc.Text()))
	}
	if err := sc.Err(); err != nil {
		log.Fatal(err)
	}
	// Output:
	// YOU SAID: HI
	// BYE.
}

// Streaming audio frames as the parts of one message, and receiving the
// model's parts as they arrive.
func ExampleSession_SendPart() {
	srv := biditest.NewServer(biditest.Echo()) // echoes each part
	defer srv.Close()

	ctx := context.Background()
	sess, err := srv.Client().Open(ctx, &bidi.OpenInput{EndpointName: "audio"})
	if err != nil {
		log.Fatal(err)
	}
	defer sess.Close()

	frames := [][]byte{make([]byte, 320), make([]byte, 320), make([]byte, 160)}
	for i, f := range frames {
		last := i == len(frames)-1
		if err := sess.SendPart(ctx, bidi.Part{Data: f, Type: bidi.DataTypeBinary, Complete: last}); err != nil {
			log.Fatal(err)
		}
	}
	sess.CloseSend()
	for p, err := range sess.Parts(ctx) {
		if err != nil {
			log.Fatal(err)
		}
		fmt.Println(len(p.Data), "bytes, complete:", p.Complete)
	}
	// Output:
	// 320 bytes, complete: false
	// 320 bytes, complete: false
	// 160 bytes, complete: true
}
