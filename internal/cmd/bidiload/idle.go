package main

import (
	"bytes"
	"context"
	"math"
	"os"
	"runtime"
	"runtime/pprof"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sagemaker-bidi/sagemaker-bidi/bidi"
)

// openSessions opens n sessions with par concurrent Opens; each sends one
// small message and receives its echo before it counts as open.
func openSessions(c *bidi.Client, n, par int) ([]*bidi.Session, time.Duration) {
	sessions := make([]*bidi.Session, n)
	var next atomic.Int64
	var wg sync.WaitGroup
	ctx := context.Background()
	start := time.Now()
	msg := bytes.Repeat([]byte("i"), 64)
	for range min(par, n) {
		wg.Go(func() {
			for {
				i := int(next.Add(1)) - 1
				if i >= n {
					return
				}
				s, err := c.Open(ctx, openInput)
				if err != nil {
					fatalf("open %d: %v", i, err)
				}
				if err := s.Send(ctx, bidi.Binary(msg)); err != nil {
					fatalf("send %d: %v", i, err)
				}
				if m, err := s.Recv(ctx); err != nil || len(m.Data) != len(msg) {
					fatalf("recv %d: %d bytes, %v", i, len(m.Data), err)
				}
				sessions[i] = s
			}
		})
	}
	wg.Wait()
	return sessions, time.Since(start)
}

// heapInuse returns HeapInuse after two collections.
func heapInuse() uint64 {
	runtime.GC()
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapInuse
}

// idle opens -n sessions that then stay idle, optionally after -big of
// them carried one -bigsize message each way, and reports the heap in use
// and goroutines per session, then how fast the goroutines go after Close.
func idle(res *result) {
	n := *fN
	var dc dialCounter
	c := newClient(&dc)
	big := bytes.Repeat([]byte("B"), *fBigSize)
	time.Sleep(100 * time.Millisecond)
	h0, g0, rss0 := heapInuse(), runtime.NumGoroutine(), rssKiB()

	sessions, openTime := openSessions(c, n, *fPar)
	res.add("n", n)
	res.add("open", openTime)
	res.add("dials", dc.n.Load())

	if k := min(*fBig, n); k > 0 {
		// Every (n/k)-th session, so that every connection carries some.
		start := time.Now()
		var wg sync.WaitGroup
		var next atomic.Int64
		ctx := context.Background()
		for range min(*fPar, k, 16) {
			wg.Go(func() {
				for {
					j := int(next.Add(1)) - 1
					if j >= k {
						return
					}
					s := sessions[int(int64(j)*int64(n)/int64(k))]
					if err := s.Send(ctx, bidi.Binary(big)); err != nil {
						fatalf("big send: %v", err)
					}
					if m, err := s.Recv(ctx); err != nil || len(m.Data) != len(big) {
						fatalf("big recv: %d bytes, %v", len(m.Data), err)
					}
				}
			})
		}
		wg.Wait()
		res.add("big", k)
		res.add("bigsize", *fBigSize)
		res.add("big_time", time.Since(start))
	}

	time.Sleep(time.Second) // let transient goroutines and buffers go
	h1, g1, rss1 := heapInuse(), runtime.NumGoroutine(), rssKiB()
	if *fMemProfile != "" {
		if f, err := os.Create(*fMemProfile); err == nil {
			pprof.Lookup("heap").WriteTo(f, 0)
			f.Close()
		}
	}
	heapPer := (float64(h1) - float64(h0)) / float64(n)
	gPer := float64(g1-g0) / float64(n)
	res.add("heap_per_session_KiB", heapPer/1024)
	res.add("goroutines_per_session", gPer)
	res.add("rss_per_session_KiB", float64(rss1-rss0)/float64(n))
	res.add("heap_total_MiB", float64(h1-h0)/(1<<20))
	res.add("goroutines", g1-g0)
	res.add("target_heap", met(heapPer <= 32*1024))
	res.add("target_goroutines", met(gPer <= 2))

	// Close: how long do session goroutines outlive Close?
	start := time.Now()
	var wg sync.WaitGroup
	for i := range 16 {
		wg.Go(func() {
			for j := i; j < n; j += 16 {
				sessions[j].Close()
			}
		})
	}
	wg.Wait()
	res.add("close_all", time.Since(start))
	c.CloseIdleConnections()
	closed := time.Now()
	left := func() int { return runtime.NumGoroutine() - g0 }
	for _, at := range []time.Duration{100 * time.Millisecond, time.Second, 5 * time.Second} {
		time.Sleep(time.Until(closed.Add(at)))
		res.add("goroutines_left_"+at.String(), left())
	}
	clear(sessions)
}

func met(ok bool) string {
	if ok {
		return "met"
	}
	return "MISSED"
}

// dials opens -n sessions at once and counts the TCP dials (each one TLS
// handshake) against ceil(n / -effcap) + 1.
func dials(res *result) {
	n := *fN
	var dc dialCounter
	c := newClient(&dc)
	ctx := context.Background()
	msg := []byte("hello")
	startGate := make(chan struct{})
	sessions := make([]*bidi.Session, n)
	lat := make([]time.Duration, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			<-startGate
			t := time.Now()
			s, err := c.Open(ctx, openInput)
			if err == nil {
				err = s.Send(ctx, bidi.Binary(msg))
			}
			if err == nil {
				_, err = s.Recv(ctx)
			}
			lat[i], errs[i], sessions[i] = time.Since(t), err, s
		})
	}
	time.Sleep(50 * time.Millisecond)
	start := time.Now()
	close(startGate)
	wg.Wait()
	elapsed := time.Since(start)
	failed := 0
	var firstErr error
	for _, err := range errs {
		if err != nil {
			failed++
			if firstErr == nil {
				firstErr = err
			}
		}
	}
	sortDurations(lat)
	res.add("n", n)
	res.add("dials", dc.n.Load())
	res.add("dials_failed", dc.failed.Load())
	if *fEffCap > 0 {
		target := int64(math.Ceil(float64(n)/float64(*fEffCap))) + 1
		res.add("streams_per_conn", *fEffCap)
		res.add("dials_target", target)
		res.add("target_dials", met(dc.n.Load() <= target))
	}
	res.add("failed", failed)
	if firstErr != nil {
		res.add("first_error", firstErr.Error())
	}
	res.add("all_open", elapsed)
	res.add("open_p50", percentile(lat, 0.5))
	res.add("open_p99", percentile(lat, 0.99))
	for _, s := range sessions {
		if s != nil {
			s.Close()
		}
	}
	c.CloseIdleConnections()
}
