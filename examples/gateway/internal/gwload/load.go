package main

import (
	"context"
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"io"
	"net/http"
	"os"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"

	"github.com/sagemaker-bidi/sagemaker-bidi/bidi"
)

// load runs the measured phases: unloaded, -sessions concurrent echo
// sessions, then, on a fresh gateway, -attack streams each announcing a
// -attack-size event and sending all of it but the last bytes.
func load(extra []string) {
	container, stopContainer := sampleContainer()
	defer stopContainer()
	g := startGateway(container, nil, extra...)
	c := g.client(0)

	base := probe(c, *fPhase)
	cur, peak := g.rss()
	line("phase", "unloaded", "probes", *fProbes, "round_trips", len(base), "p50", pct(base, 50), "p99", pct(base, 99), "rss", mib(cur), "rss_peak", mib(peak))

	// Many sessions, each sending 256 bytes a second and reading the echo.
	ctx, cancel := context.WithCancel(context.Background())
	opened, failed := openEchoSessions(ctx, c, *fSessions)
	rssMax := sampleRSS(g, ctx)
	loaded := probe(c, *fPhase)
	cancel()
	_, peak = g.rss()
	line("phase", "sessions", "sessions", opened.Load(), "open_failed", failed.Load(), "round_trips", len(loaded),
		"p50", pct(loaded, 50), "p99", pct(loaded, 99), "p99_ratio", ratio(pct(loaded, 99), pct(base, 99)),
		"rss_max", mib(rssMax()), "rss_peak", mib(peak))
	c.CloseIdleConnections()
	g.stop()

	// A fresh gateway: streams that each announce a large event and send
	// all but its end.
	g = startGateway(container, nil, extra...)
	defer g.stop()
	c = g.client(0)
	defer c.CloseIdleConnections()
	idle, _ := g.rss()
	ctx, cancel = context.WithCancel(context.Background())
	var rejected atomic.Int64
	var wg sync.WaitGroup
	hc := rawClient(g)
	for range *fAttack {
		wg.Go(func() {
			if largeEvent(ctx, g, hc, *fAttackSize) {
				rejected.Add(1)
			}
		})
	}
	rssMax = sampleRSS(g, ctx)
	attacked := probe(c, *fPhase)
	cur, _ = g.rss()
	cancel()
	wg.Wait()
	_, peak = g.rss()
	line("phase", "large-events", "streams", *fAttack, "announced", mib(int64(*fAttackSize)), "rejected", rejected.Load(),
		"round_trips", len(attacked), "p50", pct(attacked, 50), "p99", pct(attacked, 99), "p99_ratio", ratio(pct(attacked, 99), pct(base, 99)),
		"rss_before", mib(idle), "rss_end", mib(cur), "rss_max", mib(rssMax()), "rss_peak", mib(peak))
}

// probe runs -probes sessions for d, each timing the round trip of a
// 256-byte message every 10 ms, and returns the round-trip times.
func probe(c *bidi.Client, d time.Duration) []time.Duration {
	var mu sync.Mutex
	var all []time.Duration
	var wg sync.WaitGroup
	ctx, cancel := ctxFor(d + 30*time.Second)
	defer cancel()
	end := time.Now().Add(d)
	msg := bidi.Binary(make([]byte, 256))
	for range *fProbes {
		wg.Go(func() {
			sess, err := c.Open(ctx, &bidi.OpenInput{EndpointName: "probe"})
			if err != nil {
				return
			}
			defer sess.Close()
			var mine []time.Duration
			tick := time.NewTicker(10 * time.Millisecond) // paced: latency, not throughput
			defer tick.Stop()
			for time.Now().Before(end) {
				<-tick.C
				t0 := time.Now()
				if sess.Send(ctx, msg) != nil {
					break
				}
				if _, err := sess.Recv(ctx); err != nil {
					break
				}
				mine = append(mine, time.Since(t0))
			}
			mu.Lock()
			all = append(all, mine...)
			mu.Unlock()
		})
	}
	wg.Wait()
	return all
}

