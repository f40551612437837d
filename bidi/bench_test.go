package bidi_test

// Benchmarks of a session against the floor of the transport: the same
// bytes echoed by a plain HTTP/2 handler, without event framing, signing
// or padding (impl=raw). The servers run in a child process (this test
// binary, started with BIDI_BENCH_SERVER=1), so that the allocations
// reported per message are the client's alone; they share the machine's
// CPUs with the client. Everything is loopback TLS HTTP/2.
//
// impl=ours talks to a minimal event-stream echo that, like the raw echo,
// writes back everything it has read in one write: it unwraps each signed
// envelope and returns the inner PayloadPart as is, without checking
// signatures (the tests do that against biditest). impl=ours-biditest
// talks to biditest.Echo, which verifies every signature and writes each
// part separately, as a reference for the cost of the test server.
//
//	go test -run '^$' -bench 'Stream|PingPong|Open' -benchmem -count 5 ./bidi/

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"runtime/pprof"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/smithy-go/metrics"
	"github.com/aws/smithy-go/tracing"

	"github.com/sagemaker-bidi/sagemaker-bidi/bidi"
	"github.com/sagemaker-bidi/sagemaker-bidi/bidi/biditest"
	"github.com/sagemaker-bidi/sagemaker-bidi/internal/echoserver"
	"github.com/sagemaker-bidi/sagemaker-bidi/internal/testexit"
)

const benchServerEnv = "BIDI_BENCH_SERVER"

func TestMain(m *testing.M) {
	if os.Getenv(benchServerEnv) != "" {
		serveBenchmarks()
		return
	}
	// Once the tests pass, a -race binary exits without the race
	// detector's idle second (see package testexit).
	testexit.Exit(m.Run())
}

// benchServerInfo is what the child process prints on its first line.
type benchServerInfo struct {
	Bidi, Raw, Event             string // URLs
	BidiCert, RawCert, EventCert []byte // DER
}

// serveBenchmarks runs the benchmark servers until standard input closes.
func serveBenchmarks() {
	// BIDI_BENCH_SERVER_PROFILE names a file for the server process's CPU
	// profile, to see the servers' share of a benchmark.
	if f := os.Getenv("BIDI_BENCH_SERVER_PROFILE"); f != "" {
		out, _ := os.Create(f)
		pprof.StartCPUProfile(out)
		defer pprof.StopCPUProfile()
	}
	srv := biditest.NewUnstartedServer(biditest.Echo())
	srv.MaxRecorded = -1
	srv.Start()
	defer srv.Close()

	raw := httptest.NewUnstartedServer(http.HandlerFunc(echoserver.Raw))
	raw.EnableHTTP2 = true
	raw.StartTLS()
	defer raw.Close()

	ev := httptest.NewUnstartedServer(http.HandlerFunc(echoserver.Event))
	ev.EnableHTTP2 = true
	ev.StartTLS()
	defer ev.Close()

	info := benchServerInfo{Bidi: srv.URL, Raw: raw.URL, Event: ev.URL, BidiCert: srv.Certificate().Raw, RawCert: raw.Certificate().Raw, EventCert: ev.Certificate().Raw}
	b, _ := json.Marshal(info)
	fmt.Println(string(b))
	io.Copy(io.Discard, os.Stdin)
}

var (
	benchOnce    sync.Once
	benchInfo    benchServerInfo
	benchInfoErr error
	benchBidi    *bidi.Client // against biditest.Echo
	benchEvent   *bidi.Client // against echoserver.Event
	// benchObserved is benchEvent with no-op tracer and meter providers:
	// the cost of the instrumentation itself.
	benchObserved *bidi.Client
	benchRaw      *http.Client
	benchStdin    io.WriteCloser // kept open: the server process exits when it closes
)

