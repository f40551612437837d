package inspect_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/sagemaker-bidi/sagemaker-bidi/bidi"
	"github.com/sagemaker-bidi/sagemaker-bidi/bidi/biditest"
	"github.com/sagemaker-bidi/sagemaker-bidi/bidi/biditest/inspect"
)

// scriptModel answers each text message with its upper case in three
// parts (PARTIAL, PARTIAL, COMPLETE) and fails the stream with
// ModelStreamError 1011 on the text "fail".
func scriptModel() biditest.Handler {
	return biditest.HandlerFunc(func(st *biditest.Stream) {
		for {
			m, err := st.Recv()
			if err != nil {
				return
			}
			if string(m.Data) == "fail" {
				st.SendException("ModelStreamError", []byte(`{"Message":"Model container closed the WebSocket connection (code 1011, reason \"boom\")","ErrorCode":"1011"}`))
				return
			}
			up := []byte(strings.ToUpper(string(m.Data)))
			n := len(up) / 3
			for i, p := range [][]byte{up[:n], up[n : 2*n], up[2*n:]} {
				if st.SendPart(bidi.Part{Data: p, Type: bidi.DataTypeUTF8, Complete: i == 2}) != nil {
					return
				}
			}
		}
	})
}

// converse sends msgs, then ends its input, and reads every reply.
func converse(t *testing.T, client *bidi.Client, msgs []bidi.Message) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	sess, err := client.Open(ctx, &bidi.OpenInput{EndpointName: "inspected"})
	if err != nil {
		t.Fatal(err)
	}
	defer sess.Close()
	go func() {
		for _, m := range msgs {
			if sess.Send(ctx, m) != nil {
				return
			}
		}
		sess.CloseSend()
	}()
	for {
		if _, err := sess.Recv(ctx); err != nil {
			return
		}
	}
}

// The Inspector lists a Server's streams and their messages.
func TestInspectorLists(t *testing.T) {
	in := inspect.New()
	srv := biditest.NewUnstartedServer(scriptModel())
	srv.Record = in.Record
	srv.Start()
	defer srv.Close()
	converse(t, srv.Client(), []bidi.Message{bidi.Text("abcdef"), bidi.Text("fail")})
	srv.Close()
	page := httptest.NewServer(in)
	defer page.Close()
	resp, err := http.Get(page.URL + "/api/sessions/1")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var got struct {
		Session struct {
			State     string `json:"state"`
			CloseCode int    `json:"close_code"`
			Sent      int    `json:"sent"`
			Received  int    `json:"received"`
		} `json:"session"`
		Messages []struct {
			Kind string `json:"kind"`
		} `json:"messages"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&got); err != nil {
		t.Fatal(err)
	}
	if got.Session.State != "ended" || got.Session.CloseCode != 1011 || got.Session.Sent != 2 || got.Session.Received != 3 || len(got.Messages) != 6 {
		t.Errorf("inspector: %+v", got)
	}
}
