package main

import (
	"bufio"
	"context"
	"crypto/sha1"
	"crypto/tls"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"regexp"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sagemaker-bidi/sagemaker-bidi/bidi"
	"github.com/sagemaker-bidi/sagemaker-bidi/eventstream"
	"github.com/sagemaker-bidi/sagemaker-bidi/internal/wire"
)

// attacks runs the attacks of issue 22, each against a gateway of its
// own with the default caps (and short timeouts where the attack waits
// for one), and prints one line per attack: held=true when the gateway
// did what it should.
func attacks(extra []string) {
	container, stop := sampleContainer()
	defer stop()
	all := true
	for _, a := range []struct {
		name string
		run  func(container string, extra []string) (held bool, kv []any)
	}{
		{"slowloris", slowloris},
		{"idle-http2", idleHTTP2},
		{"descriptors", descriptors},
		{"large-events", largeEvents},
		{"quadratic-headers", quadraticHeaders},
		{"never-reading-client", neverReading},
		{"forbidden-close-codes", forbiddenCloseCodes},
	} {
		if *fOnly != "" && !slices.Contains(strings.Split(*fOnly, ","), a.name) {
			continue
		}
		start := time.Now()
		held, kv := a.run(container, extra)
		all = all && held
		line(append([]any{"attack", a.name, "held", held, "took", time.Since(start).Round(time.Millisecond)}, kv...)...)
	}
	line("attacks", "done", "all_held", all)
}

// slowloris: 500 connections each sending half a TLS record header. With
// -handshake-timeout 1s every one must be closed by the gateway within 10 s.
func slowloris(container string, extra []string) (bool, []any) {
	g := startGateway(container, nil, append([]string{"-handshake-timeout", "1s"}, extra...)...)
	defer g.stop()
	const n = 500
	closed := holdConns(g, n, func(c net.Conn) error {
		_, err := c.Write([]byte{0x16, 0x03, 0x01})
		return err
	})
	return closed == n, []any{"conns", n, "closed_by_gateway", closed}
}

// idleHTTP2: 500 TLS connections that send the HTTP/2 preface and never
// open a stream. With -idle-timeout 2s every one must be closed within
// 10 s.
func idleHTTP2(container string, extra []string) (bool, []any) {
	g := startGateway(container, nil, append([]string{"-idle-timeout", "2s"}, extra...)...)
	defer g.stop()
	const n = 500
	closed := holdConns(g, n, func(c net.Conn) error {
		tc := tls.Client(c, withServerName(g.tlsConfig()))
		if err := tc.Handshake(); err != nil {
			return err
		}
		_, err := tc.Write([]byte("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n\x00\x00\x00\x04\x00\x00\x00\x00\x00"))
		return err
	})
	return closed == n, []any{"conns", n, "closed_by_gateway", closed}
}

func withServerName(cfg *tls.Config) *tls.Config {
	cfg.ServerName = "127.0.0.1"
	return cfg
}

// holdConns opens n connections to g, runs hello on each, and returns how
// many the gateway closed within 10 s.
func holdConns(g *gateway, n int, hello func(net.Conn) error) int {
	addr := strings.TrimPrefix(strings.TrimPrefix(g.url, "https://"), "http://")
	var closed atomic.Int64
	var wg sync.WaitGroup
	deadline := time.Now().Add(10 * time.Second)
	for range n {
		wg.Go(func() {
			c, err := net.Dial("tcp", addr)
			if err != nil {
				return
			}
			defer c.Close()
			if hello(c) != nil {
				closed.Add(1) // closed before the hello was out
				return
			}
			c.SetReadDeadline(deadline)
			_, err = io.Copy(io.Discard, c)
			var ne net.Error
			if !errors.As(err, &ne) || !ne.Timeout() {
				closed.Add(1)
			}
		})
	}
	wg.Wait()
	return int(closed.Load())
}

// descriptors: the gateway runs under "ulimit -n 200"; 300 connections
// exhaust its descriptors, then close; a session must then work.
func descriptors(container string, extra []string) (bool, []any) {
	wrap := []string{"sh", "-c", `ulimit -n 200 && exec "$@"`, "sh"}
	g := startGateway(container, wrap, extra...)
	defer g.stop()
	addr := strings.TrimPrefix(g.url, "https://")
	var conns []net.Conn
	for range 300 {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			break
		}
		conns = append(conns, c)
	}
	_, exhausted := g.logs.wait(regexp.MustCompile(`too many open files`), 5*time.Second)
	for _, c := range conns {
		c.Close()
	}
	c := g.client(0)
	defer c.CloseIdleConnections()
	ctx, cancel := ctxFor(20 * time.Second)
	defer cancel()
	err := echoOnce(ctx, c, "after exhaustion")
	return exhausted && err == nil, []any{"conns", len(conns), "exhausted", exhausted, "session_after", errText(err)}
}

