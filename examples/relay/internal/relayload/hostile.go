package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"time"

	"github.com/coder/websocket"
)

// hostile opens n half-open sockets and n/5 slowloris upgrades (headers
// trickled a byte at a time), and sends 50 each of oversize frames,
// invalid UTF-8 and ping floods, while active clients keep streaming; it
// reports how each hostile client ended, the relay's memory and the
// others' round trips.
func hostile(ctx context.Context, rp *relayProc, n int, baseline []time.Duration) error {
	st0, _ := rp.stats(true)
	var socks []net.Conn
	defer func() {
		for _, c := range socks {
			c.Close()
		}
	}()
	for range n {
		c, err := net.Dial("tcp", rp.addr)
		if err != nil {
			return err
		}
		socks = append(socks, c)
	}
	stopLoris := make(chan struct{})
	var loris sync.WaitGroup
	lorisEnded := make(chan time.Duration, n/5)
	for range n / 5 {
		c, err := net.Dial("tcp", rp.addr)
		if err != nil {
			return err
		}
		socks = append(socks, c)
		loris.Go(func() {
			start := time.Now()
			c.Write([]byte("GET /ws HTTP/1.1\r\nHost: relay\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nX-Slow: "))
			go func() { // trickle a byte of header every 500 ms
				t := time.NewTicker(500 * time.Millisecond)
				defer t.Stop()
				for {
					select {
					case <-stopLoris:
						return
					case <-t.C:
					}
					if _, err := c.Write([]byte("a")); err != nil {
						return
					}
				}
			}()
			c.SetReadDeadline(time.Now().Add(20 * time.Second))
			if _, err := io.Copy(io.Discard, c); err == nil || !isTimeout(err) {
				lorisEnded <- time.Since(start) // the server answered or closed
			}
		})
	}
	type outcome struct {
		kind string
		code websocket.StatusCode
		err  string
	}
	results := make(chan outcome, 150)
	var bad sync.WaitGroup
	for i := range 150 {
		bad.Go(func() {
			kind := [...]string{"oversize frame", "invalid UTF-8", "ping flood"}[i%3]
			c, _, err := websocket.Dial(ctx, "ws://"+rp.addr+"/ws?ep=load", nil)
			if err != nil {
				results <- outcome{kind, -1, err.Error()}
				return
			}
			defer c.CloseNow()
			go func() {
				switch i % 3 {
				case 0:
					c.Write(ctx, websocket.MessageBinary, bytes.Repeat([]byte{1}, 1<<20))
				case 1:
					c.Write(ctx, websocket.MessageText, []byte{'a', 0xff, 0xfe})
				case 2:
					for range 1000 {
						pctx, cancel := context.WithTimeout(ctx, time.Second)
						err := c.Ping(pctx)
						cancel()
						if err != nil {
							return
						}
					}
				}
			}()
			for {
				if _, _, err = c.Read(ctx); err != nil {
					break
				}
			}
			results <- outcome{kind, websocket.CloseStatus(err), ""}
		})
	}
	during, err := inRounds(ctx, *active, *frames, *ovRounds, func(ctx context.Context) (echoer, error) { return openRelayed(ctx, rp.addr, "load") })
	if err != nil {
		return err
	}
	st1, _ := rp.stats(true)
	bad.Wait()
	close(results)
	tally := map[string]int{}
	for r := range results {
		tally[fmt.Sprintf("%s → close %d%s", r.kind, r.code, r.err)]++
	}
	fmt.Printf("hostile: %d half-open sockets, %d slowloris upgrades, 150 bad clients: relay RSS %.1f MiB (%.1f before), heap %.1f MiB, %d goroutines\n",
		n, n/5, mib(st1.RSS), mib(st0.RSS), mib(int64(st1.HeapInuse)), st1.Goroutine)
	for k, v := range tally {
		fmt.Printf("  %d × %s\n", v, k)
	}
	report("round trips meanwhile", during)
	fmt.Printf("  p99 vs unloaded: %.2fx\n", ratio(during, baseline, 99))
	// The server's ReadHeaderTimeout (5 s) ends the slow and the silent.
	deadline := time.Now().Add(10 * time.Second)
	closed := 0
	for _, c := range socks[:n] {
		c.SetReadDeadline(deadline)
		if _, err := c.Read(make([]byte, 1)); errors.Is(err, io.EOF) || (err != nil && !isTimeout(err)) {
			closed++
		}
	}
	loris.Wait()
	close(stopLoris)
	close(lorisEnded)
	var worst time.Duration
	lc := 0
	for d := range lorisEnded {
		lc++
		worst = max(worst, d)
	}
	fmt.Printf("  half-open sockets closed by the server: %d of %d; slowloris upgrades cut: %d of %d (the last after %v)\n",
		closed, n, lc, n/5, worst.Round(100*time.Millisecond))
	return nil
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}
