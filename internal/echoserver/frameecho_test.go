package echoserver_test

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"

	"github.com/sagemaker-bidi/sagemaker-bidi/bidi"
	"github.com/sagemaker-bidi/sagemaker-bidi/internal/echoserver"
	"github.com/sagemaker-bidi/sagemaker-bidi/internal/testexit"
)

func TestMain(m *testing.M) { testexit.Main(m) }

// startFrameEcho starts a FrameEcho, closed when the test ends, with
// net/http/httptest's loopback certificate, and returns it with a client
// configuration that trusts that certificate.
func startFrameEcho(t *testing.T) (*echoserver.FrameEcho, *tls.Config) {
	t.Helper()
	ts := httptest.NewUnstartedServer(nil)
	ts.StartTLS()
	ts.Close()
	srv, err := echoserver.StartFrameEcho(ts.TLS)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })
	pool := x509.NewCertPool()
	pool.AddCert(ts.Certificate())
	return srv, &tls.Config{RootCAs: pool}
}

// TestFrameEcho: sessions sharing one connection get every message back
// as sent, large ones included (flow control both ways: each session
// echoes more than a stream window and together more than the
// connection window), and a clean end after CloseSend.
func TestFrameEcho(t *testing.T) {
	srv, clientTLS := startFrameEcho(t)
	var dials atomic.Int32
	c := bidi.NewFromConfig(aws.Config{}, func(o *bidi.Options) {
		o.Region = "us-east-1"
		o.Credentials = credentials.NewStaticCredentialsProvider("AKID", "SECRET", "")
		o.BaseEndpoint = aws.String(srv.URL)
		o.TLSConfig = clientTLS
		o.DialContext = func(ctx context.Context, network, addr string) (net.Conn, error) {
			dials.Add(1)
			var d net.Dialer
			return d.DialContext(ctx, network, addr)
		}
	})
	defer c.CloseIdleConnections()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	const sessions = 20
	errc := make(chan error, sessions)
	for i := range sessions {
		go func() {
			errc <- func() error {
				s, err := c.Open(ctx, &bidi.OpenInput{EndpointName: "echo"})
				if err != nil {
					return err
				}
				defer s.Close()
				sizes := []int{1, 640, 70000, 1, 3 << 20}
				if i%2 == 1 {
					sizes = sizes[:4]
				}
				for k, n := range sizes {
					msg := bytes.Repeat([]byte{byte(i), byte(k)}, n/2+1)[:n]
					sendErr := make(chan error, 1)
					go func() { sendErr <- s.Send(ctx, bidi.Binary(msg)) }()
					m, err := s.Recv(ctx)
					if err != nil {
						return fmt.Errorf("message %d: %w", k, err)
					}
					if err := <-sendErr; err != nil {
						return err
					}
					if !bytes.Equal(m.Data, msg) {
						return fmt.Errorf("message %d: got %d bytes back, want %d as sent", k, len(m.Data), n)
					}
				}
				if err := s.CloseSend(); err != nil {
					return err
				}
				if _, err := s.Recv(ctx); !errors.Is(err, io.EOF) {
					return fmt.Errorf("after CloseSend: %v, want io.EOF", err)
				}
				return nil
			}()
		}()
	}
	for range sessions {
		if err := <-errc; err != nil {
			t.Error(err)
		}
	}
	if n := dials.Load(); n != 1 {
		t.Errorf("%d connections, want the sessions on one", n)
	}
}

// TestFrameEchoBadInput: a peer that is not an HTTP/2 client, or that
// sends a malformed envelope, gets its connection or stream ended; the
// server keeps serving and Close returns.
func TestFrameEchoBadInput(t *testing.T) {
	srv, clientTLS := startFrameEcho(t)
	cfg := clientTLS.Clone()
	cfg.NextProtos = []string{"h2"}
	dial := func() *tls.Conn {
		t.Helper()
		tc, err := tls.Dial("tcp", srv.URL[len("https://"):], cfg)
		if err != nil {
			t.Fatal(err)
		}
		tc.SetDeadline(time.Now().Add(10 * time.Second))
		return tc
	}

	// Not the client preface: the connection is closed.
	tc := dial()
	tc.Write([]byte("GET / HTTP/1.1\r\nHost: x\r\n\r\n"))
	if _, err := io.ReadAll(tc); err != nil {
		t.Fatalf("reading after a bad preface: %v", err)
	}
	tc.Close()

	// A stream whose envelope declares 8 bytes: RST_STREAM(PROTOCOL_ERROR).
	tc = dial()
	defer tc.Close()
	tc.Write([]byte(http2.ClientPreface))
	fr := http2.NewFramer(tc, tc)
	fr.WriteSettings()
	var hbuf bytes.Buffer
	enc := hpack.NewEncoder(&hbuf)
	for _, kv := range [][2]string{{":method", "POST"}, {":scheme", "https"}, {":authority", "x"}, {":path", "/"}} {
		enc.WriteField(hpack.HeaderField{Name: kv[0], Value: kv[1]})
	}
	fr.WriteHeaders(http2.HeadersFrameParam{StreamID: 1, BlockFragment: hbuf.Bytes(), EndHeaders: true})
	fr.WriteData(1, false, []byte{0, 0, 0, 8, 0, 0, 0, 0, 0, 0, 0, 0})
	for {
		f, err := fr.ReadFrame()
		if err != nil {
			t.Fatalf("no RST_STREAM: %v", err)
		}
		if rst, ok := f.(*http2.RSTStreamFrame); ok {
			if rst.StreamID != 1 || rst.ErrCode != http2.ErrCodeProtocol {
				t.Fatalf("got %v", rst)
			}
			break
		}
	}
}