// echoOnce opens a session, sends text and checks the echo.
func echoOnce(ctx context.Context, c *bidi.Client, text string) error {
	sess, err := c.Open(ctx, &bidi.OpenInput{EndpointName: "e"})
	if err != nil {
		return err
	}
	defer sess.Close()
	if err := sess.Send(ctx, bidi.Text(text)); err != nil {
		return err
	}
	m, err := sess.Recv(ctx)
	if err == nil && string(m.Data) != text {
		err = fmt.Errorf("echo %q", m.Data)
	}
	return err
}

// largeEvents: -attack streams each announcing a -attack-size event; every
// one must be refused, and the gateway's RSS stay under 64 MiB.
func largeEvents(container string, extra []string) (bool, []any) {
	g := startGateway(container, nil, extra...)
	defer g.stop()
	ctx, cancel := ctxFor(10 * time.Second)
	defer cancel()
	hc := rawClient(g)
	var rejected atomic.Int64
	var wg sync.WaitGroup
	for range *fAttack {
		wg.Go(func() {
			if largeEvent(ctx, g, hc, *fAttackSize) {
				rejected.Add(1)
			}
		})
	}
	wg.Wait()
	_, peak := g.rss()
	n := rejected.Load()
	return n == int64(*fAttack) && peak < 64<<20, []any{"streams", *fAttack, "rejected", n, "rss_peak", mib(peak)}
}

