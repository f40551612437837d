package bridge_test

import (
	"errors"
	"net"
	"net/http"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"

	"github.com/sagemaker-bidi/sagemaker-bidi/bidi"
	"github.com/sagemaker-bidi/sagemaker-bidi/examples/container/model"
	"github.com/sagemaker-bidi/sagemaker-bidi/examples/gateway/bridge"
)

// echoOnce sends text and expects it back.
func echoOnce(t *testing.T, sess *bidi.Session, text string) {
	t.Helper()
	ctx := testContext(t)
	if err := sess.Send(ctx, bidi.Text(text)); err != nil {
		t.Fatal(err)
	}
	if m, err := sess.Recv(ctx); err != nil || string(m.Data) != text {
		t.Fatalf("echo of %q = %q, %v", text, m.Data, err)
	}
}

// Signatures made with other credentials are rejected with 403 before the
// container is contacted; with AcceptAnySignature they are accepted.
func TestSignatures(t *testing.T) {
	url := sampleContainer(t, model.Options{Defaults: "mode=echo"})
	g := startGateway(t, url)
	wrong := clientFor(t, g.Gateway, testAccessKey, "not-the-secret")
	sess := open(t, wrong, bidi.OpenInput{})
	_, err := sess.Recv(testContext(t))
	var re *bidi.ResponseError
	if !errors.As(err, &re) || re.StatusCode != http.StatusForbidden {
		t.Fatalf("wrong secret: %v, want HTTP 403", err)
	}
	if g.Handler().ActiveSessions() != 0 {
		t.Error("a rejected request reached the handler")
	}
	waitFor(t, "the rejection in the log", func() bool {
		return strings.Contains(g.logs.String(), `msg="request rejected" rule=signature status=403`)
	})
	if strings.Contains(g.logs.String(), "not-the-secret") || strings.Contains(g.logs.String(), testSecretKey) {
		t.Error("the log shows a secret key")
	}
	echoOnce(t, open(t, g.client(t), bidi.OpenInput{}), "signed right")

	any := startGateway(t, url, func(c *bridge.Config) {
		c.AcceptAnySignature = true
		c.Credentials = aws.Credentials{}
	})
	echoOnce(t, open(t, clientFor(t, any.Gateway, "AKIDANYONE", "whatever"), bidi.OpenInput{}), "any signature")
}

func TestStartWithoutCredentials(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	_, err = bridge.Start(bridge.Config{Listener: ln})
	if err == nil || !strings.Contains(err.Error(), "no credentials") {
		t.Fatalf("Start without credentials = %v", err)
	}
	if _, err := ln.Accept(); err == nil {
		t.Error("Start left the listener open")
	}
	if _, err := bridge.Start(bridge.Config{AcceptAnySignature: true, Options: bridge.Options{Container: "ws://host/path"}}); err == nil {
		t.Error("Start accepted a container URL with a path")
	}
}

// In H2C mode the gateway speaks unencrypted HTTP/2 and has no
// certificate.
func TestH2C(t *testing.T) {
	g := startGateway(t, sampleContainer(t, model.Options{Defaults: "mode=echo"}), func(c *bridge.Config) { c.H2C = true })
	if !strings.HasPrefix(g.URL(), "http://") || g.CertificatePEM() != nil {
		t.Fatalf("H2C gateway at %s with a certificate", g.URL())
	}
	echoOnce(t, open(t, g.client(t), bidi.OpenInput{}), "over h2c")
}

func TestCertificatePEM(t *testing.T) {
	g := startGateway(t, "ws://127.0.0.1:1")
	pem := string(g.CertificatePEM())
	if !strings.HasPrefix(pem, "-----BEGIN CERTIFICATE-----\n") || !strings.HasSuffix(pem, "-----END CERTIFICATE-----\n") {
		t.Fatalf("PEM = %q", pem)
	}
	cert := g.Certificate()
	if err := cert.VerifyHostname("localhost"); err != nil {
		t.Error(err)
	}
	if err := cert.VerifyHostname("127.0.0.1"); err != nil {
		t.Error(err)
	}
}

// Closing the gateway ends every session (the container's WebSocket gets
// 1001) and leaves no goroutine behind, whatever state the sessions were
// in.
func TestCloseLeavesNoGoroutines(t *testing.T) {
	before := runtime.NumGoroutine()
	t.Run("sessions", func(t *testing.T) {
		rc := newRawContainer(t)
		url := sampleContainer(t, model.Options{})
		// The deaf and the blocked sessions' containers never answer
		// the close: each Close waits out CloseTimeout.
		shortClose := func(c *bridge.Config) { c.CloseTimeout = 200 * time.Millisecond }
		g := startGateway(t, url, shortClose)
		c := g.client(t)
		ctx := testContext(t)

		// A finished session, a container that closed, a client that left.
		done := open(t, c, bidi.OpenInput{ModelQueryString: "mode=echo"})
		echoOnce(t, done, "x")
		done.CloseSend()
		expectEOF(t, done)
		closed := open(t, c, bidi.OpenInput{ModelQueryString: "close_after=0"})
		expectStreamError(t, closed)
		left := open(t, c, bidi.OpenInput{ModelQueryString: "mode=echo"})
		echoOnce(t, left, "y")
		left.Close()

		// Sessions still running at Close: idle, deaf, and blocked on a
		// client that does not read.
		open(t, c, bidi.OpenInput{ModelQueryString: "mode=echo"}).Send(ctx, bidi.Text("idle"))
		open(t, c, bidi.OpenInput{ModelQueryString: "mode=echo&deaf_after=0"}).Send(ctx, bidi.Text("unheard"))
		g2 := startGateway(t, rc.url, shortClose)
		blocked := open(t, g2.client(t), bidi.OpenInput{})
		peer := rc.accept(t)
		go func() {
			for range 100 {
				if _, err := peer.c.Write(frameBytes(true, opBinary, make([]byte, 64<<10))); err != nil {
					return
				}
			}
		}()
		_ = blocked
		waitFor(t, "three running sessions", func() bool {
			return g.Handler().ActiveSessions() == 2 && g2.Handler().ActiveSessions() == 1
		})

		start := time.Now()
		g.Close()
		g2.Close()
		if d := time.Since(start); d > 3*time.Second {
			t.Errorf("Close took %v", d)
		}
		if n := g.Handler().ActiveSessions() + g2.Handler().ActiveSessions(); n != 0 {
			t.Errorf("%d sessions still active after Close", n)
		}
	})
	deadline := time.Now().Add(5 * time.Second)
	for runtime.NumGoroutine() > before && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if n := runtime.NumGoroutine(); n > before {
		buf := make([]byte, 1<<20)
		t.Fatalf("%d goroutines before, %d after:\n%s", before, n, buf[:runtime.Stack(buf, true)])
	}
}