// benchClients starts the server process once and returns bidi clients
// for the minimal event echo and for biditest.Echo, on the SDK's own
// HTTP/2 engine, and a raw HTTP/2 client (net/http, trustingClient) for
// the floor.
func benchClients(b *testing.B) (event, biditestEcho *bidi.Client, raw *http.Client, info benchServerInfo) {
	b.Helper()
	benchOnce.Do(func() {
		cmd := exec.Command(os.Args[0], "-test.run=^$")
		cmd.Env = append(os.Environ(), benchServerEnv+"=1")
		cmd.Stderr = os.Stderr
		stdin, err := cmd.StdinPipe()
		if err != nil {
			benchInfoErr = err
			return
		}
		stdout, err := cmd.StdoutPipe()
		if err != nil {
			benchInfoErr = err
			return
		}
		if err := cmd.Start(); err != nil {
			benchInfoErr = err
			return
		}
		benchStdin = stdin
		line, err := bufio.NewReader(stdout).ReadBytes('\n')
		if err != nil {
			benchInfoErr = fmt.Errorf("benchmark server: %w", err)
			return
		}
		if err := json.Unmarshal(line, &benchInfo); err != nil {
			benchInfoErr = err
			return
		}
		benchBidi = bidi.NewFromConfig(aws.Config{}, func(o *bidi.Options) {
			o.Region = serverRegion
			o.Credentials = aws.NewCredentialsCache(staticCreds{})
			o.BaseEndpoint = aws.String(benchInfo.Bidi)
			o.TLSConfig = trustingTLS(benchInfo.BidiCert)
		})
		benchEvent = bidi.NewFromConfig(aws.Config{}, func(o *bidi.Options) {
			o.Region = serverRegion
			o.Credentials = aws.NewCredentialsCache(staticCreds{})
			o.BaseEndpoint = aws.String(benchInfo.Event)
			o.TLSConfig = trustingTLS(benchInfo.EventCert)
		})
		benchObserved = bidi.NewFromConfig(aws.Config{}, func(o *bidi.Options) {
			o.Region = serverRegion
			o.Credentials = aws.NewCredentialsCache(staticCreds{})
			o.BaseEndpoint = aws.String(benchInfo.Event)
			o.TLSConfig = trustingTLS(benchInfo.EventCert)
			o.TracerProvider = tracing.NopTracerProvider{}
			o.MeterProvider = metrics.NopMeterProvider{}
		})
		benchRaw = trustingClient(benchInfo.RawCert)
	})
	if benchInfoErr != nil {
		b.Fatal(benchInfoErr)
	}
	return benchEvent, benchBidi, benchRaw, benchInfo
}

type staticCreds struct{}

func (staticCreds) Retrieve(context.Context) (aws.Credentials, error) {
	return aws.Credentials{AccessKeyID: serverCredentials.AccessKeyID, SecretAccessKey: serverCredentials.SecretAccessKey, Source: "bench"}, nil
}

// trustingClient returns the raw floor's client: net/http speaking only
// HTTP/2, trusting the certificate der, with net/http's HTTP/2 defaults
// (the client bidi.NewHTTPClient built before it was removed).
func trustingClient(der []byte) *http.Client {
	var protocols http.Protocols
	protocols.SetHTTP2(true)
	return &http.Client{Transport: &http.Transport{
		TLSClientConfig:   trustingTLS(der),
		ForceAttemptHTTP2: true,
		Protocols:         &protocols,
		MaxIdleConns:      100,
		IdleConnTimeout:   90 * time.Second,
	}}
}

func trustingTLS(der []byte) *tls.Config {
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		panic(err)
	}
	pool := x509.NewCertPool()
	pool.AddCert(cert)
	return &tls.Config{RootCAs: pool}
}

// rawStream is one long-lived POST to the raw echo handler.
type rawStream struct {
	pw   *io.PipeWriter
	body io.ReadCloser
}

