package echoserver_test

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/binary"
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
// as sent, large ones included (flow control both ways: half the
// sessions echo three times the client's stream window), and a clean end
// after CloseSend.
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
	// A bound on a hang only: under -race on a saturated machine the
	// 30 MiB of large echoes take tens of seconds.
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
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
					// The whole message is sent before Recv reads
					// any of it: the server must hold the echo beyond
					// the client's stream window until Recv gives it
					// back.
					if err := s.Send(ctx, bidi.Binary(msg)); err != nil {
						return err
					}
					m, err := s.Recv(ctx)
					if err != nil {
						return fmt.Errorf("message %d: %w", k, err)
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

// TestFrameEchoConnWindow: the echo stops at the connection window the
// client gave (65,535 bytes, with a large stream window) and goes on once
// the client gives more. (bidi's client gives connection window back as
// frames arrive, so TestFrameEcho cannot see this rule.)
func TestFrameEchoConnWindow(t *testing.T) {
	srv, clientTLS := startFrameEcho(t)
	cfg := clientTLS.Clone()
	cfg.NextProtos = []string{"h2"}
	tc, err := tls.Dial("tcp", srv.URL[len("https://"):], cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer tc.Close()
	tc.SetDeadline(time.Now().Add(10 * time.Second))
	tc.Write([]byte(http2.ClientPreface))
	fr := http2.NewFramer(tc, tc)
	fr.WriteSettings(http2.Setting{ID: http2.SettingInitialWindowSize, Val: 1 << 20})
	var hbuf bytes.Buffer
	hpack.NewEncoder(&hbuf).WriteField(hpack.HeaderField{Name: ":method", Value: "POST"})
	fr.WriteHeaders(http2.HeadersFrameParam{StreamID: 1, BlockFragment: hbuf.Bytes(), EndHeaders: true})
	// One envelope (prelude, no headers, CRC unchecked) around 100,000
	// bytes of inner message, in frames the server's default size allows.
	const inner = 100000
	env := make([]byte, 12+inner+4)
	binary.BigEndian.PutUint32(env, uint32(len(env)))
	for len(env) > 0 {
		n := min(len(env), 16384)
		fr.WriteData(1, false, env[:n])
		env = env[n:]
	}
	fr.WritePing(false, [8]byte{1})
	// readUntilPingAck returns the DATA bytes on stream 1 before the
	// acknowledgement: the server answers in order, so DATA it would
	// send within the window comes before it.
	readUntilPingAck := func() int {
		t.Helper()
		n := 0
		for {
			f, err := fr.ReadFrame()
			if err != nil {
				t.Fatal(err)
			}
			switch f := f.(type) {
			case *http2.DataFrame:
				n += len(f.Data())
			case *http2.PingFrame:
				if f.IsAck() {
					return n
				}
			}
		}
	}
	if n := readUntilPingAck(); n != 65535 {
		t.Fatalf("%d bytes echoed within a connection window of 65,535", n)
	}
	fr.WriteWindowUpdate(0, inner)
	fr.WritePing(false, [8]byte{2})
	if n := readUntilPingAck(); n != inner-65535 {
		t.Fatalf("%d more bytes after the window update, want the %d left", n, inner-65535)
	}
}
