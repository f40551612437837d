package replay_test

import (
	"context"
	"fmt"
	"strings"

	"github.com/sagemaker-bidi/sagemaker-bidi/bidi"
	"github.com/sagemaker-bidi/sagemaker-bidi/bidi/biditest"
	"github.com/sagemaker-bidi/sagemaker-bidi/bidi/biditest/replay"
	"github.com/sagemaker-bidi/sagemaker-bidi/bidi/cassette"
)

// A cassette (here inline; usually a file recorded against the real
// endpoint with bidicat -record, the gateway's -record or cassette.Record)
// plays the model: the recorded answer comes back, fragments and the
// model's error included.
func ExampleNew() {
	const recorded = `{"cassette":"sagemaker-bidi","version":1}
{"t_us":0,"kind":"open","endpoint":"my-endpoint"}
{"t_us":900,"kind":"response","status":200,"variant":"AllTraffic"}
{"t_us":1000,"kind":"send","type":"UTF8","state":"COMPLETE","size":2,"text":"hi"}
{"t_us":5000,"kind":"recv","type":"UTF8","state":"PARTIAL","size":4,"text":"You "}
{"t_us":6000,"kind":"recv","type":"UTF8","state":"COMPLETE","size":8,"text":"said: hi"}
{"t_us":7000,"kind":"exception","exception":"ModelStreamError","body":"{\"Message\":\"bye\",\"ErrorCode\":\"1011\"}"}
{"t_us":7001,"kind":"end","reason":"exception","close_code":1011}
`
	c, err := cassette.Load(strings.NewReader(recorded))
	if err != nil {
		fmt.Println(err)
		return
	}
	replayer := replay.New(c, nil) // strict, at the recorded speed
	srv := biditest.NewServer(replayer)
	defer srv.Close()

	ctx := context.Background()
	sess, err := srv.Client().Open(ctx, &bidi.OpenInput{EndpointName: "my-endpoint"})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer sess.Close()
	sess.Send(ctx, bidi.Text("hi"))
	msg, _ := sess.Recv(ctx)
	fmt.Printf("%s\n", msg.Data)
	_, err = sess.Recv(ctx)
	fmt.Println(bidi.IsNormalClosure(err), err)

	srv.Close() // waits for the replay to finish
	fmt.Println("replay errors:", replayer.Err())
	// Output:
	// You said: hi
	// false bidi: ModelStreamError: bye (error code 1011)
	// replay errors: <nil>
}
