package main

import (
	"context"
	"encoding/binary"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sagemaker-bidi/sagemaker-bidi/bidi"
)

const audioInterval = 20 * time.Millisecond

// audio runs -n sessions that each send a -size (640 B) message every
// 20 ms for -duration (after a one-second warm-up), read the echoes, and
// reports the client's CPU per session-minute, the send-to-echo latency
// and how late sends were. The echoes are read with Recv, or with
// RecvPart (-recv part: each echo is one part), which reuses the
// session's buffer instead of allocating one per message.
func audio(res *result) {
	S, size := *fN, *fSize
	if size == 0 {
		size = 640
	}
	const warmup = time.Second
	D := *fDuration
	// engine=none runs the pacing loop alone, without sessions: the
	// harness's own cost (timers, goroutine wake-ups).
	none := *fEngine == "none"
	var dc dialCounter
	var c *bidi.Client
	sessions := make([]*bidi.Session, S)
	if !none {
		c = newClient(&dc)
		var openTime time.Duration
		sessions, openTime = openSessions(c, S, *fPar)
		res.add("open", openTime)
	}
	res.add("n", S)
	byPart := *fRecv == "part"
	res.add("recv", *fRecv)
	res.add("dials", dc.n.Load())

	perSession := int((warmup+D)/audioInterval) + 16
	type stats struct {
		lat      []uint32 // µs, echoes of messages sent after the warm-up
		late     []uint32 // µs, sends after the warm-up
		sent     int64
		received atomic.Int64
	}
	st := make([]stats, S)
	for i := range st {
		st[i].lat = make([]uint32, 0, perSession)
		st[i].late = make([]uint32, 0, perSession)
	}
	ctx := context.Background()
	t0 := time.Now().Add(100 * time.Millisecond)
	measureFrom := warmup.Nanoseconds()
	end := t0.Add(warmup + D)
	var senders, receivers sync.WaitGroup
	for i, s := range sessions {
		x := &st[i]
		phase := time.Duration(int64(audioInterval) * int64(i) / int64(S))
		senders.Go(func() {
			buf := make([]byte, size)
			for k := 0; ; k++ {
				sched := t0.Add(phase + time.Duration(k)*audioInterval)
				if !sched.Before(end) {
					return
				}
				time.Sleep(time.Until(sched))
				now := time.Since(t0)
				binary.LittleEndian.PutUint64(buf, uint64(now))
				if none {
					x.received.Add(1)
				} else if err := s.Send(ctx, bidi.Binary(buf)); err != nil {
					fatalf("audio send: %v", err)
				}
				x.sent++
				if sched.Sub(t0) >= warmup {
					x.late = append(x.late, uint32(time.Since(sched)/time.Microsecond))
				}
			}
		})
		if none {
			continue
		}
		receivers.Go(func() {
			for {
				var data []byte
				var err error
				if byPart {
					var p bidi.Part
					p, err = s.RecvPart(ctx)
					data = p.Data
				} else {
					var m bidi.Message
					m, err = s.Recv(ctx)
					data = m.Data
				}
				if err != nil {
					return
				}
				stamp := int64(binary.LittleEndian.Uint64(data))
				if stamp >= measureFrom {
					x.lat = append(x.lat, uint32((time.Since(t0).Nanoseconds()-stamp)/1e3))
				}
				x.received.Add(1)
			}
		})
	}
	time.Sleep(time.Until(t0.Add(warmup)))
	stop := startProfile()
	echoed := func() (n int64) {
		for i := range st {
			n += st[i].received.Load()
		}
		return n
	}
	r0, wr0 := syscalls()
	e0, cpu0, w0 := echoed(), cpuTime(), time.Now()
	time.Sleep(time.Until(end))
	e1, cpu1, w1 := echoed(), cpuTime(), time.Now()
	r1, wr1 := syscalls()
	stop()
	senders.Wait()
	// Wait (at most 5 s) for the last echoes.
	var sent, received int64
	for i := range st {
		sent += st[i].sent
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		received = 0
		for i := range st {
			received += st[i].received.Load()
		}
		if received >= sent || time.Now().After(deadline) {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	if !none {
		for _, s := range sessions {
			s.Close()
		}
		receivers.Wait()
		c.CloseIdleConnections()
	}

	var lat, late []uint32
	for i := range st {
		lat = append(lat, st[i].lat...)
		late = append(late, st[i].late...)
	}
	slices.Sort(lat)
	slices.Sort(late)
	q := func(v []uint32, p float64) time.Duration {
		if len(v) == 0 {
			return 0
		}
		return time.Duration(v[min(len(v)-1, int(p*float64(len(v))))]) * time.Microsecond
	}
	over20 := 0
	for _, l := range late {
		if l > 20000 {
			over20++
		}
	}
	window := w1.Sub(w0)
	cpu := (cpu1 - cpu0).Seconds()
	perSessMin := cpu / (float64(S) * window.Minutes())
	res.add("window_s", window.Seconds())
	res.add("cpu_s", cpu)
	res.add("cpu_util", cpu/window.Seconds())
	res.add("cpu_s_per_session_min", perSessMin)
	res.add("sessions_per_core", 60/perSessMin) // at this CPU cost, sessions one core can drive
	// When the host cannot keep up, fewer messages go through the window
	// than the schedule says, and the figure above flatters: this one
	// charges the window's CPU to the echoes received in it, 3,000 of
	// which make a session-minute.
	echoedInWindow := e1 - e0
	res.add("echoed_in_window", echoedInWindow)
	res.add("cpu_us_per_echo", cpu*1e6/float64(echoedInWindow))
	res.add("cpu_s_per_session_min_by_echoes", cpu/float64(echoedInWindow)*3000)
	msgsInWindow := float64(S) * window.Seconds() / audioInterval.Seconds()
	res.add("read_syscalls_per_msg", float64(r1-r0)/msgsInWindow)
	res.add("write_syscalls_per_msg", float64(wr1-wr0)/msgsInWindow)
	res.add("sent", sent)
	res.add("lost", sent-received)
	res.add("lat_p50", q(lat, 0.5))
	res.add("lat_p99", q(lat, 0.99))
	res.add("lat_max", q(lat, 1))
	res.add("late_p99", q(late, 0.99))
	res.add("late_max", q(late, 1))
	res.add("sends_over_20ms_late", over20)
	res.add("target_cpu", met(max(perSessMin, cpu/float64(echoedInWindow)*3000) <= 0.03))
	res.add("target_p99", met(q(lat, 0.99) < 50*time.Millisecond && sent == received))
	res.add("target_late", met(over20 == 0))
}
