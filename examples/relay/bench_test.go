package main

import (
	"bytes"
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/coder/websocket"

	"github.com/sagemaker-bidi/sagemaker-bidi/bidi"
	"github.com/sagemaker-bidi/sagemaker-bidi/bidi/relay"
	"github.com/sagemaker-bidi/sagemaker-bidi/examples/container/model"
	"github.com/sagemaker-bidi/sagemaker-bidi/examples/gateway/bridge"
)

// BenchmarkEchoThroughGateway is one 640-byte round trip (20 ms of 16 kHz
// audio) on the path SageMaker's is shaped like: HTTP/2 with signed
// events to the local gateway (SigV4 checked on the request and every
// event), a WebSocket from it to the sample container, which echoes.
// "direct" is a bidi session used directly on that path; "relay" is the
// same session behind the relay, a coder/websocket client in front
// ("relay-lean": one that reads into a buffer of its own without a
// cancellable context, as bidi/relay's BenchmarkEcho explains). All on
// loopback in this process.
func BenchmarkEchoThroughGateway(b *testing.B) {
	container := httptest.NewServer(model.NewHandler(model.Options{}))
	b.Cleanup(container.Close)
	g, err := bridge.Start(bridge.Config{
		Options:     bridge.Options{Container: "ws://" + container.Listener.Addr().String()},
		Credentials: aws.Credentials{AccessKeyID: "AKIDLOCAL", SecretAccessKey: "local-secret"},
		Region:      "us-west-2",
	})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(g.Close)
	client := g.Server().Client(func(o *bidi.Options) { o.RetryMaxAttempts = 1 })
	in := bidi.OpenInput{EndpointName: "demo", ModelQueryString: "mode=echo", AwaitResponse: true}
	frame := make([]byte, 640)

	b.Run("direct", func(b *testing.B) {
		s, err := client.Open(b.Context(), &in)
		if err != nil {
			b.Fatal(err)
		}
		defer s.Close()
		b.ReportAllocs()
		for b.Loop() {
			if err := s.Send(b.Context(), bidi.Binary(frame)); err != nil {
				b.Fatal(err)
			}
			if _, err := s.Recv(b.Context()); err != nil {
				b.Fatal(err)
			}
		}
	})
	// dial starts a relay in front of client and connects to it.
	dial := func(b *testing.B) *websocket.Conn {
		h, err := relay.New(client, func(*http.Request) (*bidi.OpenInput, error) {
			in2 := in
			return &in2, nil
		}, &relay.Options{Open: relay.Sessions(client)})
		if err != nil {
			b.Fatal(err)
		}
		hs := httptest.NewServer(h)
		b.Cleanup(hs.Close)
		b.Cleanup(func() { h.Close() })
		c, _, err := websocket.Dial(b.Context(), "ws"+strings.TrimPrefix(hs.URL, "http"), nil)
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { c.CloseNow() })
		return c
	}
	b.Run("relay", func(b *testing.B) {
		c := dial(b)
		b.ReportAllocs()
		for b.Loop() {
			if err := c.Write(b.Context(), websocket.MessageBinary, frame); err != nil {
				b.Fatal(err)
			}
			if _, _, err := c.Read(b.Context()); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("relay-lean", func(b *testing.B) {
		c := dial(b)
		var buf bytes.Buffer
		buf.Grow(4096)
		b.ReportAllocs()
		for b.Loop() {
			if err := c.Write(context.Background(), websocket.MessageBinary, frame); err != nil {
				b.Fatal(err)
			}
			_, r, err := c.Reader(context.Background())
			if err != nil {
				b.Fatal(err)
			}
			buf.Reset()
			if _, err := buf.ReadFrom(r); err != nil {
				b.Fatal(err)
			}
		}
	})
}
