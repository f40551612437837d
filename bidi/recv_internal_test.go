package bidi

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"

	"github.com/sagemaker-bidi/sagemaker-bidi/internal/echoserver"
	"github.com/sagemaker-bidi/sagemaker-bidi/internal/loopbackcert"
)

// TestRecvLetsGoOfTheDecodedMessage: once Recv or RecvPart returned, the
// answered attempt keeps no reference to the bytes it decoded (the part
// that aliases the decoder's buffer, or the engine's), so that an idle
// session holds no receive buffer however large its last message was.
func TestRecvLetsGoOfTheDecodedMessage(t *testing.T) {
	cert, err := loopbackcert.New("bidi recv test")
	if err != nil {
		t.Fatal(err)
	}
	srv, err := echoserver.StartFrameEcho(&tls.Config{Certificates: []tls.Certificate{cert}})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	pool := x509.NewCertPool()
	pool.AddCert(cert.Leaf)
	c := NewFromConfig(aws.Config{}, func(o *Options) {
		o.Region = "us-east-1"
		o.Credentials = credentials.NewStaticCredentialsProvider("AKID", "SECRET", "")
		o.BaseEndpoint = aws.String(srv.URL)
		o.TLSConfig = &tls.Config{RootCAs: pool}
	})
	defer c.CloseIdleConnections()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute) // a bound on a hang only
	defer cancel()
	s, err := c.Open(ctx, &OpenInput{EndpointName: "echo"})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()

	holdsNothing := func(after string) {
		t.Helper()
		a := s.cur.Load()
		if a == nil || a.dec == nil {
			t.Fatalf("after %s: no answered attempt", after)
		}
		if a.part.Bytes != nil {
			t.Fatalf("after %s: the attempt still references %d decoded bytes", after, len(a.part.Bytes))
		}
	}
	for _, size := range []int{640, 64 << 10} {
		msg := bytes.Repeat([]byte{byte(size)}, size)
		if err := s.Send(ctx, Binary(msg)); err != nil {
			t.Fatal(err)
		}
		m, err := s.Recv(ctx)
		if err != nil || !bytes.Equal(m.Data, msg) {
			t.Fatalf("Recv of %d bytes = %d bytes, %v", size, len(m.Data), err)
		}
		holdsNothing("Recv")
		if err := s.Send(ctx, Binary(msg)); err != nil {
			t.Fatal(err)
		}
		var got []byte
		for {
			p, err := s.RecvPart(ctx)
			if err != nil {
				t.Fatalf("RecvPart: %v", err)
			}
			holdsNothing("RecvPart")
			got = append(got, p.Data...)
			if p.Complete {
				break
			}
		}
		if !bytes.Equal(got, msg) {
			t.Fatalf("RecvPart's parts of %d bytes = %d bytes", size, len(got))
		}
	}
}
