package bridge_test

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"

	"github.com/sagemaker-bidi/sagemaker-bidi/bidi"
	"github.com/sagemaker-bidi/sagemaker-bidi/examples/container/model"
	"github.com/sagemaker-bidi/sagemaker-bidi/examples/gateway/bridge"
	"github.com/sagemaker-bidi/sagemaker-bidi/examples/internal/clitest"
)

// The credentials the test gateways verify and the test clients sign with.
const (
	testAccessKey = "AKIDGATEWAYTEST"
	testSecretKey = "gateway-test-secret-key"
	testRegion    = "us-west-2"
)

// testGateway is a started gateway with its log.
type testGateway struct {
	*bridge.Gateway
	logs *clitest.SyncBuffer
}

// startGateway starts a gateway in front of container with the test
// credentials and short timeouts; adjust changes the configuration
// first. The gateway is closed, and its goroutines waited for, at the
// end of the test; the log is printed if the test failed.
func startGateway(t *testing.T, container string, adjust ...func(*bridge.Config)) *testGateway {
	t.Helper()
	logs := new(clitest.SyncBuffer)
	cfg := bridge.Config{
		Options: bridge.Options{
			Container:    container,
			CloseTimeout: time.Second,
			DialTimeout:  2 * time.Second,
			Logger:       slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug})),
		},
		Credentials: aws.Credentials{AccessKeyID: testAccessKey, SecretAccessKey: testSecretKey},
	}
	for _, f := range adjust {
		f(&cfg)
	}
	g, err := bridge.Start(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		g.Close()
		if t.Failed() {
			t.Logf("gateway log:\n%s", logs)
		}
	})
	return &testGateway{Gateway: g, logs: logs}
}

// client returns a bidi client for g that signs with the test
// credentials, trusts g's certificate through its PEM encoding (as a user
// would, from -cert-out) and does not retry.
func (g *testGateway) client(t *testing.T, adjust ...func(*bidi.Options)) *bidi.Client {
	t.Helper()
	return clientFor(t, g.Gateway, testAccessKey, testSecretKey, adjust...)
}

func clientFor(t *testing.T, g *bridge.Gateway, accessKey, secretKey string, adjust ...func(*bidi.Options)) *bidi.Client {
	t.Helper()
	var tlsConfig *tls.Config
	if pemBytes := g.CertificatePEM(); pemBytes != nil {
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pemBytes) {
			t.Fatal("the gateway's PEM certificate does not parse")
		}
		tlsConfig = &tls.Config{RootCAs: pool}
	}
	cfg := aws.Config{
		Region:      testRegion,
		Credentials: credentials.NewStaticCredentialsProvider(accessKey, secretKey, ""),
	}
	c := bidi.NewFromConfig(cfg, append([]func(*bidi.Options){func(o *bidi.Options) {
		o.BaseEndpoint = aws.String(g.URL())
		o.TLSConfig = tlsConfig
		o.RetryMaxAttempts = 1
	}}, adjust...)...)
	t.Cleanup(c.CloseIdleConnections)
	return c
}

// open opens a session on endpoint "my-endpoint" with in's routing
// headers, closed at the end of the test.
func open(t *testing.T, c *bidi.Client, in bidi.OpenInput) *bidi.Session {
	t.Helper()
	if in.EndpointName == "" {
		in.EndpointName = "my-endpoint"
	}
	sess, err := c.Open(context.Background(), &in)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sess.Close() })
	return sess
}

// sampleContainer serves the sample model container and returns its
// ws:// base URL.
func sampleContainer(t *testing.T, opts model.Options) string {
	t.Helper()
	return serveContainer(t, model.NewHandler(opts))
}

// serveContainer serves h (a *model.Handler, possibly wrapped) and
// returns its ws:// base URL. Sessions are dropped at the end of the
// test.
func serveContainer(t *testing.T, h http.Handler) string {
	t.Helper()
	srv := httptest.NewServer(h)
	t.Cleanup(func() {
		srv.Close()
		if mh, ok := h.(*model.Handler); ok {
			mh.Close()
		}
	})
	return "ws://" + srv.Listener.Addr().String()
}

// testContext returns a context that ends with the test or after 10 s.
func testContext(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// waitFor polls cond every millisecond for up to 5 s.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(time.Millisecond)
	}
}

// describe prints parts compactly for failure messages.
func describe(parts []bidi.Part) string {
	var sb strings.Builder
	for i, p := range parts {
		if i > 0 {
			sb.WriteString(" ")
		}
		state := "COMPLETE"
		if !p.Complete {
			state = "PARTIAL"
		}
		sb.WriteString(p.Type.String() + "/" + state + "/" + string(p.Data))
	}
	return sb.String()
}
