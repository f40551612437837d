// Command relayload measures the relay (package bidi/relay) under load,
// on loopback, against biditest's echo model:
//
//   - overhead: echo round trips of paced 20 ms audio frames through the
//     relay, beside the same through a bidi session used directly: from
//     this process, where the model runs too, and from the relay's
//     process, on the relay's own client without the WebSocket in front
//     (the like-for-like: the model in another process, as SageMaker is
//     for both). The relayed round trips and the relay process's own
//     alternate in rounds (-overhead-rounds, sharing -frames, each with
//     new sessions), so that a host whose speed drifts during the run
//     moves both alike; every other set of round trips compared with
//     them (with the crowd, during the hostile phase) is measured in the
//     same rounds;
//   - CPU: the relay process's CPU time per audio session-minute;
//   - a crowd of clients that never read, flooded with replies until the
//     relay's queue to each is at its bound (the relay's sockets get a
//     small send buffer, -sndbuf, as on loopback the kernel's grows to
//     hold hundreds of KiB per client): the relay's memory, and the round
//     trips of other clients meanwhile;
//   - refused opens (424, 400, 503, throttling): the time from the
//     model's refusal to the client's close, and the close code.
//
// The relay runs in a child process (the same binary with -serve), so
// that its memory (RSS, heap) and CPU time are its own; the clients and
// the echo model run in this one. With -pin (Linux) the relay runs on half
// of the CPUs and this process on the other half, as when the clients are
// on other machines: on a small host, where the relay shares its CPUs
// with a thousand clients and the model, replies wait longer in its
// buffers for its goroutines to run, and its memory peaks higher.
//
//	go run ./examples/relay/internal/relayload -idle 1000 -active 20
package main

import (
	"bufio"
	"bytes"
	"cmp"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/binary"
	"encoding/json"
	"encoding/pem"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/coder/websocket"

	"github.com/sagemaker-bidi/sagemaker-bidi/bidi"
	"github.com/sagemaker-bidi/sagemaker-bidi/bidi/biditest"
)

// The credentials and region the model server accepts and the relay (in
// another process) signs with.
var (
	modelCredentials = aws.Credentials{AccessKeyID: "AKIDRELAYLOAD", SecretAccessKey: "relayload-secret-access-key-0000"}
	modelRegion      = "us-west-2"
)

var (
	serve    = flag.Bool("serve", false, "run the relay (child process)")
	modelURL = flag.String("model", "", "biditest URL (child)")
	certFile = flag.String("cert", "", "biditest certificate PEM (child)")
	queue    = flag.Int("queue", 0, "relay queue bytes per direction (0: default)")
	idle     = flag.Int("idle", 1000, "clients that never read")
	active   = flag.Int("active", 20, "clients doing paced round trips")
	frames   = flag.Int("frames", 250, "round trips per active client (20 ms apart)")
	ovRounds = flag.Int("overhead-rounds", 5, "rounds the relayed round trips and the same on sessions of the relay's own process alternate in, sharing -frames (the relay's overhead, like for like)")
	heapProf = flag.String("heapprofile", "", "write the relay's heap profile with the crowd connected to this `file`")
	memRate  = flag.Int("memprofilerate", 0, "the relay process's runtime.MemProfileRate for -heapprofile (0: the runtime's, one sample per 512 KiB; 1: every allocation)")
	hostileN = flag.Int("hostile", 1000, "half-open sockets in the hostile phase (0 skips it); a fifth as many slowloris upgrades")
	rotAfter = flag.Duration("rotate-after", 0, "with -rotate-run: the age at which the relay's RotatingSession replaces its stream")
	rotRun   = flag.Duration("rotate-run", 0, "instead of the other phases: stream this much audio per client through rotating sessions")
	speed    = flag.Float64("speed", 20, "with -rotate-run: times real time")
	idleSend = flag.Int("idle-frames", 8, "640-byte frames each idle client sends")
	idleEcho = flag.Int("idle-echoes", 32, "replies the model sends to each frame of an idle client (in all they must outgrow the kernel's socket buffers and the relay's queue)")
	crowdRcv = flag.Int("crowd-rcvbuf", 4096, "SO_RCVBUF of the idle clients' sockets (0: the system's default)")
	sndbuf   = flag.Int("sndbuf", 32<<10, "SO_SNDBUF of the relay's accepted sockets (0: the system's, which grows to MiBs on loopback)")
	settle   = flag.Duration("settle", 30*time.Second, "how long the crowd's queues may take to fill and settle")
	pooled   = flag.Bool("pooled-replies", true, "the relay's client receives into relay.MessageBuffer's pooled buffers (false: fresh ones, for the garbage collector)")
	delay    = flag.Duration("model-delay", 0, "how long the echo model takes to answer each message of the round trips (0: at once, the loopback floor; a real model takes milliseconds to seconds)")
	memLimit = flag.Int64("memlimit", 0, "the relay process's soft memory limit in `bytes` (debug.SetMemoryLimit; 0: none)")
	pin      = flag.Bool("pin", false, "run the relay on the first half of the CPUs and the clients and the model on the rest (Linux; at least two CPUs)")
	cpus     = flag.String("cpus", "", "the CPUs the relay runs on, comma-separated (child; set by -pin)")
)