// quadraticHeaders: a request with 12,000 unsigned x-amz-* headers and
// 30,000 names in SignedHeaders, reached with the access key id only.
// The 403 must have a body under 1 KiB and cost at most twice (plus
// 20 ms) what the same headers cost with a short SignedHeaders: moving
// and parsing the headers, not checking them.
func quadraticHeaders(container string, extra []string) (bool, []any) {
	g := startGateway(container, nil, extra...)
	defer g.stop()
	hc := rawClient(g)
	defer hc.CloseIdleConnections()
	names := make([]string, 0, 30001)
	for i := range 30000 {
		names = append(names, fmt.Sprintf("a%05d", i))
	}
	names = append(names, "host")
	send := func(signed []string) (int, int, time.Duration, error) {
		now := time.Now().UTC()
		req, _ := http.NewRequest(http.MethodPost, g.url+"/endpoints/e/invocations-bidirectional-stream", http.NoBody)
		req.Header.Set("Content-Type", "application/vnd.amazon.eventstream")
		req.Header.Set("X-Amz-Content-Sha256", "STREAMING-AWS4-HMAC-SHA256-EVENTS")
		req.Header.Set("X-Amz-Date", now.Format("20060102T150405Z"))
		req.Header.Set("Authorization", fmt.Sprintf("AWS4-HMAC-SHA256 Credential=%s/%s/%s/sagemaker/aws4_request, SignedHeaders=%s, Signature=%s",
			accessKey, now.Format("20060102"), region, strings.Join(signed, ";"), strings.Repeat("0", 64)))
		for i := range 12000 {
			req.Header.Set(fmt.Sprintf("X-Amz-H%05d", i), "v")
		}
		start := time.Now()
		resp, err := hc.Do(req)
		if err != nil {
			return 0, 0, 0, err
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		return resp.StatusCode, len(body), time.Since(start), nil
	}
	// The first request pays for the connection: warm up.
	send([]string{"host"})
	_, _, base, err := send([]string{"host"})
	if err != nil {
		return false, []any{"err", errText(err)}
	}
	status, n, took, err := send(names)
	if err != nil {
		return false, []any{"err", errText(err)}
	}
	return status == http.StatusForbidden && n < 1024 && took <= 2*base+20*time.Millisecond,
		[]any{"status", status, "body_bytes", n, "response_time", took, "short_signed_headers_time", base}
}

// neverReading: with -max-stream-age 2s, a client sends 1 MiB to echo and
// never reads its response; the gateway must end the session at the cap
// all the same (its log says so within 10 s).
func neverReading(container string, extra []string) (bool, []any) {
	g := startGateway(container, nil, append([]string{"-max-stream-age", "2s"}, extra...)...)
	defer g.stop()
	hc := rawClient(g) // a 64 KiB stream window, never read
	defer hc.CloseIdleConnections()
	ctx, cancel := ctxFor(15 * time.Second)
	defer cancel()
	pr, pw := io.Pipe()
	req := signedRequest(ctx, g, "e", pr)
	seed, err := eventstream.SeedFromAuthorization(req.Header.Get("Authorization"))
	if err != nil {
		fatalf("%v", err)
	}
	go func() {
		if resp, err := hc.Do(req); err == nil {
			<-ctx.Done() // never read the body
			resp.Body.Close()
		}
	}()
	signer := eventstream.NewSigner(credsOf(), region, "sagemaker", seed)
	part := wire.Part{Bytes: make([]byte, 64<<10), DataType: wire.DataTypeBinary, CompletionState: wire.CompletionComplete}
	var buf []byte
	start := time.Now()
	go func() {
		for range 16 { // 1 MiB
			buf, _ = signer.AppendMessage(buf[:0], &eventstream.Message{Headers: wire.AppendPartHeaders(nil, &part), Payload: part.Bytes})
			if _, err := pw.Write(buf); err != nil {
				return
			}
		}
	}()
	_, ended := g.logs.wait(regexp.MustCompile(`msg="session end.*connection cap`), 10*time.Second)
	pw.CloseWithError(context.Canceled)
	return ended, []any{"ended_at_cap", ended, "after", time.Since(start).Round(time.Millisecond)}
}

// forbiddenCloseCodes: a container that closes with 1006, 1015, 5000 and
// a non-UTF-8 reason; each client must get a ModelStreamError 1002 (a
// protocol error, not a dropped connection), and the container a close
// frame with 1002, never its own code echoed.
func forbiddenCloseCodes(_ string, extra []string) (bool, []any) {
	payloads := [][]byte{{0x03, 0xee}, {0x03, 0xf7}, {0x13, 0x88}, {0x03, 0xe8, 0xc3, 0x28}}
	held := true
	var got []string
	for _, p := range payloads {
		rc := newRawContainer(p)
		g := startGateway(rc.url, nil, extra...)
		c := g.client(0)
		ctx, cancel := ctxFor(10 * time.Second)
		sess, err := c.Open(ctx, &bidi.OpenInput{EndpointName: "e"})
		code := ""
		if err == nil {
			_, err = sess.Recv(ctx)
			var mse *bidi.ModelStreamError
			if errors.As(err, &mse) {
				code = mse.ErrorCode_
			}
			sess.Close()
		}
		answer := <-rc.answer
		got = append(got, fmt.Sprintf("%x:client=%s,container=%d", p, code, answer))
		held = held && code == "1002" && answer == 1002
		cancel()
		c.CloseIdleConnections()
		g.stop()
		rc.ln.Close()
	}
	return held, []any{"cases", strings.Join(got, ";")}
}

// rawContainer answers GET /ping with 200 and each WebSocket upgrade with
// a close frame holding payload, and reports the close code it gets back
// (0 when none).
type rawContainer struct {
	url    string
	ln     net.Listener
	answer chan int
}

func newRawContainer(payload []byte) *rawContainer {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		fatalf("%v", err)
	}
	rc := &rawContainer{url: "ws://" + ln.Addr().String(), ln: ln, answer: make(chan int, 16)}
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go rc.serve(c, payload)
		}
	}()
	return rc
}

func (rc *rawContainer) serve(c net.Conn, payload []byte) {
	defer c.Close()
	c.SetDeadline(time.Now().Add(10 * time.Second))
	br := bufio.NewReader(c)
	req, err := http.ReadRequest(br)
	if err != nil {
		return
	}
	if req.URL.Path == "/ping" {
		io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")
		return
	}
	h := sha1.Sum([]byte(req.Header.Get("Sec-WebSocket-Key") + "258EAFA5-E914-47DA-95CA-C5AB0DC85B11"))
	fmt.Fprintf(c, "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Accept: %s\r\n\r\n",
		base64.StdEncoding.EncodeToString(h[:]))
	c.Write(append([]byte{0x88, byte(len(payload))}, payload...))
	// The gateway's answer: a masked close frame.
	var hdr [6]byte
	if _, err := io.ReadFull(br, hdr[:]); err != nil || hdr[0]&0x0f != 0x8 {
		rc.answer <- 0
		return
	}
	n := int(hdr[1] & 0x7f)
	body := make([]byte, n)
	if _, err := io.ReadFull(br, body); err != nil || n < 2 {
		rc.answer <- 0
		return
	}
	for i := range body {
		body[i] ^= hdr[2+i%4]
	}
	rc.answer <- int(binary.BigEndian.Uint16(body))
}

func errText(err error) string {
	if err == nil {
		return "ok"
	}
	return fmt.Sprintf("%q", err.Error())
}
