package main

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"errors"
	"io"
	"os"
	"runtime/pprof"
	"syscall"
	"time"

	"github.com/sagemaker-bidi/sagemaker-bidi/bidi"
)

// large sends -n messages of -size (16 MiB) on one session, echoed (-echo)
// or to a discarding server, and compares the client's CPU with SHA-256
// over the same bytes, measured in the same process right after.
func large(res *result) {
	size, n := *fSize, *fN
	if size == 0 {
		size = 16 << 20
	}
	var dc dialCounter
	// With -reuse, received messages land in buffers of the program's
	// own, each given back once its echo is checked, as a program that
	// receives large messages would (Options.MessageBuffer).
	var free chan []byte
	var opts []func(*bidi.Options)
	if *fReuse {
		free = make(chan []byte, 4)
		opts = append(opts, func(o *bidi.Options) {
			o.MessageBuffer = func(n int) []byte {
				select {
				case b := <-free:
					if cap(b) >= n {
						return b[:n]
					}
				default:
				}
				return make([]byte, n)
			}
		})
	}
	c := newClient(&dc, opts...)
	ctx := context.Background()
	msg := make([]byte, size)
	rand.Read(msg)
	s, err := c.Open(ctx, openInput)
	if err != nil {
		fatalf("open: %v", err)
	}
	defer s.Close()
	// The echo comes back while the message is still being sent: receive
	// concurrently, or both sides stall under flow control. The first
	// message warms up; the measurement starts once it is back.
	recvd := make(chan int, 1)
	first := make(chan struct{})
	if *fEcho {
		go func() {
			got := 0
			for {
				m, err := s.Recv(ctx)
				if err != nil {
					if !errors.Is(err, io.EOF) {
						fatalf("recv: %v", err)
					}
					break
				}
				if len(m.Data) != size {
					fatalf("recv: %d bytes", len(m.Data))
				}
				select {
				case free <- m.Data: // nil without -reuse: never ready
				default:
				}
				if got++; got == 1 {
					close(first)
				}
			}
			recvd <- got - 1
		}()
	} else {
		close(first) // the discarding server sends nothing back
	}
	if err := s.Send(ctx, bidi.Binary(msg)); err != nil {
		fatalf("send: %v", err)
	}
	<-first

	stop := startProfile()
	flt0 := minorFaults()
	cpu0, start := cpuTime(), time.Now()
	deadline := start.Add(*fDuration)
	sent := 0
	for sent < n && time.Now().Before(deadline) {
		if err := s.Send(ctx, bidi.Binary(msg)); err != nil {
			fatalf("send: %v", err)
		}
		sent++
	}
	if err := s.CloseSend(); err != nil {
		fatalf("CloseSend: %v", err)
	}
	if *fEcho {
		if got := <-recvd; got != sent {
			fatalf("sent %d messages, %d came back", sent, got)
		}
	} else if _, err := s.Recv(ctx); !errors.Is(err, io.EOF) {
		fatalf("end of stream: %v", err)
	}
	elapsed, cpu := time.Since(start), cpuTime()-cpu0
	faults := minorFaults() - flt0
	stop()
	if *fMemProfile != "" {
		// Allocations of the whole run (alloc_space), live heap at its end.
		if f, err := os.Create(*fMemProfile); err == nil {
			pprof.Lookup("heap").WriteTo(f, 0)
			f.Close()
		}
	}

	bytes := int64(sent) * int64(size)
	cpuSHA := shaCPU(msg, sent)
	res.add("size", size)
	res.add("partsize", c.Options().MaxPartSize)
	res.add("echo", *fEcho)
	res.add("reuse", *fReuse)
	res.add("messages", sent)
	res.add("MBps", float64(bytes)/1e6/elapsed.Seconds())
	res.add("cpu_s", cpu.Seconds())
	res.add("cpu_util", cpu.Seconds()/elapsed.Seconds())
	res.add("cpu_ns_per_byte", float64(cpu.Nanoseconds())/float64(bytes))
	// Page faults: first touches of memory the runtime took from the
	// kernel, a cost of allocating fresh large buffers.
	res.add("minor_faults_per_msg", faults/int64(max(sent, 1)))
	res.add("sha256_cpu_s", cpuSHA.Seconds())
	res.add("sha256_MBps", float64(bytes)/1e6/cpuSHA.Seconds())
	ratio := cpu.Seconds() / cpuSHA.Seconds()
	res.add("cpu_vs_sha256", ratio) // SHA-256 over the bytes sent
	if *fEcho {
		// The client also received as many bytes.
		res.add("cpu_vs_sha256_both_ways", ratio/2)
	}
	res.add("target_MBps", met(float64(bytes)/1e6/elapsed.Seconds() >= 500))
	if *fEcho {
		ratio /= 2 // the target counts the bytes moved both ways
	}
	res.add("target_cpu", met(ratio <= 3))
}

// minorFaults returns the process's minor page faults so far.
func minorFaults() int64 {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return ru.Minflt
}

// shaCPU returns the CPU time of SHA-256 over msg, times times.
func shaCPU(msg []byte, times int) time.Duration {
	cpu0 := cpuTime()
	var sum [32]byte
	for range times {
		h := sha256.New()
		h.Write(msg)
		h.Sum(sum[:0])
	}
	return cpuTime() - cpu0
}