// childCPUs is the -cpus list startRelay gives the relay child: set by
// drive with -pin, empty otherwise.
var childCPUs string

func main() {
	flag.Parse()
	if *serve {
		if err := runRelay(); err != nil {
			fmt.Fprintln(os.Stderr, "relayload -serve:", err)
			os.Exit(1)
		}
		return
	}
	if err := drive(); err != nil {
		fmt.Fprintln(os.Stderr, "relayload:", err)
		os.Exit(1)
	}
}

// model is the echo model; endpoints named refuse-NNN answer with that
// refusal instead, and record when; the endpoint "flood" answers each
// message with -idle-echoes copies of it.
type model struct {
	refusedAt sync.Map // endpoint -> time.Time of the last refusal
}

func (m *model) ServeBidi(st *biditest.Stream) {
	ep := st.EndpointName
	if code, ok := strings.CutPrefix(ep, "refuse-"); ok {
		m.refusedAt.Store(ep, time.Now())
		switch code {
		case "424":
			st.Fail(424, "ModelError", map[string]any{"Message": "Failed to establish WebSocket connection"})
		case "400":
			st.Fail(400, "InputValidationError", map[string]any{"Message": "Endpoint variant is not valid"})
		case "503":
			st.Fail(503, "ServiceUnavailableError", map[string]any{"Message": "Service unavailable"})
		case "429":
			st.Fail(400, "ThrottlingException", map[string]any{"message": "Rate exceeded"})
		}
		return
	}
	if ep == "flood" {
		if st.Accept() != nil {
			return
		}
		for {
			m, err := st.Recv()
			if err != nil {
				return
			}
			for range *idleEcho {
				if st.Send(m) != nil {
					return
				}
			}
		}
	}
	if *delay > 0 {
		biditest.StampedEcho(*delay, nil).ServeBidi(st)
		return
	}
	biditest.Echo().ServeBidi(st)
}

type relayProc struct {
	cmd  *exec.Cmd
	addr string
}

func startRelay(srv *biditest.Server) (*relayProc, error) {
	cert, err := os.CreateTemp("", "relayload-*.pem")
	if err != nil {
		return nil, err
	}
	defer os.Remove(cert.Name()) // the child has read it once it listens
	pem.Encode(cert, &pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw})
	cert.Close()
	args := []string{"-serve", "-model", srv.URL, "-cert", cert.Name(), "-queue", strconv.Itoa(*queue), "-rotate-after", rotAfter.String(), "-sndbuf", strconv.Itoa(*sndbuf), "-memlimit", strconv.FormatInt(*memLimit, 10), "-memprofilerate", strconv.Itoa(*memRate), "-pooled-replies=" + strconv.FormatBool(*pooled), "-model-delay", delay.String()}
	if childCPUs != "" {
		args = append(args, "-cpus", childCPUs)
	}
	cmd := exec.Command(os.Args[0], args...)
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		return nil, fmt.Errorf("relay child: %w", err)
	}
	return &relayProc{cmd: cmd, addr: strings.TrimSpace(strings.TrimPrefix(line, "listening "))}, nil
}

