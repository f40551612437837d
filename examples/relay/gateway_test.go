package main

import (
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"

	"github.com/sagemaker-bidi/sagemaker-bidi/examples/container/model"
	"github.com/sagemaker-bidi/sagemaker-bidi/examples/gateway/bridge"
)

// The whole chain on loopback: npm's ws client → the relay (this
// example, as a user runs it with -endpoint-url) → the local SageMaker
// gateway (SigV4 checked on the request and every event) → the sample
// model container, in echo mode. Every message comes back once, in order,
// with its type, although the container echoes binary messages in
// fragments: the session reassembles them.
func TestNodeThroughGatewayAndContainer(t *testing.T) {
	container := httptest.NewServer(model.NewHandler(model.Options{}))
	t.Cleanup(container.Close)
	creds := aws.Credentials{AccessKeyID: "AKIDGATEWAYTEST", SecretAccessKey: "gateway-test-secret-0000"}
	const region = "us-west-2"
	g, err := bridge.Start(bridge.Config{
		Options:     bridge.Options{Container: "ws://" + container.Listener.Addr().String()},
		Credentials: creds,
		Region:      region,
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(g.Close)
	dir := t.TempDir()
	cert := filepath.Join(dir, "gateway.pem")
	if err := os.WriteFile(cert, g.CertificatePEM(), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("AWS_ACCESS_KEY_ID", creds.AccessKeyID)
	t.Setenv("AWS_SECRET_ACCESS_KEY", creds.SecretAccessKey)
	t.Setenv("AWS_CA_BUNDLE", cert)
	t.Setenv("AWS_CONFIG_FILE", filepath.Join(dir, "none"))
	t.Setenv("AWS_SHARED_CREDENTIALS_FILE", filepath.Join(dir, "none"))
	t.Setenv("AWS_PROFILE", "")
	addr := startServer(t, "-endpoint", "demo", "-endpoint-url", g.URL(), "-region", region,
		"-query", "mode=echo", "-queue-bytes", "4194304")
	r := runNodeClient(t, "ws://"+addr+"/ws", 100)
	if r.Error != "" || r.Sent != 100 || r.Received != 100 || r.Mismatch != -1 || r.Code != 1000 {
		t.Fatalf("node client through the gateway: %+v", r)
	}
}
