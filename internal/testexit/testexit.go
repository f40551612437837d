// Package testexit ends the module's test binaries without the race
// detector's idle second.
//
// A binary built with -race, exiting with status 0, first sleeps for
// GORACE's atexit_sleep_ms (1 s by default) whenever another goroutine
// exists, which in a Go program is always (the runtime's own). The pause
// gives goroutines still running a chance to report a race before the
// process ends. In a test binary whose tests passed and whose goroutines
// have all ended, nothing is left that could report one, and the pause
// only adds a second to each package of `go test -race ./...`. [Main]
// exits such a binary at once; any other binary exits the ordinary way,
// pause included.
//
// With TESTEXIT_DEBUG set in the environment, the binary says on stderr
// which way it exits and, the ordinary way, which goroutines were left.
package testexit

import (
	"fmt"
	"os"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"
)

// settleTime bounds how long [Exit] waits for the goroutines the tests
// left to end (connection goroutines of a server just closed, for
// example).
const settleTime = 200 * time.Millisecond

// Main runs m's tests and exits with their status, as a test binary's
// generated main does. It is a package's whole TestMain:
//
//	func TestMain(m *testing.M) { testexit.Main(m) }
func Main(m *testing.M) {
	Exit(m.Run())
}

// Exit ends the test binary with code, the status of m.Run. With code 0
// in a -race build that collects no coverage, it waits up to settleTime
// for every other goroutine to end and, once they have, exits without
// the race runtime's pause. Otherwise it calls os.Exit(code). A race
// reported while the tests ran has already made code non-zero (the
// testing package fails the test, or the run, during which it was
// reported).
func Exit(code int) {
	debug := os.Getenv("TESTEXIT_DEBUG") != ""
	if code == 0 && raceEnabled && testing.CoverMode() == "" {
		if settled(settleTime) {
			if debug {
				fmt.Fprintln(os.Stderr, "testexit: no goroutine left; exiting without the race detector's pause")
			}
			syscall.Exit(0)
		}
		if debug {
			buf := make([]byte, 1<<20)
			fmt.Fprintf(os.Stderr, "testexit: goroutines left after %v; exiting the ordinary way:\n%s\n", settleTime, buf[:runtime.Stack(buf, true)])
		}
	}
	os.Exit(code)
}

// settled reports whether, within limit, the calling goroutine became the
// only one that can run code of the tests.
func settled(limit time.Duration) bool {
	deadline := time.Now().Add(limit)
	for !alone() {
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(time.Millisecond)
	}
	return true
}

// alone reports whether every goroutine but the caller is either one of
// the runtime's (which runtime.NumGoroutine does not count) or os/signal's
// loop waiting for a signal, which runs no code of the tests.
func alone() bool {
	if runtime.NumGoroutine() == 1 {
		return true
	}
	buf := make([]byte, 64<<10)
	n := runtime.Stack(buf, true)
	return n < len(buf) && othersWaitForSignals(string(buf[:n]))
}

// othersWaitForSignals reports whether every goroutine of traces, the
// output of runtime.Stack for all goroutines, but the first (the
// caller's) is os/signal's loop waiting for a signal.
func othersWaitForSignals(traces string) bool {
	// Traces are separated by a blank line.
	for _, g := range strings.Split(traces, "\n\n")[1:] {
		if !waitingForSignal(g) {
			return false
		}
	}
	return true
}

// waitingForSignal reports whether g, the trace of one goroutine, is
// os/signal's loop blocked until the process gets a signal: a header
// line, then signal_recv and loop, each followed by its file line.
func waitingForSignal(g string) bool {
	lines := strings.Split(g, "\n")
	return len(lines) >= 4 && strings.HasPrefix(lines[1], "os/signal.signal_recv(") && strings.HasPrefix(lines[3], "os/signal.loop(")
}

// Environ returns the environment for a subprocess that runs the test
// binary again as the program under test: os.Environ() with GORACE's
// atexit_sleep_ms set to 0, added to any GORACE options already set.
// Such a child exits the way its program does, not through [Exit], and
// would otherwise pause for a second at each clean exit; a race it
// reports still makes its exit status 66.
func Environ() []string {
	env := os.Environ()
	opts := "atexit_sleep_ms=0"
	for i, kv := range env {
		if v, ok := strings.CutPrefix(kv, "GORACE="); ok {
			env = append(env[:i], env[i+1:]...)
			opts = v + " " + opts
			break
		}
	}
	return append(env, "GORACE="+opts)
}