// stats reads the child's own view and its /proc figures.
type stats struct {
	RSS          int64 // bytes, VmRSS
	PeakRSS      int64 // bytes, VmHWM: the most RSS so far
	HeapInuse    uint64
	HeapAlloc    uint64 // live bytes after a GC
	StackIn      uint64
	Sys          uint64
	HeapIdle     uint64 // heap pages holding no object
	HeapReleased uint64 // of them, given back to the system
	StackSys     uint64
	MetaSys      uint64 // the runtime's own: spans, caches, GC metadata, profiling buckets
	OtherSys     uint64
	TotalAlloc   uint64 // bytes allocated since the process started
	NumGC        uint32 // collections since the process started
	Goroutine    int
	Active       int
	Drops        int64 // to the client
	DropsToModel int64
	Rotations    int64
	CPU          time.Duration // user+system
}

// stats reads the relay's figures; with gc, after two collections, so
// that the heap is what is live (a poll without one leaves the
// collector's pace alone).
func (p *relayProc) stats(gc bool) (stats, error) {
	var s stats
	url := "http://" + p.addr + "/stats"
	if gc {
		url += "?gc=1"
	}
	resp, err := http.Get(url)
	if err != nil {
		return s, err
	}
	defer resp.Body.Close()
	if err := json.NewDecoder(resp.Body).Decode(&s); err != nil {
		return s, err
	}
	status, _ := os.ReadFile(fmt.Sprintf("/proc/%d/status", p.cmd.Process.Pid))
	for l := range strings.SplitSeq(string(status), "\n") {
		if v, ok := strings.CutPrefix(l, "VmRSS:"); ok {
			s.RSS = statusBytes(v)
		}
		if v, ok := strings.CutPrefix(l, "VmHWM:"); ok {
			s.PeakRSS = statusBytes(v)
		}
	}
	stat, _ := os.ReadFile(fmt.Sprintf("/proc/%d/stat", p.cmd.Process.Pid))
	if i := strings.LastIndexByte(string(stat), ')'); i > 0 {
		f := strings.Fields(string(stat)[i+2:])
		if len(f) > 13 {
			ut, _ := strconv.ParseInt(f[11], 10, 64)
			st, _ := strconv.ParseInt(f[12], 10, 64)
			s.CPU = time.Duration(ut+st) * time.Second / 100 // USER_HZ
		}
	}
	return s, nil
}

// directRoundTrips has the relay's process run n clients' paced round
// trips on sessions of its own client, used directly (no WebSocket in
// front): the session the relay uses, as an application in the relay's
// place would.
func (p *relayProc) directRoundTrips(n, frames int) ([]time.Duration, error) {
	resp, err := http.Get(fmt.Sprintf("http://%s/direct?n=%d&frames=%d", p.addr, n, frames))
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<10))
		return nil, fmt.Errorf("%s: %s", resp.Status, bytes.TrimSpace(b))
	}
	var d []time.Duration
	err = json.NewDecoder(resp.Body).Decode(&d)
	return d, err
}

// samplePeaks polls the relay's figures every 50 ms, without a
// collection, until the returned function is called; that returns the
// largest of each seen.
func samplePeaks(rp *relayProc) (stop func() stats) {
	done := make(chan struct{})
	result := make(chan stats, 1)
	go func() {
		var most stats
		t := time.NewTicker(50 * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-done:
				result <- most
				return
			case <-t.C:
			}
			st, err := rp.stats(false)
			if err != nil {
				continue
			}
			most.RSS = max(most.RSS, st.RSS)
			most.HeapInuse = max(most.HeapInuse, st.HeapInuse)
			most.StackIn = max(most.StackIn, st.StackIn)
			most.Goroutine = max(most.Goroutine, st.Goroutine)
		}
	}()
	return func() stats {
		close(done)
		return <-result
	}
}

// statusBytes parses a /proc/PID/status size ("  1234 kB").
func statusBytes(v string) int64 {
	kb, _ := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
	return kb << 10
}

// startModel starts m behind a biditest server that the relay's
// credentials sign for.
func startModel(m *model) *biditest.Server {
	srv := biditest.NewUnstartedServer(m)
	srv.MaxConcurrentStreams = 1000
	// The crowd's streams may still be finishing when the hostile phase
	// opens more: the load is the relay's, not the model's.
	srv.MaxSessions = -1
	srv.Credentials = modelCredentials
	srv.Region = modelRegion
	srv.Start()
	return srv
}

