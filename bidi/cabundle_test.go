package bidi_test

import (
	"context"
	"encoding/pem"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/sagemaker-bidi/sagemaker-bidi/bidi"
	"github.com/sagemaker-bidi/sagemaker-bidi/bidi/biditest"
)

// TestCABundleFromConfig checks that a custom CA bundle configured the AWS
// way (AWS_CA_BUNDLE) is trusted by the HTTP/2 client the package builds,
// and that without it the server's certificate is rejected.
func TestCABundleFromConfig(t *testing.T) {
	srv := biditest.NewServer(biditest.Echo())
	defer srv.Close()
	dir := t.TempDir()
	bundle := filepath.Join(dir, "ca.pem")
	pemBytes := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw})
	if err := os.WriteFile(bundle, pemBytes, 0o600); err != nil {
		t.Fatal(err)
	}
	empty := filepath.Join(dir, "empty")
	if err := os.WriteFile(empty, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	for k, v := range map[string]string{
		"AWS_CONFIG_FILE": empty, "AWS_SHARED_CREDENTIALS_FILE": empty, "AWS_EC2_METADATA_DISABLED": "true",
		"AWS_ACCESS_KEY_ID": srv.Credentials.AccessKeyID, "AWS_SECRET_ACCESS_KEY": srv.Credentials.SecretAccessKey,
		"AWS_SESSION_TOKEN": "", "AWS_REGION": srv.Region, "AWS_PROFILE": "", "AWS_ENDPOINT_URL": srv.URL,
		"AWS_ENDPOINT_URL_SAGEMAKER_RUNTIME_HTTP2": "",
	} {
		t.Setenv(k, v)
	}

	open := func(t *testing.T) error {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		cfg, err := config.LoadDefaultConfig(ctx)
		if err != nil {
			t.Fatal(err)
		}
		sess, err := bidi.NewFromConfig(cfg).Open(ctx, &bidi.OpenInput{EndpointName: "ca-bundle"})
		if err != nil {
			return err
		}
		defer sess.Close()
		if err := sess.Send(ctx, bidi.Text("ping")); err != nil {
			return err
		}
		m, err := sess.Recv(ctx)
		if err == nil && string(m.Data) != "ping" {
			t.Fatalf("echo = %q", m.Data)
		}
		return err
	}

	t.Run("without bundle", func(t *testing.T) {
		t.Setenv("AWS_CA_BUNDLE", "")
		os.Unsetenv("AWS_CA_BUNDLE")
		if err := open(t); err == nil {
			t.Fatal("a self-signed certificate was trusted without a CA bundle")
		}
	})
	t.Run("with bundle", func(t *testing.T) {
		t.Setenv("AWS_CA_BUNDLE", bundle)
		if err := open(t); err != nil {
			t.Fatalf("with AWS_CA_BUNDLE: %v", err)
		}
	})
}

// TestCustomEndpointNeedsRegion checks that a custom endpoint without a
// region fails in Open, before any request: SigV4 signs for a region.
func TestCustomEndpointNeedsRegion(t *testing.T) {
	srv := biditest.NewServer(biditest.Echo())
	defer srv.Close()
	client := srv.Client(func(o *bidi.Options) { o.Region = "" })
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := client.Open(ctx, &bidi.OpenInput{EndpointName: "no-region"}); !errors.Is(err, bidi.ErrNoRegion) {
		t.Fatalf("Open without a region: %v, want ErrNoRegion", err)
	}
	if n := len(srv.Streams()); n != 0 {
		t.Fatalf("%d requests reached the server", n)
	}
}