// openEchoSessions opens n sessions (50 at a time) that each send 256
// bytes a second and read the echo until ctx ends, and returns once all
// are open (or failed).
func openEchoSessions(ctx context.Context, c *bidi.Client, n int) (opened, failed *atomic.Int64) {
	opened, failed = new(atomic.Int64), new(atomic.Int64)
	sem := make(chan struct{}, 50)
	var ready sync.WaitGroup
	for i := range n {
		ready.Add(1)
		sem <- struct{}{}
		go func() {
			sess, err := c.Open(ctx, &bidi.OpenInput{EndpointName: "load"})
			if err == nil {
				err = sess.Send(ctx, bidi.Binary(make([]byte, 256)))
			}
			if err == nil {
				_, err = sess.Recv(ctx)
			}
			<-sem
			if err != nil {
				if failed.Add(1) == 1 {
					fmt.Fprintf(os.Stderr, "gwload: opening a load session: %v\n", err)
				}
				ready.Done()
				return
			}
			opened.Add(1)
			ready.Done()
			defer sess.Close()
			// Spread the sends evenly over the second.
			select {
			case <-ctx.Done():
				return
			case <-time.After(time.Duration(i%1000) * time.Second / 1000):
			}
			t := time.NewTicker(time.Second)
			defer t.Stop()
			for {
				select {
				case <-ctx.Done():
					return
				case <-t.C:
				}
				if sess.Send(ctx, bidi.Binary(make([]byte, 256))) != nil {
					return
				}
				if _, err := sess.Recv(ctx); err != nil {
					return
				}
			}
		}()
	}
	ready.Wait()
	return opened, failed
}

// sampleRSS samples the gateway's RSS every 50 ms until ctx ends; the
// returned function gives the largest sample.
func sampleRSS(g *gateway, ctx context.Context) func() int64 {
	var max atomic.Int64
	go func() {
		t := time.NewTicker(50 * time.Millisecond)
		defer t.Stop()
		for {
			if cur, _ := g.rss(); cur > max.Load() {
				max.Store(cur)
			}
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
		}
	}()
	return max.Load
}

// rawClient is an HTTP/2 client trusting the gateway, for hand-made
// requests.
func rawClient(g *gateway) *http.Client {
	tr := &http.Transport{TLSClientConfig: g.tlsConfig(), Protocols: new(http.Protocols), ForceAttemptHTTP2: true}
	tr.Protocols.SetHTTP2(true)
	tr.HTTP2 = &http.HTTP2Config{MaxReceiveBufferPerStream: 64 << 10}
	return &http.Client{Transport: tr}
}

// signedRequest returns a signed request for a stream to endpoint name,
// with body as its body.
func signedRequest(ctx context.Context, g *gateway, name string, body io.Reader) *http.Request {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, g.url+"/endpoints/"+name+"/invocations-bidirectional-stream", body)
	if err != nil {
		fatalf("%v", err)
	}
	req.Header.Set("Content-Type", "application/vnd.amazon.eventstream")
	req.Header.Set("X-Amz-Content-Sha256", "STREAMING-AWS4-HMAC-SHA256-EVENTS")
	if err := v4.NewSigner().SignHTTP(ctx, credsOf(), req, "STREAMING-AWS4-HMAC-SHA256-EVENTS", "sagemaker", region, time.Now()); err != nil {
		fatalf("%v", err)
	}
	return req
}

// largeEvent opens a stream whose body announces an event of size bytes
// and sends all of it but the last byte, then holds it until ctx ends. It
// reports whether the gateway refused the event before that (the stream
// failed while the event was being sent).
func largeEvent(ctx context.Context, g *gateway, hc *http.Client, size int) (rejected bool) {
	pr, pw := io.Pipe()
	req := signedRequest(ctx, g, "attack", pr)
	respc := make(chan *http.Response, 1)
	go func() {
		resp, err := hc.Do(req)
		if err != nil {
			pr.CloseWithError(err)
			respc <- nil
			return
		}
		respc <- resp
		io.Copy(io.Discard, resp.Body) // the violation, then the reset
		resp.Body.Close()
		pw.CloseWithError(io.ErrUnexpectedEOF)
	}()
	var prelude [12]byte
	binary.BigEndian.PutUint32(prelude[0:], uint32(size))
	binary.BigEndian.PutUint32(prelude[8:], crc32.ChecksumIEEE(prelude[:8]))
	chunk := make([]byte, 64<<10)
	sent := 0
	_, err := pw.Write(prelude[:])
	for err == nil && sent < size-13 {
		n := min(len(chunk), size-13-sent)
		_, err = pw.Write(chunk[:n])
		sent += n
	}
	rejected = err != nil && ctx.Err() == nil
	if err == nil {
		<-ctx.Done()
	}
	pw.CloseWithError(context.Canceled)
	if resp := <-respc; resp != nil {
		resp.Body.Close()
	}
	return rejected
}

// pct returns the p-th percentile of ds.
func pct(ds []time.Duration, p int) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[min(len(s)-1, len(s)*p/100)]
}

func ratio(a, b time.Duration) float64 {
	if b == 0 {
		return 0
	}
	return float64(a) / float64(b)
}

func credsOf() aws.Credentials {
	return aws.Credentials{AccessKeyID: accessKey, SecretAccessKey: secretKey}
}
