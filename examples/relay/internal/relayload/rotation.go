package main

import (
	"context"
	"encoding/binary"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/coder/websocket"
)

// rotationRun streams audio time-compressed through the relay, whose
// child rotates the model's stream every -rotate-after: each of n
// clients sends seconds of 20 ms frames at speed times real time, its
// reader checks that every frame comes back once (around a rotation the
// old stream's last replies and the new one's first may interleave), and
// the run reports losses, duplicates, reorderings and the gaps between
// replies.
func rotationRun(ctx context.Context, rp *relayProc, n int, audio time.Duration, speed float64) error {
	st0, _ := rp.stats(true)
	perClient := int(audio / (20 * time.Millisecond))
	interval := time.Duration(float64(20*time.Millisecond) / speed)
	type result struct {
		received, lost, dup int
		reordered           int // replies after a later frame's (a rotation's overlap)
		gaps                []time.Duration
		code                websocket.StatusCode
		err                 error
	}
	results := make([]result, n)
	var wg sync.WaitGroup
	start := time.Now()
	for i := range n {
		wg.Go(func() {
			r := &results[i]
			c, _, err := websocket.Dial(ctx, "ws://"+rp.addr+"/ws?ep=load", nil)
			if err != nil {
				r.err = err
				return
			}
			defer c.CloseNow()
			done := make(chan struct{})
			go func() {
				defer close(done)
				seen := make([]bool, perClient)
				var highest uint32
				last := time.Now()
				for {
					_, b, err := c.Read(ctx)
					if err != nil {
						r.code = websocket.CloseStatus(err)
						return
					}
					now := time.Now()
					r.gaps = append(r.gaps, now.Sub(last))
					last = now
					seq := binary.LittleEndian.Uint32(b)
					switch {
					case int(seq) >= perClient:
						r.dup++ // not a frame this client sent
					case seen[seq]:
						r.dup++
					default:
						seen[seq] = true
						r.received++
						if seq < highest {
							r.reordered++
						}
						highest = max(highest, seq)
					}
				}
			}()
			f := make([]byte, 640)
			tick := time.NewTicker(interval)
			defer tick.Stop()
			for seq := range perClient {
				<-tick.C
				binary.LittleEndian.PutUint32(f, uint32(seq))
				if err := c.Write(ctx, websocket.MessageBinary, f); err != nil {
					r.err = err
					return
				}
			}
			c.Write(ctx, websocket.MessageText, []byte(`{"type":"end"}`))
			<-done
			r.lost = perClient - r.received
		})
	}
	wg.Wait()
	elapsed := time.Since(start)
	st1, _ := rp.stats(true)
	var lost, dup, recv, reordered int
	var gaps []time.Duration
	codes := map[websocket.StatusCode]int{}
	for _, r := range results {
		if r.err != nil {
			return r.err
		}
		lost += r.lost
		dup += r.dup
		reordered += r.reordered
		recv += r.received
		gaps = append(gaps, r.gaps...)
		codes[r.code]++
	}
	slices.Sort(gaps)
	fmt.Printf("rotation run: %d clients × %v of audio at %gx (%d frames each) in %v, %d stream rotations: %d replies, %d frames lost, %d duplicated, %d after a later frame's (rotation overlap), closes %v\n",
		n, audio, speed, perClient, elapsed.Round(100*time.Millisecond), st1.Rotations-st0.Rotations, recv, lost, dup, reordered, codes)
	fmt.Printf("  gaps between replies (frames every %v): p50 %v, p99 %v, p99.9 %v, max %v\n", interval,
		pct(gaps, 50).Round(10*time.Microsecond), pct(gaps, 99).Round(10*time.Microsecond),
		gaps[min(len(gaps)-1, len(gaps)*999/1000)].Round(10*time.Microsecond), pct(gaps, 100).Round(10*time.Microsecond))
	if lost != 0 || dup != 0 || codes[websocket.StatusNormalClosure] != n {
		return fmt.Errorf("rotation run: %d lost, %d duplicated, closes %v", lost, dup, codes)
	}
	return nil
}