func drive() error {
	ctx := context.Background()
	if *pin {
		relayCPUs, loadCPUs, err := splitCPUs()
		if err != nil {
			return err
		}
		if err := pinProcess(loadCPUs); err != nil {
			return err
		}
		childCPUs = relayCPUs
		fmt.Printf("relay on CPUs %s; clients and model on %s\n", relayCPUs, loadCPUs)
	}
	m := &model{}
	srv := startModel(m)
	defer srv.Close()
	rp, err := startRelay(srv)
	if err != nil {
		return err
	}
	defer rp.cmd.Process.Kill()
	if *rotRun > 0 {
		return rotationRun(ctx, rp, *active, *rotRun, *speed)
	}
	fmt.Printf("relay child pid %d on %s; model biditest echo (answering after %v); %d active clients x %d frames (640 B, 20 ms apart)\n",
		rp.cmd.Process.Pid, rp.addr, *delay, *active, *frames)

	// Overhead: the same paced round trips, direct and through the relay.
	direct, err := inRounds(ctx, *active, *frames, *ovRounds, func(ctx context.Context) (echoer, error) { return openDirect(ctx, srv.Client()) })
	if err != nil {
		return fmt.Errorf("direct: %w", err)
	}
	relayed, inRelay, cpu, err := overhead(ctx, rp, *active, *frames, *ovRounds)
	if err != nil {
		return err
	}
	report("direct session", direct)
	report("direct, in the relay's process", inRelay)
	report("through the relay", relayed)
	fmt.Printf("relay/direct: p50 %.2fx, p99 %.2fx (model delay %v); the relay adds p50 %v, p99 %v\n",
		ratio(relayed, direct, 50), ratio(relayed, direct, 99), *delay,
		(pct(relayed, 50) - pct(direct, 50)).Round(time.Microsecond), (pct(relayed, 99) - pct(direct, 99)).Round(time.Microsecond))
	fmt.Printf("relay/direct in the relay's process: p50 %.2fx, p99 %.2fx; the relay adds p50 %v, p99 %v\n",
		ratio(relayed, inRelay, 50), ratio(relayed, inRelay, 99),
		(pct(relayed, 50) - pct(inRelay, 50)).Round(time.Microsecond), (pct(relayed, 99) - pct(inRelay, 99)).Round(time.Microsecond))
	sessMin := float64(*active) * float64(*frames) * 0.020 / 60
	fmt.Printf("relay CPU: %v for %.2f audio session-minutes = %.3f CPU-s per session-minute (relay process, its bidi sessions included)\n",
		cpu, sessMin, cpu.Seconds()/sessMin)

	// A crowd that never reads.
	st0, _ := rp.stats(true)
	fmt.Printf("relay before the crowd: RSS %.1f MiB, heap %.1f MiB, stacks %.1f MiB, %d goroutines\n",
		mib(st0.RSS), mib(int64(st0.HeapInuse)), mib(int64(st0.StackIn)), st0.Goroutine)
	stopSampling := samplePeaks(rp)
	crowd, err := startCrowd(ctx, rp.addr, *idle, *idleSend, *crowdRcv)
	if err != nil {
		stopSampling()
		return fmt.Errorf("crowd: %w", err)
	}
	// Until the clients' replies overflowed their queues and nothing
	// moves any more: every client connected, at least one drop per
	// client (none with -idle-frames 0: idle clients), and the drop
	// counts unchanged for half a second.
	wantDrops := int64(*idle)
	if *idleSend == 0 {
		wantDrops = 0
	}
	var st1 stats
	settled := false
	for still := 0; still < 5; {
		if time.Since(crowd.started) > *settle {
			break
		}
		time.Sleep(100 * time.Millisecond)
		prev := st1
		st1, _ = rp.stats(false)
		if st1.Active >= *idle && st1.Drops >= wantDrops && st1.Drops == prev.Drops && st1.DropsToModel == prev.DropsToModel {
			still++
		} else {
			still = 0
		}
		settled = still == 5
	}
	fill := stopSampling()
	if !settled {
		crowd.close()
		return fmt.Errorf("crowd: the relay's queues did not fill and settle within %v (%d clients, %d drops to them)", *settle, st1.Active, st1.Drops)
	}
	st1, _ = rp.stats(true)
	fmt.Printf("relay with %d clients that never read (%d frames each sent, %d replies to each; dropped: %d to the clients, %d to the model): RSS %.1f MiB, heap %.1f MiB (live %.1f MiB), stacks %.1f MiB, %d goroutines; %.1f KiB RSS per client\n",
		st1.Active, *idleSend, *idleEcho, st1.Drops, st1.DropsToModel, mib(st1.RSS), mib(int64(st1.HeapInuse)), mib(int64(st1.HeapAlloc)), mib(int64(st1.StackIn)), st1.Goroutine,
		float64(st1.RSS-st0.RSS)/1024/float64(max(1, st1.Active)))
	fmt.Printf("  peak RSS so far %.1f MiB; while the crowd connected and filled (sampled every 50 ms): at most RSS %.1f MiB, heap in use %.1f MiB, stacks %.1f MiB, %d goroutines\n",
		mib(st1.PeakRSS), mib(fill.RSS), mib(int64(fill.HeapInuse)), mib(int64(fill.StackIn)), fill.Goroutine)
	fmt.Printf("  the runtime's view: heap %.1f MiB in use, %.1f MiB free and kept, %.1f MiB given back; stacks %.1f MiB reserved; its own metadata %.1f MiB, other %.1f MiB; %.1f MiB mapped in all\n",
		mib(int64(st1.HeapInuse)), mib(int64(st1.HeapIdle-st1.HeapReleased)), mib(int64(st1.HeapReleased)),
		mib(int64(st1.StackSys)), mib(int64(st1.MetaSys)), mib(int64(st1.OtherSys)), mib(int64(st1.Sys)))
	fmt.Printf("  allocated while the crowd connected and filled: %.1f MiB, in %d collections (of them the two for these figures)\n",
		mib(int64(st1.TotalAlloc-st0.TotalAlloc)), st1.NumGC-st0.NumGC)
	if *heapProf != "" {
		if resp, err := http.Get("http://" + rp.addr + "/debug/pprof/heap?gc=1"); err == nil {
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			os.WriteFile(*heapProf, b, 0o644)
		}
	}
	beforeLoaded, _ := rp.stats(false)
	loaded, err := inRounds(ctx, *active, *frames, *ovRounds, func(ctx context.Context) (echoer, error) { return openRelayed(ctx, rp.addr, "load") })
	if err != nil {
		return fmt.Errorf("loaded: %w", err)
	}
	afterLoaded, _ := rp.stats(false)
	report("through the relay, with the crowd", loaded)
	fmt.Printf("loaded/unloaded p99: %.2fx\n", ratio(loaded, relayed, 99))
	// The same round trips without the relay while the crowd is there:
	// what the crowd costs the model and the clients' own process (they
	// share this one, and its cores), which the relay does not cause.
	directLoaded, err := inRounds(ctx, *active, *frames, *ovRounds, func(ctx context.Context) (echoer, error) { return openDirect(ctx, srv.Client()) })
	if err != nil {
		return fmt.Errorf("direct, loaded: %w", err)
	}
	report("direct session, with the crowd", directLoaded)
	fmt.Printf("direct loaded/unloaded p99: %.2fx\n", ratio(directLoaded, direct, 99))
	// The crowd's calls are idle meanwhile (their queues full, their
	// model sessions quiet): what they cost the relay is what this adds
	// to the active clients' CPU above.
	cpu = afterLoaded.CPU - beforeLoaded.CPU
	fmt.Printf("relay CPU with the crowd: %v for %.2f audio session-minutes = %.3f CPU-s per session-minute\n",
		cpu, sessMin, cpu.Seconds()/sessMin)
	st2, _ := rp.stats(true)
	fmt.Printf("relay after the loaded run: RSS %.1f MiB (the most since it started %.1f MiB), heap %.1f MiB\n", mib(st2.RSS), mib(st2.PeakRSS), mib(int64(st2.HeapInuse)))
	crowd.close()

	if *hostileN > 0 {
		if err := hostile(ctx, rp, *hostileN, relayed); err != nil {
			return fmt.Errorf("hostile: %w", err)
		}
	}

	// Refused opens.
	wantCode := map[string]websocket.StatusCode{"424": 1014, "400": 1011, "503": 1013, "429": 1013}
	for _, code := range []string{"424", "400", "503", "429"} {
		ep := "refuse-" + code
		c, _, err := websocket.Dial(ctx, "ws://"+rp.addr+"/ws?ep="+ep, nil)
		if err != nil {
			return err
		}
		_, _, err = c.Read(ctx)
		closed := time.Now()
		var ce websocket.CloseError
		errors.As(err, &ce)
		at, _ := m.refusedAt.Load(ep)
		fmt.Printf("refused open %s: close %d %q %v after the refusal\n", code, ce.Code, ce.Reason, closed.Sub(at.(time.Time)).Round(10*time.Microsecond))
		c.CloseNow()
		if ce.Code != wantCode[code] {
			return fmt.Errorf("refused open %s closed with %d, want %d", code, ce.Code, wantCode[code])
		}
	}
	return nil
}

