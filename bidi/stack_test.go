//go:build amd64 && !race

// The frame sizes this test counts on are those of the amd64 compiler
// without the race detector, which makes every frame deeper; .ci/run
// runs it so, beside the suite under -race.

package bidi_test

import (
	"context"
	"os"
	"runtime"
	"runtime/metrics"
	"strconv"
	"sync"
	"testing"

	"github.com/sagemaker-bidi/sagemaker-bidi/bidi"
	"github.com/sagemaker-bidi/sagemaker-bidi/bidi/biditest"
)

// stackBytes returns the bytes of goroutine stacks in use.
func stackBytes() int64 {
	s := []metrics.Sample{{Name: "/memory/classes/heap/stacks:bytes"}}
	metrics.Read(s)
	return int64(s[0].Value.Uint64())
}

// pad makes underFrames' frame about 190 bytes.
type pad [96]byte

//go:noinline
func touch(p *pad) { p[0]++ }

// underFrames calls f under k more of its frames.
//
//go:noinline
func underFrames(k int, f func()) {
	var p pad
	touch(&p)
	if k == 0 {
		f()
		return
	}
	underFrames(k-1, f)
}

func envInt(name string, def int) int {
	if n, err := strconv.Atoi(os.Getenv(name)); err == nil {
		return n
	}
	return def
}

// TestSendStackDepth: a Send from under several hundred bytes of the
// caller's frames (three of about 190 bytes, and the goroutine's own)
// leaves the goroutine's stack the size it is without the Send. A goroutine that then parks with a couple of KiB of frames
// (as one reading a socket does) keeps its stack's largest size for
// good, so a Send that grew it past 4 KiB would cost 4 KiB more per
// such goroutine for its whole life (see "Stack depth" in
// docs/design.md): the relay's client readers did.
func TestSendStackDepth(t *testing.T) {
	srv := biditest.NewServer(biditest.Echo())
	defer srv.Close()
	client := srv.Client()
	defer client.CloseIdleConnections()
	ctx := context.Background()
	const n = 256
	sessions := make([]*bidi.Session, n)
	for i := range sessions {
		s, err := client.Open(ctx, &bidi.OpenInput{EndpointName: "stack", AwaitResponse: true})
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		sessions[i] = s
	}
	caller, park := envInt("STACK_CALLER", 3), envInt("STACK_PARK", 10)
	frame := make([]byte, 640)
	group := func(send bool) int64 {
		release := make(chan struct{})
		var parked, done sync.WaitGroup
		parked.Add(n)
		errs := make(chan error, n)
		runtime.GC()
		before := stackBytes()
		for _, s := range sessions {
			done.Go(func() {
				underFrames(caller, func() {
					if send {
						if err := s.Send(ctx, bidi.Binary(frame)); err != nil {
							errs <- err
						}
					}
				})
				underFrames(park, func() {
					parked.Done()
					<-release
				})
			})
		}
		parked.Wait()
		runtime.GC()
		runtime.GC()
		after := stackBytes()
		close(release)
		done.Wait()
		close(errs)
		for err := range errs {
			t.Fatal(err)
		}
		return (after - before) / n
	}
	// The second group reuses some of the stacks the first one's
	// goroutines left (the runtime keeps a dead goroutine's stack for
	// its next one), so its figure reads low by up to a KiB or so;
	// doubled stacks still read far above the first group's.
	without := group(false)
	with := group(true)
	t.Logf("stack per goroutine: %d bytes without a Send, %d with one", without, with)
	if with > without+1536 { // a third of the goroutines doubled
		t.Errorf("a Send under %d frames of ~190 bytes grew the goroutine's stack: %d bytes a goroutine, %d without it", caller, with, without)
	}
}
