package main

import (
	"context"
	"crypto/tls"
	"errors"
	"io"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sagemaker-bidi/sagemaker-bidi/bidi"
)

// small streams -size (256 B) messages both ways on -sessions sessions
// spread over -clients clients (each its own connection): every session
// has a goroutine that sends up to -n messages (for at most -duration)
// then CloseSend, and one that receives the echoes until the end of the
// stream. engine=raw is the floor: the same bytes through net/http
// (rawHTTPClient, an io.Pipe body) to a plain HTTP/2 echo, as
// BenchmarkStream impl=raw does; ours talks to the minimal event-stream
// echo (impl=ours there).
func small(res *result) {
	size := *fSize
	if size == 0 {
		size = 256
	}
	K, C := *fSessions, max(1, *fClients)
	msg := make([]byte, size)
	for i := range msg {
		msg[i] = 'm'
	}
	ctx := context.Background()
	type stream struct {
		send  func() error
		close func() error
		recv  func() (int, error) // messages received until the end
	}
	streams := make([]stream, K)
	var dc dialCounter
	if *fEngine == "raw" {
		clients := make([]*http.Client, C)
		for i := range clients {
			clients[i] = rawHTTPClient(&tls.Config{RootCAs: rootPool()}, dc.DialContext)
		}
		for i := range streams {
			pr, pw := io.Pipe()
			req, _ := http.NewRequest("POST", *fURL, pr)
			respc := make(chan *http.Response, 1)
			go func() {
				resp, err := clients[i%C].Do(req)
				if err != nil {
					fatalf("raw: %v", err)
				}
				respc <- resp
			}()
			pw.Write(msg) // the request is sent with its first bytes
			resp := <-respc
			buf := make([]byte, size)
			if _, err := io.ReadFull(resp.Body, buf); err != nil {
				fatalf("raw: %v", err)
			}
			streams[i] = stream{
				send:  func() error { _, err := pw.Write(msg); return err },
				close: pw.Close,
				recv: func() (int, error) {
					n := 0
					for {
						if _, err := io.ReadFull(resp.Body, buf); err != nil {
							if errors.Is(err, io.EOF) {
								err = nil
							}
							resp.Body.Close()
							return n, err
						}
						n++
					}
				},
			}
		}
	} else {
		clients := make([]*bidi.Client, C)
		for i := range clients {
			clients[i] = newClient(&dc)
		}
		for i := range streams {
			s, err := clients[i%C].Open(ctx, openInput)
			if err != nil {
				fatalf("open: %v", err)
			}
			defer s.Close()
			for range 10 {
				if err := s.Send(ctx, bidi.Binary(msg)); err != nil {
					fatalf("send: %v", err)
				}
				if _, err := s.Recv(ctx); err != nil {
					fatalf("recv: %v", err)
				}
			}
			streams[i] = stream{
				send:  func() error { return s.Send(ctx, bidi.Binary(msg)) },
				close: s.CloseSend,
				recv: func() (int, error) {
					n := 0
					for {
						m, err := s.Recv(ctx)
						if err != nil {
							if errors.Is(err, io.EOF) {
								err = nil
							}
							return n, err
						}
						if len(m.Data) != size {
							return n, errors.New("short message")
						}
						n++
					}
				},
			}
		}
	}

	var sent, received atomic.Int64
	var wg sync.WaitGroup
	stop := startProfile()
	r0, w0 := syscalls()
	cpu0, start := cpuTime(), time.Now()
	deadline := start.Add(*fDuration)
	for _, st := range streams {
		wg.Go(func() {
			for i := 0; i < *fN; i++ {
				if i%256 == 0 && time.Now().After(deadline) {
					break
				}
				if err := st.send(); err != nil {
					fatalf("send: %v", err)
				}
				sent.Add(1)
			}
			if err := st.close(); err != nil {
				fatalf("close send: %v", err)
			}
		})
		wg.Go(func() {
			n, err := st.recv()
			if err != nil {
				fatalf("recv: %v", err)
			}
			received.Add(int64(n))
		})
	}
	wg.Wait()
	elapsed, cpu := time.Since(start), cpuTime()-cpu0
	r1, w1 := syscalls()
	stop()
	if sent.Load() != received.Load() {
		fatalf("sent %d, received %d", sent.Load(), received.Load())
	}
	msgs := float64(received.Load())
	res.add("size", size)
	res.add("sessions", K)
	res.add("clients", C)
	res.add("messages", int64(msgs))
	res.add("msgs_per_s", msgs/elapsed.Seconds())
	res.add("cpu_us_per_msg", float64(cpu.Microseconds())/msgs)
	res.add("cpu_util", cpu.Seconds()/elapsed.Seconds())
	res.add("read_syscalls_per_msg", float64(r1-r0)/msgs)
	res.add("write_syscalls_per_msg", float64(w1-w0)/msgs)
	res.add("elapsed", elapsed)
}

// rawHTTPClient is the raw floor's client: net/http speaking only HTTP/2,
// configured as bidi.NewHTTPClient was before issue 18 removed it (PINGs
// at bidi's health-check defaults, no overall timeout).
func rawHTTPClient(tlsConfig *tls.Config, dial func(ctx context.Context, network, addr string) (net.Conn, error)) *http.Client {
	var protocols http.Protocols
	protocols.SetHTTP2(true)
	protocols.SetUnencryptedHTTP2(true)
	return &http.Client{Transport: &http.Transport{
		DialContext:         dial,
		TLSClientConfig:     tlsConfig,
		TLSHandshakeTimeout: 10 * time.Second,
		ForceAttemptHTTP2:   true,
		Protocols:           &protocols,
		HTTP2:               &http.HTTP2Config{PingTimeout: 10 * time.Second, SendPingTimeout: 15 * time.Second}, // bidi's health-check defaults
		MaxIdleConns:        100,
		IdleConnTimeout:     90 * time.Second,
	}}
}
