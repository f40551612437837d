package cassette_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"strings"

	"github.com/sagemaker-bidi/sagemaker-bidi/bidi"
	"github.com/sagemaker-bidi/sagemaker-bidi/bidi/biditest"
	"github.com/sagemaker-bidi/sagemaker-bidi/bidi/biditest/replay"
	"github.com/sagemaker-bidi/sagemaker-bidi/bidi/cassette"
)

// Record a session once (here against biditest's echo model; in real
// life against your endpoint), then replay the cassette in a test with
// biditest as the model.
func ExampleRecord() {
	ctx := context.Background()
	model := biditest.NewServer(biditest.Echo())
	defer model.Close()

	var file bytes.Buffer // an *os.File in real life
	w, err := cassette.NewWriter(&file, &cassette.WriterOptions{Recorder: "example"})
	if err != nil {
		fmt.Println(err)
		return
	}
	in := &bidi.OpenInput{EndpointName: "my-endpoint"}
	sess, err := model.Client().Open(ctx, in)
	if err != nil {
		fmt.Println(err)
		return
	}
	rec := cassette.Record(sess, in, w, nil)
	rec.Send(ctx, bidi.Text("hello"))
	rec.CloseSend()
	for {
		if _, err := rec.Recv(ctx); err != nil {
			break // io.EOF
		}
	}
	rec.Close() // records the end and flushes the cassette

	c, err := cassette.Load(&file)
	if err != nil {
		fmt.Println(err)
		return
	}
	var kinds []string
	for _, e := range c.Events {
		kinds = append(kinds, string(e.Kind))
	}
	fmt.Println(strings.Join(kinds, " "))

	// In CI: the cassette plays the model.
	replayed := biditest.NewServer(replay.New(c, nil))
	defer replayed.Close()
	sess, err = replayed.Client().Open(ctx, in)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer sess.Close()
	sess.Send(ctx, bidi.Text("hello"))
	sess.CloseSend()
	msg, _ := sess.Recv(ctx)
	_, err = sess.Recv(ctx)
	fmt.Printf("%s %v\n", msg.Data, err == io.EOF)
	// Output:
	// open send send_end response recv end
	// hello true
}
