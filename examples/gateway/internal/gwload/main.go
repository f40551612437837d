// Command gwload measures the local gateway (examples/gateway) as a
// hostile local client and a busy one would use it: memory (RSS of the
// gateway process) and the round-trip latency of a few probe sessions,
// unloaded, under many concurrent echo sessions and under an attack of
// streams each holding an unfinished large event; then, with -attacks,
// it runs the attacks of issue 22 and says for each whether the gateway
// held (slowloris, idle HTTP/2 connections, descriptor exhaustion,
// quadratic headers, a client that never reads under the age cap,
// forbidden close codes).
//
// It runs the gateway binary as a child process, on loopback, in front
// of the sample container (in this process), and prints one line of
// key=value pairs per phase. Everything is bounded in count and time.
//
//	go build -o /tmp/gateway ./examples/gateway
//	go run ./examples/gateway/internal/gwload -gateway /tmp/gateway
//	go run ./examples/gateway/internal/gwload -gateway /tmp/gateway -attacks
//
// Flags after -- go to the gateway (for instance -- -max-event-size -1,
// to see the attack without the cap).
package main

import (
	"bufio"
	"context"
	"crypto/tls"
	"crypto/x509"
	"flag"
	"fmt"
	"io"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"

	"github.com/sagemaker-bidi/sagemaker-bidi/bidi"
	"github.com/sagemaker-bidi/sagemaker-bidi/examples/container/model"
)

var (
	fGateway    = flag.String("gateway", "", "the gateway binary (go build -o /tmp/gateway ./examples/gateway)")
	fSessions   = flag.Int("sessions", 1000, "concurrent echo sessions of the load phase")
	fProbes     = flag.Int("probes", 8, "probe sessions whose round trips are timed")
	fPhase      = flag.Duration("phase", 5*time.Second, "length of each measured phase")
	fAttack     = flag.Int("attack", 40, "streams of the large-event attack")
	fAttackSize = flag.Int("attack-size", 23<<20, "size each attack stream announces for its event, in bytes")
	fAttacks    = flag.Bool("attacks", false, "run the attack suite instead of the load phases")
	fOnly       = flag.String("only", "", "with -attacks: the comma-separated attacks to run (default all)")
	fTimeout    = flag.Duration("timeout", 5*time.Minute, "exit with status 3 after this long")
)

const (
	accessKey = "AKIDGWLOAD"
	secretKey = "gwload-secret-key"
	region    = "us-west-2"
)

func main() {
	flag.Parse()
	if *fGateway == "" {
		fatalf("-gateway is required (go build -o /tmp/gateway ./examples/gateway)")
	}
	time.AfterFunc(*fTimeout, func() {
		fmt.Fprintln(os.Stderr, "gwload: timed out")
		os.Exit(3)
	})
	if *fAttacks {
		attacks(flag.Args())
		return
	}
	load(flag.Args())
}

// gateway is a running gateway child process.
type gateway struct {
	cmd  *exec.Cmd
	url  string
	pem  []byte
	logs *logTail
}

// startGateway runs the gateway binary on a loopback port in front of
// container with args added, and waits until it listens.
func startGateway(container string, wrap []string, args ...string) *gateway {
	dir, err := os.MkdirTemp("", "gwload")
	if err != nil {
		fatalf("%v", err)
	}
	certFile := filepath.Join(dir, "gateway.pem")
	argv := append([]string{*fGateway, "-addr", "127.0.0.1:0", "-container", container, "-cert-out", certFile}, args...)
	argv = append(wrap, argv...)
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Env = append(os.Environ(), "AWS_ACCESS_KEY_ID="+accessKey, "AWS_SECRET_ACCESS_KEY="+secretKey)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		fatalf("%v", err)
	}
	if err := cmd.Start(); err != nil {
		fatalf("starting the gateway: %v", err)
	}
	g := &gateway{cmd: cmd, logs: newLogTail(stderr)}
	m, ok := g.logs.wait(regexp.MustCompile(`msg=listening url=(\S+)`), 20*time.Second)
	if !ok {
		cmd.Process.Kill()
		fatalf("the gateway did not start:\n%s", g.logs)
	}
	g.url = m[1]
	if g.pem, err = os.ReadFile(certFile); err != nil {
		fatalf("%v", err)
	}
	return g
}