func mib(n int64) float64 { return float64(n) / (1 << 20) }

// echoer sends a frame and waits for its echo.
type echoer interface {
	roundTrip(ctx context.Context, frame []byte) error
	close()
}

type directEcho struct{ s *bidi.Session }

func openDirect(ctx context.Context, c *bidi.Client) (echoer, error) {
	s, err := c.Open(ctx, &bidi.OpenInput{EndpointName: "load", AwaitResponse: true})
	if err != nil {
		return nil, err
	}
	return directEcho{s}, nil
}

func (d directEcho) roundTrip(ctx context.Context, f []byte) error {
	if err := d.s.Send(ctx, bidi.Binary(f)); err != nil {
		return err
	}
	_, err := d.s.Recv(ctx)
	return err
}

func (d directEcho) close() { d.s.Close() }

type wsEcho struct{ c *websocket.Conn }

func openRelayed(ctx context.Context, addr, ep string) (echoer, error) {
	c, _, err := websocket.Dial(ctx, "ws://"+addr+"/ws?ep="+ep, nil)
	if err != nil {
		return nil, err
	}
	return wsEcho{c}, nil
}

func (w wsEcho) roundTrip(ctx context.Context, f []byte) error {
	if err := w.c.Write(ctx, websocket.MessageBinary, f); err != nil {
		return err
	}
	_, _, err := w.c.Read(ctx)
	return err
}

