package bridge_test

import (
	"context"
	"net/http/httptest"
	"testing"
	"testing/synctest"
	"time"

	"github.com/sagemaker-bidi/sagemaker-bidi/bidi"
	"github.com/sagemaker-bidi/sagemaker-bidi/examples/container/model"
	"github.com/sagemaker-bidi/sagemaker-bidi/examples/gateway/bridge"
	"github.com/sagemaker-bidi/sagemaker-bidi/internal/memnet"
)

// bubbleGateway is startGateway for a test in a testing/synctest
// bubble: the client, the gateway and the sample container talk over
// memnet, so that the gateway's pings and timeouts happen exactly when
// due on the bubble's clock. It returns the gateway and a client of it.
func bubbleGateway(t *testing.T, opts model.Options, adjust ...func(*bridge.Config)) (*testGateway, *bidi.Client) {
	t.Helper()
	containerNet, gatewayNet := memnet.Listen(), memnet.Listen()
	h := model.NewHandler(opts)
	container := httptest.NewUnstartedServer(h)
	container.Listener.Close() // its loopback listener: the container listens on containerNet
	container.Listener = containerNet
	container.Start()
	t.Cleanup(func() {
		container.Close()
		h.Close()
	})
	g := startGateway(t, "ws://"+containerNet.Addr().String(), append([]func(*bridge.Config){func(c *bridge.Config) {
		c.Listener = gatewayNet
		c.DialContext = containerNet.DialContext
	}}, adjust...)...)
	return g, g.client(t, func(o *bidi.Options) { o.DialContext = gatewayNet.DialContext })
}

// A container that answers no ping loses its session exactly when the
// MaxMissedPongs-th ping goes unanswered, an interval after it was sent:
// the first ping an interval after the open, so (1+3)×20 ms; one that
// is deaf as well (it reads nothing, not the close frame either) the
// CloseTimeout after that. The client hears a 1006 ModelStreamError.
// (TestPingTimeout checks the same on loopback, within bounds.)
func TestPingTimeoutOnTheClock(t *testing.T) {
	for _, tc := range []struct {
		query string
		want  time.Duration
	}{
		{"mode=echo&no_pong=true", 80 * time.Millisecond},
		{"mode=echo&deaf_after=0&hold=1m", 280 * time.Millisecond},
	} {
		t.Run(tc.query, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				_, client := bubbleGateway(t, model.Options{}, func(c *bridge.Config) {
					c.PingInterval = 20 * time.Millisecond
					c.MaxMissedPongs = 3
					c.CloseTimeout = 200 * time.Millisecond
				})
				start := time.Now()
				sess := open(t, client, bidi.OpenInput{ModelQueryString: tc.query})
				mse := expectStreamError(t, sess)
				if mse.ErrorCode_ != "1006" || mse.Message != "Model container did not answer 3 WebSocket pings sent every 20ms (code 1006)" {
					t.Fatalf("ModelStreamError = %+v", *mse)
				}
				if d := time.Since(start); d != tc.want {
					t.Fatalf("the session failed after %v, want %v", d, tc.want)
				}
			})
		})
	}
}

// A container that answers its pings keeps its session through 500 ping
// intervals, whatever the traffic.
func TestPingsAnsweredOnTheClock(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		_, client := bubbleGateway(t, model.Options{}, func(c *bridge.Config) {
			c.PingInterval = 20 * time.Millisecond
			c.MaxMissedPongs = 2
		})
		sess := open(t, client, bidi.OpenInput{ModelQueryString: "mode=echo"})
		ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
		defer cancel()
		ticks(t, ctx, sess, 10, time.Second)
	})
}
