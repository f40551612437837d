package bidi_test

import (
	"errors"
	"io"
	"net"
	"sync/atomic"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"golang.org/x/net/http2"

	"github.com/sagemaker-bidi/sagemaker-bidi/bidi"
	"github.com/sagemaker-bidi/sagemaker-bidi/bidi/biditest"
)

// refusingServer is a cleartext HTTP/2 (h2c) server that answers every
// stream with RST_STREAM(REFUSED_STREAM) and counts them.
func refusingServer(t *testing.T, refused *atomic.Int32) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				preface := make([]byte, len(http2.ClientPreface))
				if _, err := io.ReadFull(c, preface); err != nil {
					return
				}
				fr := http2.NewFramer(c, c)
				if fr.WriteSettings() != nil {
					return
				}
				for {
					f, err := fr.ReadFrame()
					if err != nil {
						return
					}
					switch f := f.(type) {
					case *http2.SettingsFrame:
						if !f.IsAck() && fr.WriteSettingsAck() != nil {
							return
						}
					case *http2.HeadersFrame:
						refused.Add(1)
						if fr.WriteRSTStream(f.StreamID, http2.ErrCodeRefusedStream) != nil {
							return
						}
					}
				}
			}()
		}
	}()
	return "http://" + ln.Addr().String()
}

// TestStreamRefusedBounded: a server that refuses every stream is asked a
// bounded number of times, whatever RetryMaxAttempts says (a refused
// stream is always safe to send again), and the session fails with a
// *StreamRefusedError wrapping the refusal.
func TestStreamRefusedBounded(t *testing.T) {
	var refused atomic.Int32
	url := refusingServer(t, &refused)
	srv := biditest.NewServer(biditest.Echo()) // only for its AWSConfig
	defer srv.Close()
	c := bidi.NewFromConfig(srv.AWSConfig(), func(o *bidi.Options) {
		o.BaseEndpoint = aws.String(url)
		o.RetryMaxAttempts = 1
		o.RetryMaxBackoff = 1 // keep the backoff between refusals short
	})
	defer c.CloseIdleConnections() // the refusing server keeps the connection open
	ctx := testCtx(t)
	_, err := c.Open(ctx, &bidi.OpenInput{EndpointName: "ep", AwaitResponse: true})
	var sre *bidi.StreamRefusedError
	if !errors.As(err, &sre) || sre.Attempts != 5 {
		t.Fatalf("Open = %v, want a *StreamRefusedError after 5 refusals", err)
	}
	if n := refused.Load(); n != 5 {
		t.Fatalf("the server refused %d streams, want 5", n)
	}
}