func (w wsEcho) close() { w.c.CloseNow() }

// overhead measures the relay's cost like for like: n clients' paced
// round trips through the relay, and as many on sessions the relay's
// process opens itself (directRoundTrips: the session the relay uses,
// without the WebSocket in front), alternating in rounds that share
// frames, each path first in every other round, so that a host whose
// speed drifts during the run moves both alike. It returns every round
// trip of each, sorted, and the relay's CPU time during the relayed
// rounds.
func overhead(ctx context.Context, rp *relayProc, n, frames, rounds int) (relayed, inRelay []time.Duration, cpu time.Duration, err error) {
	for r, f := range roundFrames(frames, rounds) {
		relay := func() error {
			before, _ := rp.stats(true)
			d, err := roundTrips(ctx, n, f, func(ctx context.Context) (echoer, error) { return openRelayed(ctx, rp.addr, "load") })
			if err != nil {
				return fmt.Errorf("relayed: %w", err)
			}
			after, _ := rp.stats(true)
			cpu += after.CPU - before.CPU
			relayed = append(relayed, d...)
			return nil
		}
		direct := func() error {
			d, err := rp.directRoundTrips(n, f)
			if err != nil {
				return fmt.Errorf("direct, in the relay's process: %w", err)
			}
			inRelay = append(inRelay, d...)
			return nil
		}
		first, second := relay, direct
		if r%2 == 1 {
			first, second = direct, relay
		}
		if err := first(); err != nil {
			return nil, nil, 0, err
		}
		if err := second(); err != nil {
			return nil, nil, 0, err
		}
	}
	slices.Sort(relayed)
	slices.Sort(inRelay)
	return relayed, inRelay, cpu, nil
}

// roundFrames splits frames into rounds (at most one per frame): how
// many frames each round has. Every figure that is compared with
// another is measured in the same rounds (inRounds), each with new
// sessions, so that a p99 is compared with a p99 of the same shape.
func roundFrames(frames, rounds int) []int {
	rounds = max(1, min(rounds, frames))
	fs := make([]int, rounds)
	for r := range fs {
		fs[r] = frames / rounds
		if r < frames%rounds {
			fs[r]++
		}
	}
	return fs
}