func openRaw(b *testing.B, c *http.Client, url string) *rawStream {
	b.Helper()
	pr, pw := io.Pipe()
	req, _ := http.NewRequest("POST", url+"/echo", pr)
	respc := make(chan *http.Response, 1)
	errc := make(chan error, 1)
	go func() {
		resp, err := c.Do(req)
		if err != nil {
			errc <- err
			return
		}
		respc <- resp
	}()
	select {
	case resp := <-respc:
		return &rawStream{pw: pw, body: resp.Body}
	case err := <-errc:
		b.Fatal(err)
	case <-time.After(10 * time.Second):
		b.Fatal("raw stream did not open")
	}
	return nil
}

func (r *rawStream) close() {
	r.pw.Close()
	io.Copy(io.Discard, r.body)
	r.body.Close()
}

var benchSizes = []int{256, 16384}

// BenchmarkStream streams messages both ways over one long-lived stream:
// a goroutine sends b.N messages while the benchmark goroutine receives
// the echoes. msgs/s counts round-tripped messages; MB/s is payload per
// direction.
func BenchmarkStream(b *testing.B) {
	for _, impl := range []string{"ours", "ours-observed", "raw", "ours-biditest"} {
		for _, size := range benchSizes {
			b.Run(fmt.Sprintf("impl=%s/size=%d", impl, size), func(b *testing.B) {
				ev, bt, rc, info := benchClients(b)
				msg := bytes.Repeat([]byte("m"), size)
				b.SetBytes(int64(size))
				b.ReportAllocs()
				switch impl {
				case "ours":
					streamOurs(b, ev, msg)
				case "ours-observed":
					streamOurs(b, benchObserved, msg)
				case "ours-biditest":
					streamOurs(b, bt, msg)
				default:
					streamRaw(b, rc, info.Raw, msg)
				}
				b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "msgs/s")
			})
		}
	}
}

func streamOurs(b *testing.B, c *bidi.Client, msg []byte) {
	ctx := context.Background()
	sess, err := c.Open(ctx, &bidi.OpenInput{EndpointName: "bench"})
	if err != nil {
		b.Fatal(err)
	}
	defer sess.Close()
	warmOurs(b, sess, msg)
	b.ResetTimer()
	errc := make(chan error, 1)
	go func() {
		m := bidi.Binary(msg)
		for range b.N {
			if err := sess.Send(ctx, m); err != nil {
				errc <- err
				return
			}
		}
		errc <- nil
	}()
	for i := range b.N {
		m, err := sess.Recv(ctx)
		if err != nil || len(m.Data) != len(msg) {
			b.Fatalf("Recv %d: %d bytes, %v", i, len(m.Data), err)
		}
	}
	if err := <-errc; err != nil {
		b.Fatal(err)
	}
	b.StopTimer()
}

func warmOurs(b *testing.B, sess *bidi.Session, msg []byte) {
	ctx := context.Background()
	for range 10 {
		if err := sess.Send(ctx, bidi.Binary(msg)); err != nil {
			b.Fatal(err)
		}
		if _, err := sess.Recv(ctx); err != nil {
			b.Fatal(err)
		}
	}
}

func streamRaw(b *testing.B, c *http.Client, url string, msg []byte) {
	rs := openRaw(b, c, url)
	defer rs.close()
	buf := make([]byte, len(msg))
	for range 10 {
		rs.pw.Write(msg)
		io.ReadFull(rs.body, buf)
	}
	b.ResetTimer()
	errc := make(chan error, 1)
	go func() {
		for range b.N {
			if _, err := rs.pw.Write(msg); err != nil {
				errc <- err
				return
			}
		}
		errc <- nil
	}()
	for i := range b.N {
		if _, err := io.ReadFull(rs.body, buf); err != nil {
			b.Fatalf("read %d: %v", i, err)
		}
	}
	if err := <-errc; err != nil {
		b.Fatal(err)
	}
	b.StopTimer()
}

