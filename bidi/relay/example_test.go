package relay_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"time"

	"github.com/coder/websocket"

	"github.com/sagemaker-bidi/sagemaker-bidi/bidi"
	"github.com/sagemaker-bidi/sagemaker-bidi/bidi/biditest"
	"github.com/sagemaker-bidi/sagemaker-bidi/bidi/relay"
)

// A relay in front of an echo model: a WebSocket client sends text and
// binary messages, then its end-of-input message, and gets every reply
// and a normal close.
func ExampleNew() {
	srv := biditest.NewServer(biditest.Echo()) // stands in for SageMaker
	defer srv.Close()

	// The relay reuses the replies' buffers (see MessageBuffer).
	client := srv.Client(func(o *bidi.Options) { o.MessageBuffer = relay.MessageBuffer })
	h, err := relay.New(client, func(r *http.Request) (*bidi.OpenInput, error) {
		if r.URL.Query().Get("token") != "let-me-in" { // the application's own check
			return nil, &relay.StatusError{Status: http.StatusUnauthorized, Message: "log in first"}
		}
		return &bidi.OpenInput{EndpointName: "my-endpoint"}, nil
	}, &relay.Options{
		EndOfInput: func(m bidi.Message) bool { return m.Type == bidi.DataTypeUTF8 && string(m.Data) == `{"type":"end"}` },
		// After the end message, the model's input stays open until it
		// has been quiet this long (an echo answers at once).
		FinishQuiet: 50 * time.Millisecond,
	})
	if err != nil {
		panic(err)
	}
	defer h.Close()
	web := httptest.NewServer(h)
	defer web.Close()

	ctx := context.Background()
	url := "ws" + strings.TrimPrefix(web.URL, "http")
	if _, resp, err := websocket.Dial(ctx, url, nil); err != nil {
		fmt.Println("without a token:", resp.StatusCode)
	}
	c, _, err := websocket.Dial(ctx, url+"?token=let-me-in", nil)
	if err != nil {
		panic(err)
	}
	defer c.CloseNow()
	c.Write(ctx, websocket.MessageText, []byte(`{"inputs":"hello"}`))
	c.Write(ctx, websocket.MessageBinary, []byte{1, 2, 3})
	c.Write(ctx, websocket.MessageText, []byte(`{"type":"end"}`))
	for {
		typ, b, err := c.Read(ctx)
		if err != nil {
			fmt.Println("closed:", websocket.CloseStatus(err))
			return
		}
		fmt.Println(typ, b)
	}
	// Output:
	// without a token: 401
	// MessageText [123 34 105 110 112 117 116 115 34 58 34 104 101 108 108 111 34 125]
	// MessageBinary [1 2 3]
	// closed: StatusNormalClosure
}

// CloseFor maps how the model side ended to what the WebSocket client
// gets.
func ExampleCloseFor() {
	for _, err := range []error{
		nil,
		&bidi.ModelStreamError{ErrorCode_: "1013", Message: "Model container closed the WebSocket connection (code 1013)"},
		&bidi.ResponseError{StatusCode: 424, Code: "ModelError", Message: "Failed to establish WebSocket connection"},
		&bidi.InternalStreamFailure{Message: "The stream reached its maximum duration"},
	} {
		code, reason := relay.CloseFor(err)
		fmt.Printf("%d %q\n", int(code), reason)
	}
	// Output:
	// 1000 ""
	// 1013 "ModelStreamError: Model container closed the WebSocket connection (code 1013)"
	// 1014 "424 ModelError: Failed to establish WebSocket connection"
	// 1012 "InternalStreamFailure: The stream reached its maximum duration"
}