// stop ends the gateway (SIGKILL: the measurements are over).
func (g *gateway) stop() {
	g.cmd.Process.Kill()
	g.cmd.Wait()
}

// rss returns the gateway's resident set and its peak so far, in bytes.
func (g *gateway) rss() (cur, peak int64) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", g.cmd.Process.Pid))
	if err != nil {
		return -1, -1
	}
	for line := range strings.Lines(string(b)) {
		f := strings.Fields(line)
		if len(f) < 2 {
			continue
		}
		n, _ := strconv.ParseInt(f[1], 10, 64)
		switch f[0] {
		case "VmRSS:":
			cur = n << 10
		case "VmHWM:":
			peak = n << 10
		}
	}
	return cur, peak
}

// client returns a bidi client for g that trusts its certificate.
func (g *gateway) client(maxPart int) *bidi.Client {
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(g.pem)
	cfg := aws.Config{Region: region, Credentials: credentials.NewStaticCredentialsProvider(accessKey, secretKey, "")}
	return bidi.NewFromConfig(cfg, func(o *bidi.Options) {
		o.BaseEndpoint = aws.String(g.url)
		o.TLSConfig = &tls.Config{RootCAs: pool}
		o.RetryMaxAttempts = 1
		o.MaxPartSize = maxPart
	})
}

func (g *gateway) tlsConfig() *tls.Config {
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(g.pem)
	return &tls.Config{RootCAs: pool, NextProtos: []string{"h2"}}
}

// sampleContainer serves the sample container (echo mode) on loopback.
func sampleContainer() (url string, stop func()) {
	h := model.NewHandler(model.Options{Defaults: "mode=echo", ReadLimit: 64 << 20})
	srv := httptest.NewServer(h)
	return "ws://" + srv.Listener.Addr().String(), func() { srv.Close(); h.Close() }
}

// logTail keeps the gateway's log lines (the last 10,000) for waits and
// failure reports.
type logTail struct {
	mu    sync.Mutex
	lines []string
	grew  chan struct{} // closed and replaced when a line arrives
}

func newLogTail(r io.Reader) *logTail {
	l := &logTail{grew: make(chan struct{})}
	go func() {
		sc := bufio.NewScanner(r)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		for sc.Scan() {
			l.mu.Lock()
			l.lines = append(l.lines, sc.Text())
			if len(l.lines) > 10000 {
				l.lines = slices.Delete(l.lines, 0, 5000)
			}
			close(l.grew)
			l.grew = make(chan struct{})
			l.mu.Unlock()
		}
	}()
	return l
}

// wait returns the submatches of the first line matching re, waiting up
// to d for it.
func (l *logTail) wait(re *regexp.Regexp, d time.Duration) ([]string, bool) {
	deadline := time.After(d)
	for {
		l.mu.Lock()
		for _, line := range l.lines {
			if m := re.FindStringSubmatch(line); m != nil {
				l.mu.Unlock()
				return m, true
			}
		}
		grew := l.grew
		l.mu.Unlock()
		select {
		case <-grew:
		case <-deadline:
			return nil, false
		}
	}
}

func (l *logTail) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return strings.Join(l.lines, "\n")
}

// line prints one result line.
func line(kv ...any) {
	var sb strings.Builder
	sb.WriteString("gwload")
	for i := 0; i+1 < len(kv); i += 2 {
		v := kv[i+1]
		switch x := v.(type) {
		case time.Duration:
			v = fmt.Sprintf("%.2fms", float64(x)/float64(time.Millisecond))
		case float64:
			v = fmt.Sprintf("%.2f", x)
		}
		fmt.Fprintf(&sb, " %v=%v", kv[i], v)
	}
	fmt.Println(sb.String())
}

func mib(n int64) string { return fmt.Sprintf("%.1fMiB", float64(n)/(1<<20)) }

func fatalf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "gwload: "+format+"\n", args...)
	os.Exit(1)
}

func ctxFor(d time.Duration) (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.Background(), d)
}
