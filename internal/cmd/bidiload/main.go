// Command bidiload is the load program of issue 8: it measures package
// bidi's HTTP/2 engine (the transport of bidi.Client) against a raw
// HTTP/2 echo through net/http, with the server in a separate process.
// (Issue 8 also compared the net/http transport the engine replaced, as
// -engine nethttp; that back-end was removed from bidi with issue 18.)
//
// Start a server, then run client modes against it:
//
//	bidiload server -dir /tmp/bidiload -streams 100000
//	bidiload idle  -engine ours -n 1000 -url $(cat /tmp/bidiload/echo.url) -cafile /tmp/bidiload/ca.pem
//
// The server writes its URLs (echo.url, discard.url, event.url, raw.url)
// and its certificate (ca.pem) to -dir and prints them on one line. Every
// client mode prints one line of key=value pairs, starting with
// "bidiload mode=...", and exits by itself: loops are bounded in count
// and time, and a watchdog (-timeout) writes a goroutine dump and exits
// with status 3 if the mode hangs. run.sh runs every mode, both engines.
//
// Modes:
//
//	server  biditest echo and discarding servers, a minimal event-stream
//	        echo and a raw HTTP/2 echo (the floor), one certificate
//	probe   prints the SETTINGS the server advertises
//	idle    N idle sessions: heap in use and goroutines per session
//	dials   N sessions opened at once: TCP/TLS dials
//	audio   S sessions, 640 B every 20 ms each, echoed: CPU and latency
//	large   one session, 16 MiB messages: MB/s and CPU vs SHA-256
//	small   256 B streaming: msgs/s and client µs per message
package main

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"flag"
	"fmt"
	"math"
	"net"
	"os"
	"os/signal"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"slices"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"

	"github.com/sagemaker-bidi/sagemaker-bidi/bidi"
)

// flags shared by the client modes.
var (
	fEngine     = flag.String("engine", "ours", "transport: ours (bidi's engine), raw (small mode only: plain HTTP/2 echo through net/http)")
	fURL        = flag.String("url", "", "server URL (a biditest server's URL, or frame.url: echoserver.FrameEcho; event or raw echo for mode small)")
	fCAFile     = flag.String("cafile", "", "PEM file of the server certificate to trust")
	fN          = flag.Int("n", 1000, "sessions (idle, dials, audio) or messages per session (large, small)")
	fDuration   = flag.Duration("duration", 10*time.Second, "length of the measurement (audio, small, large: an upper bound)")
	fTimeout    = flag.Duration("timeout", 5*time.Minute, "watchdog: dump goroutines and exit 3 after this long")
	fCap        = flag.Int("cap", 0, "Options.MaxStreamsPerConnection (ours); 0 means the default")
	fPar        = flag.Int("par", 100, "concurrent Opens while opening sessions (idle, audio)")
	fBig        = flag.Int("big", 0, "idle: sessions that send (and get back) one -bigsize message before the measurement")
	fBigSize    = flag.Int("bigsize", 1<<20, "idle: size of the big messages")
	fSize       = flag.Int("size", 0, "message size (large: 16 MiB, small: 256 B, audio: 640 B by default)")
	fPartSize   = flag.Int("partsize", 0, "Options.MaxPartSize; 0 means the default")
	fReuse      = flag.Bool("reuse", false, "large: receive into buffers the program reuses (Options.MessageBuffer), each given back once its echo is checked")
	fEcho       = flag.Bool("echo", true, "large: the server echoes (false: -url is a discarding server)")
	fProcs      = flag.Int("procs", 0, "GOMAXPROCS of the client (0: unchanged)")
	fSessions   = flag.Int("sessions", 1, "small: parallel sessions")
	fClients    = flag.Int("clients", 1, "small: clients (connections) the sessions are spread over")
	fEffCap     = flag.Int("effcap", 0, "dials: streams per connection that decide (min of client cap and server limit), for the target")
	fCPUProfile = flag.String("cpuprofile", "", "write a CPU profile of the measured part to this file")
	fMemProfile = flag.String("memprofile", "", "idle, large: write a heap profile at the measurement (large: at its end) to this file")
	fDumpDir    = flag.String("dumpdir", os.TempDir(), "where the watchdog writes goroutine dumps")
	fLabel      = flag.String("label", "", "free text added to the result line")
	fRecv       = flag.String("recv", "message", "audio: how echoes are read: message (Session.Recv, a new buffer per message) or part (Session.RecvPart, the session's buffer reused)")
)

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: bidiload server|probe|idle|dials|audio|large|small [flags]")
		os.Exit(2)
	}
	mode := os.Args[1]
	flag.CommandLine.Parse(os.Args[2:])
	if *fProcs > 0 {
		runtime.GOMAXPROCS(*fProcs)
	}
	if mode == "server" {
		serve()
		return
	}
	watchdog(mode)
	res := &result{}
	res.add("mode", mode)
	res.add("engine", *fEngine)
	switch mode {
	case "probe":
		probe(res)
	case "idle":
		idle(res)
	case "dials":
		dials(res)
	case "audio":
		audio(res)
	case "large":
		large(res)
	case "small":
		small(res)
	default:
		fatalf("unknown mode %q", mode)
	}
	res.add("gomaxprocs", runtime.GOMAXPROCS(0))
	res.add("load1", loadavg())
	if *fLabel != "" {
		res.add("label", *fLabel)
	}
	fmt.Println(res.String())
}

// result is the one line a client mode prints.
type result struct{ kv []string }

