package relay

import (
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/sagemaker-bidi/sagemaker-bidi/bidi"
	"github.com/sagemaker-bidi/sagemaker-bidi/bidi/biditest"
	"github.com/sagemaker-bidi/sagemaker-bidi/internal/memnet"
)

// newBubbleEnv is newEnv for a test in a testing/synctest bubble: the
// biditest server, the relay and the WebSocket clients talk over memnet
// listeners, so that every timer of the relay, the sessions and the
// model fires exactly when due on the bubble's clock.
func newBubbleEnv(t *testing.T, model biditest.Handler, opts *Options, mods ...func(*bidi.Client, *Options)) *env {
	t.Helper()
	modelNet, relayNet := memnet.Listen(), memnet.Listen()
	srv := biditest.NewUnstartedServer(model)
	srv.Listener = modelNet
	srv.Start()
	t.Cleanup(srv.Close)
	client := srv.Client(func(o *bidi.Options) {
		o.RetryMaxAttempts = 1
		o.DialContext = modelNet.DialContext
	})
	h, err := New(client, func(*http.Request) (*bidi.OpenInput, error) {
		return &bidi.OpenInput{EndpointName: "ep"}, nil
	}, withMods(client, opts, mods))
	if err != nil {
		t.Fatal(err)
	}
	e := &env{srv: srv, client: client, h: h, gate: newGate()}
	e.hs = httptest.NewUnstartedServer(h)
	e.hs.Listener.Close() // its loopback listener: the relay listens on relayNet
	e.hs.Listener = relayNet
	e.hs.Start()
	web := &http.Transport{DialContext: relayNet.DialContext}
	e.web = &http.Client{Transport: web}
	t.Cleanup(func() {
		web.CloseIdleConnections()
		e.hs.Close()
		h.Close()
	})
	return e
}