// measureLatency calls once warmup times, then b.N times under the timer,
// and reports allocations and the 50th and 99th percentiles of the
// durations once returns.
func measureLatency(b *testing.B, warmup int, once func() time.Duration) {
	for range warmup {
		once()
	}
	lat := make([]time.Duration, b.N)
	b.ReportAllocs()
	b.ResetTimer()
	for i := range b.N {
		lat[i] = once()
	}
	b.StopTimer()
	reportLatency(b, lat)
}

// reportLatency reports the 50th and 99th percentiles of lat in µs.
func reportLatency(b *testing.B, lat []time.Duration) {
	if len(lat) == 0 {
		return
	}
	slices.Sort(lat)
	p := func(q float64) float64 {
		return float64(lat[min(len(lat)-1, int(q*float64(len(lat))))].Nanoseconds()) / 1e3
	}
	b.ReportMetric(p(0.50), "p50-µs")
	b.ReportMetric(p(0.99), "p99-µs")
}

// BenchmarkPingPong sends a 256-byte message and waits for its echo before
// sending the next, over one long-lived stream.
func BenchmarkPingPong(b *testing.B) {
	const size = 256
	msg := bytes.Repeat([]byte("p"), size)
	b.Run("impl=ours", func(b *testing.B) {
		c, _, _, _ := benchClients(b)
		ctx := context.Background()
		sess, err := c.Open(ctx, &bidi.OpenInput{EndpointName: "bench"})
		if err != nil {
			b.Fatal(err)
		}
		defer sess.Close()
		warmOurs(b, sess, msg)
		b.SetBytes(size)
		measureLatency(b, 0, func() time.Duration {
			t0 := time.Now()
			if err := sess.Send(ctx, bidi.Binary(msg)); err != nil {
				b.Fatal(err)
			}
			if _, err := sess.Recv(ctx); err != nil {
				b.Fatal(err)
			}
			return time.Since(t0)
		})
	})
	b.Run("impl=raw", func(b *testing.B) {
		_, _, rc, info := benchClients(b)
		rs := openRaw(b, rc, info.Raw)
		defer rs.close()
		buf := make([]byte, size)
		b.SetBytes(size)
		measureLatency(b, 10, func() time.Duration {
			t0 := time.Now()
			if _, err := rs.pw.Write(msg); err != nil {
				b.Fatal(err)
			}
			if _, err := io.ReadFull(rs.body, buf); err != nil {
				b.Fatal(err)
			}
			return time.Since(t0)
		})
	})
}

// BenchmarkOpen measures, on a warm connection, the time from Open to the
// first reply of a 256-byte message (ours: Open, Send, Recv; the session
// is then closed outside the measured latency), against one plain HTTP/2
// request round trip carrying the same bytes (raw).
func BenchmarkOpen(b *testing.B) {
	const size = 256
	msg := bytes.Repeat([]byte("o"), size)
	b.Run("impl=ours", func(b *testing.B) {
		c, _, _, _ := benchClients(b)
		ctx := context.Background()
		openOnce := func() time.Duration {
			t0 := time.Now()
			sess, err := c.Open(ctx, &bidi.OpenInput{EndpointName: "bench"})
			if err != nil {
				b.Fatal(err)
			}
			if err := sess.Send(ctx, bidi.Binary(msg)); err != nil {
				b.Fatal(err)
			}
			if _, err := sess.Recv(ctx); err != nil {
				b.Fatal(err)
			}
			d := time.Since(t0)
			sess.Close()
			return d
		}
		measureLatency(b, 10, openOnce)
	})
	b.Run("impl=raw", func(b *testing.B) {
		_, _, rc, info := benchClients(b)
		buf := make([]byte, size)
		once := func() time.Duration {
			t0 := time.Now()
			resp, err := rc.Post(info.Raw+"/echo", "application/octet-stream", bytes.NewReader(msg))
			if err != nil {
				b.Fatal(err)
			}
			if _, err := io.ReadFull(resp.Body, buf); err != nil {
				b.Fatal(err)
			}
			d := time.Since(t0)
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			return d
		}
		measureLatency(b, 10, once)
	})
}