// inRounds is roundTrips in the rounds of roundFrames, one after
// another; it returns every round trip, sorted.
func inRounds(ctx context.Context, n, frames, rounds int, open func(context.Context) (echoer, error)) ([]time.Duration, error) {
	var all []time.Duration
	for _, f := range roundFrames(frames, rounds) {
		d, err := roundTrips(ctx, n, f, open)
		if err != nil {
			return nil, err
		}
		all = append(all, d...)
	}
	slices.Sort(all)
	return all, nil
}

// roundTrips runs n clients, each sending a frame every 20 ms and timing
// its echo, and returns every round trip.
func roundTrips(ctx context.Context, n, frames int, open func(context.Context) (echoer, error)) ([]time.Duration, error) {
	var (
		mu   sync.Mutex
		all  []time.Duration
		wg   sync.WaitGroup
		fail atomic.Value
	)
	for range n {
		wg.Go(func() {
			e, err := open(ctx)
			if err != nil {
				fail.Store(err)
				return
			}
			defer e.close()
			f := make([]byte, 640)
			tick := time.NewTicker(20 * time.Millisecond)
			defer tick.Stop()
			local := make([]time.Duration, 0, frames)
			for i := range frames {
				<-tick.C
				binary.LittleEndian.PutUint32(f, uint32(i))
				t0 := time.Now()
				if err := e.roundTrip(ctx, f); err != nil {
					fail.Store(err)
					return
				}
				local = append(local, time.Since(t0))
			}
			mu.Lock()
			all = append(all, local...)
			mu.Unlock()
		})
	}
	wg.Wait()
	if err, _ := fail.Load().(error); err != nil {
		return nil, err
	}
	slices.Sort(all)
	return all, nil
}

func pct(d []time.Duration, p int) time.Duration {
	if len(d) == 0 {
		return 0
	}
	return d[min(len(d)-1, len(d)*p/100)]
}

func ratio(a, b []time.Duration, p int) float64 {
	return float64(pct(a, p)) / float64(cmp.Or(pct(b, p), 1))
}

func report(name string, d []time.Duration) {
	fmt.Printf("%-36s %6d round trips: p50 %v, p90 %v, p99 %v, max %v\n", name, len(d),
		pct(d, 50).Round(time.Microsecond), pct(d, 90).Round(time.Microsecond), pct(d, 99).Round(time.Microsecond), pct(d, 100).Round(time.Microsecond))
}

// crowd is clients that connect, send their frames and never read.
type crowd struct {
	conns   []*websocket.Conn
	started time.Time // when the last client had sent its frames
}

// startCrowd connects n clients that then send send frames each, 16 at
// a time in turn (a round of every client, then the next), and never
// read; the model answers each frame with -idle-echoes copies. Their
// sockets' receive buffers are rcvbuf bytes (0: the system's). On
// loopback the relay's socket buffers grow to a few hundred KiB, so a
// client's replies must outgrow that before the relay's queue fills.
func startCrowd(ctx context.Context, addr string, n, send, rcvbuf int) (*crowd, error) {
	cr := &crowd{}
	f := make([]byte, 640)
	dialer := &net.Dialer{}
	if rcvbuf > 0 {
		dialer.Control = func(_, _ string, rc syscall.RawConn) error {
			var serr error
			err := rc.Control(func(fd uintptr) {
				serr = syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVBUF, rcvbuf)
			})
			return cmp.Or(err, serr)
		}
	}
	opts := &websocket.DialOptions{HTTPClient: &http.Client{Transport: &http.Transport{DialContext: dialer.DialContext}}}
	for i := range n {
		c, _, err := websocket.Dial(ctx, "ws://"+addr+"/ws?ep=flood", opts)
		if err != nil {
			cr.close()
			return nil, fmt.Errorf("client %d: %w", i, err)
		}
		cr.conns = append(cr.conns, c)
	}
	const burst = 16
	for sent := 0; sent < send; sent += burst {
		for _, c := range cr.conns {
			for range min(burst, send-sent) {
				if err := c.Write(ctx, websocket.MessageBinary, f); err != nil {
					cr.close()
					return nil, err
				}
			}
		}
	}
	cr.started = time.Now()
	return cr, nil
}

func (cr *crowd) close() {
	for _, c := range cr.conns {
		c.CloseNow()
	}
}

// loadCert reads the model's certificate for the child's client.
func loadCert(path string) (*tls.Config, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(b) {
		return nil, errors.New("no certificate in " + path)
	}
	return &tls.Config{RootCAs: pool}, nil
}
