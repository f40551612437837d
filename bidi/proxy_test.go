package bidi_test

import (
	"bufio"
	"context"
	"io"
	"net"
	"net/http"
	"net/url"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"

	"github.com/sagemaker-bidi/sagemaker-bidi/bidi"
	"github.com/sagemaker-bidi/sagemaker-bidi/bidi/biditest"
)

// connectProxy is an HTTP CONNECT proxy on loopback that counts the
// tunnels it opened and the targets asked for.
type connectProxy struct {
	ln      net.Listener
	tunnels atomic.Int32
	mu      sync.Mutex
	targets []string
	wg      sync.WaitGroup
}

func newConnectProxy(t *testing.T) *connectProxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &connectProxy{ln: ln}
	p.wg.Add(1)
	go p.serve()
	t.Cleanup(func() { ln.Close(); p.wg.Wait() })
	return p
}

func (p *connectProxy) URL() *url.URL { return &url.URL{Scheme: "http", Host: p.ln.Addr().String()} }

func (p *connectProxy) serve() {
	defer p.wg.Done()
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		p.wg.Add(1)
		go func() {
			defer p.wg.Done()
			defer c.Close()
			br := bufio.NewReader(c)
			req, err := http.ReadRequest(br)
			if err != nil || req.Method != http.MethodConnect {
				io.WriteString(c, "HTTP/1.1 405 Method Not Allowed\r\n\r\n")
				return
			}
			p.mu.Lock()
			p.targets = append(p.targets, req.Host)
			p.mu.Unlock()
			up, err := net.Dial("tcp", req.Host)
			if err != nil {
				io.WriteString(c, "HTTP/1.1 502 Bad Gateway\r\n\r\n")
				return
			}
			defer up.Close()
			p.tunnels.Add(1)
			io.WriteString(c, "HTTP/1.1 200 Connection Established\r\n\r\n")
			done := make(chan struct{}, 2)
			go func() { io.Copy(up, br); up.(*net.TCPConn).CloseWrite(); done <- struct{}{} }()
			go func() { io.Copy(c, up); done <- struct{}{} }()
			<-done
			<-done
		}()
	}
}

// TestHTTPSProxy: the engine reaches an https endpoint through an HTTP
// CONNECT proxy (Options.Proxy, as ProxyFromEnvironment would give from
// HTTPS_PROXY), TLS and SigV4 end to end through the tunnel.
func TestHTTPSProxy(t *testing.T) {
	srv := newServer(t, biditest.Echo())
	proxy := newConnectProxy(t)
	c := srv.Client(func(o *bidi.Options) { o.Proxy = http.ProxyURL(proxy.URL()) })
	ctx := testCtx(t)
	sess := open(t, c, ctx)
	roundTrip(t, sess, "through the proxy")
	sess.CloseSend()
	drainEOF(t, sess)
	c.CloseIdleConnections() // ends the tunnel before the proxy's cleanup waits for it
	if n := proxy.tunnels.Load(); n != 1 {
		t.Fatalf("%d tunnels, want 1", n)
	}
	proxy.mu.Lock()
	defer proxy.mu.Unlock()
	if want := srv.Listener.Addr().String(); len(proxy.targets) != 1 || proxy.targets[0] != want {
		t.Fatalf("CONNECT targets %v, want [%s]", proxy.targets, want)
	}
}

// TestIPv6Endpoint: an endpoint on an IPv6 address ([::1]) works, as for
// dual-stack endpoints.
func TestIPv6Endpoint(t *testing.T) {
	ln, err := net.Listen("tcp6", "[::1]:0")
	if err != nil {
		t.Fatalf("this host has no IPv6 loopback: %v", err)
	}
	srv := biditest.NewUnstartedServer(biditest.Echo())
	srv.Listener = ln
	srv.Start()
	defer srv.Close()
	c := srv.Client(func(o *bidi.Options) { o.BaseEndpoint = aws.String("https://" + ln.Addr().String()) })
	ctx, cancel := context.WithCancel(testCtx(t))
	defer cancel()
	sess := open(t, c, ctx)
	roundTrip(t, sess, "over IPv6")
}
