package inspect_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"

	"github.com/sagemaker-bidi/sagemaker-bidi/bidi"
	"github.com/sagemaker-bidi/sagemaker-bidi/bidi/biditest"
	"github.com/sagemaker-bidi/sagemaker-bidi/bidi/biditest/inspect"
)

// An Inspector records every stream of a Server; its page, served on
// loopback, lists them live (here read through its JSON API, which the
// page uses).
func ExampleNew() {
	in := inspect.New()
	srv := biditest.NewUnstartedServer(biditest.Echo())
	srv.Record = in.Record
	srv.Start()
	defer srv.Close()
	page := httptest.NewServer(in) // open page.URL in a browser
	defer page.Close()

	ctx := context.Background()
	sess, err := srv.Client().Open(ctx, &bidi.OpenInput{EndpointName: "my-endpoint"})
	if err != nil {
		fmt.Println(err)
		return
	}
	sess.Send(ctx, bidi.Text("hi"))
	sess.Recv(ctx)
	sess.Close()
	srv.Close() // waits for the stream's end to be recorded

	resp, err := http.Get(page.URL + "/api/sessions")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer resp.Body.Close()
	var sessions []struct {
		Endpoint string `json:"endpoint"`
		State    string `json:"state"`
		Sent     int    `json:"sent"`
		Received int    `json:"received"`
	}
	json.NewDecoder(resp.Body).Decode(&sessions)
	fmt.Printf("%+v\n", sessions)
	// Output: [{Endpoint:my-endpoint State:ended Sent:1 Received:1}]
}
