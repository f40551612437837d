package main

import (
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sagemaker-bidi/sagemaker-bidi/examples/container/model"
	"github.com/sagemaker-bidi/sagemaker-bidi/examples/gateway/bridge"
)

// gateway starts the sample model container and the local gateway in
// front of it, both on loopback, and returns the flags that point bidicat
// at the gateway: the chain a developer runs before deploying.
func gateway(t *testing.T) []string {
	t.Helper()
	container := httptest.NewServer(model.NewHandler(model.Options{}))
	t.Cleanup(container.Close)
	g, err := bridge.Start(bridge.Config{
		Options:     bridge.Options{Container: "ws://" + container.Listener.Addr().String()},
		Credentials: testCredentials,
		Region:      testRegion,
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(g.Close)
	cert := filepath.Join(t.TempDir(), "gateway.pem")
	if err := os.WriteFile(cert, g.CertificatePEM(), 0o600); err != nil {
		t.Fatal(err)
	}
	return []string{"-endpoint", "demo", "-endpoint-url", g.URL(), "-ca-cert", cert}
}

func TestGatewayChat(t *testing.T) {
	flags := gateway(t)
	// The container stops at our end of the stream: -linger waits for
	// the answer first.
	r := runCat(t, cleanEnv(t), chatRequest("via the gateway")+"\n", append(flags, "-o", "answer", "-linger", "1s")...)
	r.wantCode(t, exitOK)
	if r.stdout != "You said: via the gateway\n" || r.stderr != "" {
		t.Errorf("stdout %q, stderr %q", r.stdout, r.stderr)
	}
}

func TestGatewayEchoJSON(t *testing.T) {
	t.Parallel() // mostly waiting: the 1 s -linger
	flags := gateway(t)
	r := runCat(t, cleanEnv(t), "one\ntwo\n", append(flags, "-query", "mode=echo", "-json", "-linger", "1s")...)
	r.wantCode(t, exitOK)
	objs := r.jsonLines(t)
	msgs := ofType(objs, "message")
	if len(msgs) != 2 || msgs[0]["text"] != "one" || msgs[1]["text"] != "two" {
		t.Errorf("messages %v", msgs)
	}
	if resp := ofType(objs, "response"); len(resp) != 1 || resp[0]["invoked_production_variant"] != bridge.DefaultVariant {
		t.Errorf("response %v", resp)
	}
}

func TestGatewayUpgradeRefused(t *testing.T) {
	flags := gateway(t)
	r := runCat(t, cleanEnv(t), "x\n", append(flags, "-query", "refuse=503", "-json")...)
	r.wantCode(t, exitHTTP)
	e := ofType(r.jsonLines(t), "error")
	if len(e) != 1 || e[0]["status"] != 424.0 || e[0]["code"] != "ModelError" ||
		e[0]["message"] != bridge.UpgradeFailedMessage || e[0]["original_status_code"] != 503.0 {
		t.Errorf("error %v", e)
	}
}

func TestGatewayContainerCloses(t *testing.T) {
	flags := gateway(t)
	r := runCat(t, cleanEnv(t), "x\n", append(flags, "-query", "mode=echo&close_after=1&close_code=1011&close_reason=bye", "-nl", "-linger", "2s")...)
	r.wantCode(t, exitStream)
	if r.stdout != "x\n" {
		t.Errorf("stdout %q: want the echo sent before the close", r.stdout)
	}
	for _, want := range []string{"ModelStreamError", "modeled error code:   1011", `reason "bye"`} {
		if !strings.Contains(r.stderr, want) {
			t.Errorf("stderr lacks %q:\n%s", want, r.stderr)
		}
	}
}

// TestGatewayPipeWithoutLinger pipes lines to the gateway with no
// -linger: the gateway, like SageMaker, closes the container's WebSocket
// once bidicat's input ends, so bidicat waits for the model to go quiet
// (the default -linger of piped input) before it ends its side, or the
// echoes in flight are lost.
func TestGatewayPipeWithoutLinger(t *testing.T) {
	t.Parallel() // mostly waiting: the 1 s -linger of piped input
	flags := gateway(t)
	r := runCat(t, cleanEnv(t), "hello\nworld\n", append(flags, "-query", "mode=echo", "-nl")...)
	r.wantCode(t, exitOK)
	if r.stdout != "hello\nworld\n" || r.stderr != "" {
		t.Errorf("stdout %q, stderr %q; want both lines echoed", r.stdout, r.stderr)
	}
}