func (r *result) add(k string, v any) {
	var s string
	switch v := v.(type) {
	case float64:
		switch {
		case v == math.Trunc(v) && math.Abs(v) < 1e15:
			s = fmt.Sprintf("%.0f", v)
		case math.Abs(v) >= 100:
			s = fmt.Sprintf("%.1f", v)
		default:
			s = fmt.Sprintf("%.4g", v)
		}
	case time.Duration:
		s = fmt.Sprintf("%.3f", float64(v)/float64(time.Millisecond)) // ms
		k += "_ms"
	default:
		s = strings.ReplaceAll(fmt.Sprint(v), " ", "_")
	}
	r.kv = append(r.kv, k+"="+s)
}

func (r *result) String() string { return "bidiload " + strings.Join(r.kv, " ") }

func fatalf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "bidiload: "+format+"\n", args...)
	os.Exit(1)
}

// watchdog dumps every goroutine and exits if the mode runs longer than
// -timeout, or on SIGQUIT-like SIGUSR1 (dump only).
func watchdog(mode string) {
	dump := func(why string) string {
		name := filepath.Join(*fDumpDir, fmt.Sprintf("bidiload-%s-%s-%d.goroutines.txt", mode, *fEngine, os.Getpid()))
		f, err := os.Create(name)
		if err != nil {
			fmt.Fprintln(os.Stderr, "bidiload: dump:", err)
			return ""
		}
		fmt.Fprintf(f, "# %s\n", why)
		pprof.Lookup("goroutine").WriteTo(f, 2)
		f.Close()
		return name
	}
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGUSR1)
	go func() {
		for range sig {
			fmt.Fprintln(os.Stderr, "bidiload: goroutine dump in", dump("SIGUSR1"))
		}
	}()
	time.AfterFunc(*fTimeout, func() {
		name := dump(fmt.Sprintf("watchdog: mode %s still running after %v", mode, *fTimeout))
		fmt.Printf("bidiload mode=%s engine=%s error=hang dump=%s\n", mode, *fEngine, name)
		os.Exit(3)
	})
}

// rootPool reads -cafile.
func rootPool() *x509.CertPool {
	if *fCAFile == "" {
		fatalf("-cafile is required")
	}
	pem, err := os.ReadFile(*fCAFile)
	if err != nil {
		fatalf("%v", err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pem) {
		fatalf("no certificate in %s", *fCAFile)
	}
	return pool
}

// dialCounter counts the TCP connections the client dials (each is one
// TLS handshake).
type dialCounter struct {
	n, failed atomic.Int64
	d         net.Dialer
}

func (c *dialCounter) DialContext(ctx context.Context, network, addr string) (net.Conn, error) {
	c.n.Add(1)
	conn, err := c.d.DialContext(ctx, network, addr)
	if err != nil {
		c.failed.Add(1)
	}
	return conn, err
}

// newClient returns a bidi client for -url on the engine named by
// -engine, dialing through dc.
func newClient(dc *dialCounter, optFns ...func(*bidi.Options)) *bidi.Client {
	if *fURL == "" {
		fatalf("-url is required")
	}
	tlsConfig := &tls.Config{RootCAs: rootPool()}
	return bidi.NewFromConfig(aws.Config{}, func(o *bidi.Options) {
		o.Region = loadRegion
		o.Credentials = credentials.StaticCredentialsProvider{Value: loadCredentials}
		o.BaseEndpoint = aws.String(*fURL)
		o.RetryMaxAttempts = 1
		if *fPartSize > 0 {
			o.MaxPartSize = *fPartSize
		}
		switch *fEngine {
		case "ours":
			o.TLSConfig = tlsConfig
			o.DialContext = dc.DialContext
			o.MaxStreamsPerConnection = *fCap
		default:
			fatalf("engine %q is not a bidi engine (ours)", *fEngine)
		}
		for _, fn := range optFns {
			fn(o)
		}
	})
}

var openInput = &bidi.OpenInput{EndpointName: "bidiload"}

// cpuTime is the process's user+system CPU time.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// startProfile starts the -cpuprofile; the returned function stops it.
func startProfile() func() {
	if *fCPUProfile == "" {
		return func() {}
	}
	f, err := os.Create(*fCPUProfile)
	if err != nil {
		fatalf("%v", err)
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		fatalf("%v", err)
	}
	return func() {
		pprof.StopCPUProfile()
		f.Close()
	}
}

// rssKiB is the process's resident set (VmRSS) in KiB.
func rssKiB() int64 {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for line := range strings.Lines(string(b)) {
		if rest, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			var n int64
			fmt.Sscan(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "kB")), &n)
			return n
		}
	}
	return 0
}

// syscalls returns the read and write system calls of the process so far
// (syscr, syscw in /proc/self/io).
func syscalls() (r, w int64) {
	b, err := os.ReadFile("/proc/self/io")
	if err != nil {
		return 0, 0
	}
	for line := range strings.Lines(string(b)) {
		var n int64
		if _, err := fmt.Sscanf(line, "syscr: %d", &n); err == nil {
			r = n
		} else if _, err := fmt.Sscanf(line, "syscw: %d", &n); err == nil {
			w = n
		}
	}
	return r, w
}

func loadavg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "?"
	}
	f := strings.Fields(string(b))
	if len(f) == 0 {
		return "?"
	}
	return f[0]
}

// percentile returns the q-quantile of sorted durations.
func percentile(sorted []time.Duration, q float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	i := int(math.Ceil(q*float64(len(sorted)))) - 1
	return sorted[max(0, min(i, len(sorted)-1))]
}

func sortDurations(d []time.Duration) { slices.Sort(d) }
