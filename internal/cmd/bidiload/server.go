package main

import (
	"crypto/tls"
	"encoding/pem"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"golang.org/x/net/http2"

	"github.com/sagemaker-bidi/sagemaker-bidi/bidi/biditest"
	"github.com/sagemaker-bidi/sagemaker-bidi/internal/echoserver"
	"github.com/sagemaker-bidi/sagemaker-bidi/internal/loopbackcert"
)

// The credentials and region the servers accept and the client (in
// another process, with -url) signs with.
var (
	loadCredentials = aws.Credentials{AccessKeyID: "AKIDBIDILOAD", SecretAccessKey: "bidiload-secret-access-key-0000"}
	loadRegion      = "us-west-2"
)

var (
	fDir     = flag.String("dir", filepath.Join(os.TempDir(), "bidiload"), "server: where to write ca.pem and the *.url files")
	fStreams = flag.Int("streams", 100000, "server: SETTINGS_MAX_CONCURRENT_STREAMS of the biditest servers (Server.MaxConcurrentStreams)")
	fVerify  = flag.Bool("verify", true, "server: verify SigV4 signatures (false sets Server.SkipVerify)")
	fRBuf    = flag.Int("rbuf", 0, "server: Server.MaxReceiveBufferPerStream (0: net/http's default, 1 MiB)")
	fStdin   = flag.Bool("stdin", false, "server: also stop at the end of standard input")
)

// serve runs the servers until SIGINT or SIGTERM (or the end of standard
// input, with -stdin): biditest.Echo and a discarding handler (both biditest, with every
// check on unless -verify=false), a minimal event-stream echo and a raw
// HTTP/2 echo (the floor of mode small), and echoserver.FrameEcho (the
// event-stream echo without net/http's server: frame.url), all sharing
// one certificate.
func serve() {
	if *fCPUProfile != "" {
		stop := startProfile()
		defer stop()
	}
	cert, certPEM := newCert()
	tlsConfig := &tls.Config{Certificates: []tls.Certificate{cert}}

	start := func(h biditest.Handler) *biditest.Server {
		s := biditest.NewUnstartedServer(h)
		s.TLS = tlsConfig
		s.MaxConcurrentStreams = uint32(*fStreams)
		s.MaxReceiveBufferPerStream = *fRBuf
		s.SkipVerify = !*fVerify
		s.MaxRecorded = -1
		s.Credentials = loadCredentials
		s.Region = loadRegion
		s.Start()
		return s
	}
	echo := start(biditest.Echo())
	defer echo.Close()
	discard := start(biditest.HandlerFunc(func(st *biditest.Stream) {
		if st.Accept() != nil {
			return
		}
		for {
			if _, err := st.RecvPart(); err != nil {
				return
			}
		}
	}))
	defer discard.Close()
	startHTTPTest := func(h http.HandlerFunc) *httptest.Server {
		s := httptest.NewUnstartedServer(h)
		s.EnableHTTP2 = true
		s.TLS = tlsConfig.Clone()
		s.Config.HTTP2 = &http.HTTP2Config{MaxConcurrentStreams: *fStreams, MaxReceiveBufferPerStream: *fRBuf}
		s.StartTLS()
		return s
	}
	event := startHTTPTest(echoserver.Event)
	defer event.Close()
	raw := startHTTPTest(echoserver.Raw)
	defer raw.Close()
	frame, err := echoserver.StartFrameEcho(tlsConfig)
	if err != nil {
		fatalf("%v", err)
	}
	defer frame.Close()

	if err := os.MkdirAll(*fDir, 0o755); err != nil {
		fatalf("%v", err)
	}
	write := func(name, content string) {
		if err := os.WriteFile(filepath.Join(*fDir, name), []byte(content), 0o644); err != nil {
			fatalf("%v", err)
		}
	}
	write("ca.pem", string(certPEM))
	write("echo.url", echo.URL)
	write("discard.url", discard.URL)
	write("event.url", event.URL)
	write("raw.url", raw.URL+"/echo")
	write("frame.url", frame.URL)
	fmt.Printf("bidiload mode=server pid=%d echo=%s discard=%s event=%s raw=%s/echo frame=%s cafile=%s streams=%d verify=%v\n",
		os.Getpid(), echo.URL, discard.URL, event.URL, raw.URL, frame.URL, filepath.Join(*fDir, "ca.pem"), *fStreams, *fVerify)

	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGINT, syscall.SIGTERM)
	eof := make(chan struct{})
	if *fStdin {
		go func() {
			io.Copy(io.Discard, os.Stdin)
			close(eof)
		}()
	}
	select {
	case <-sig:
	case <-eof:
	}
}

// newCert returns a self-signed certificate for the loopback addresses
// and its PEM encoding, for the client process to trust.
func newCert() (tls.Certificate, []byte) {
	cert, err := loopbackcert.New("bidiload")
	if err != nil {
		fatalf("%v", err)
	}
	return cert, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: cert.Certificate[0]})
}

// probe prints the SETTINGS the server at -url advertises.
func probe(res *result) {
	u, err := url.Parse(*fURL)
	if err != nil {
		fatalf("%v", err)
	}
	conn, err := tls.Dial("tcp", u.Host, &tls.Config{RootCAs: rootPool(), NextProtos: []string{"h2"}})
	if err != nil {
		fatalf("%v", err)
	}
	defer conn.Close()
	conn.SetDeadline(time.Now().Add(5 * time.Second))
	io.WriteString(conn, http2.ClientPreface)
	fr := http2.NewFramer(conn, conn)
	fr.WriteSettings()
	for {
		f, err := fr.ReadFrame()
		if err != nil {
			fatalf("%v", err)
		}
		if sf, ok := f.(*http2.SettingsFrame); ok && !sf.IsAck() {
			res.add("alpn", conn.ConnectionState().NegotiatedProtocol)
			sf.ForeachSetting(func(s http2.Setting) error {
				res.add(s.ID.String(), s.Val)
				return nil
			})
			return
		}
	}
}
