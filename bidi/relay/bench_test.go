package relay

import (
	"testing"

	"github.com/coder/websocket"

	"github.com/sagemaker-bidi/sagemaker-bidi/bidi"
)

// BenchmarkEcho is one 640-byte round trip (20 ms of 16 kHz audio) to
// biditest's echo: on a bidi session used directly, and through the relay
// (all in this process, on loopback).
func BenchmarkEcho(b *testing.B) {
	frame := make([]byte, 640)
	b.Run("direct", func(b *testing.B) {
		e := newEnv(b, nil, nil, nil)
		s, err := e.client.Open(b.Context(), &bidi.OpenInput{EndpointName: "ep", AwaitResponse: true})
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
	b.Run("relay", func(b *testing.B) {
		e := newEnv(b, nil, nil, nil, plainSessions)
		c := e.dial(b)
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
}
