package testexit

import (
	"os"
	"os/signal"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"
)

func TestMain(m *testing.M) { Main(m) }

// stacks returns the traces of all goroutines, the caller's first.
func stacks() string {
	buf := make([]byte, 1<<20)
	return string(buf[:runtime.Stack(buf, true)])
}

// TestOthersWaitForSignals checks what the fast exit rests on, against
// the runtime's own traces: os/signal's idle loop is recognised, and a
// goroutine of the tests, blocked or not, is not.
func TestOthersWaitForSignals(t *testing.T) {
	// This test runs in a goroutine of its own; m.Run's waits for it.
	if traces := stacks(); othersWaitForSignals(traces) {
		t.Errorf("every goroutine but this one waits for a signal:\n%s", traces)
	}

	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGUSR1)
	defer signal.Stop(sig)
	// The loop starts in the background; poll until it waits.
	var loops []string
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(time.Millisecond) {
		loops = loops[:0]
		for _, g := range strings.Split(stacks(), "\n\n") {
			if strings.Contains(g, "os/signal.loop(") {
				loops = append(loops, g)
			}
		}
		if len(loops) == 1 && waitingForSignal(loops[0]) {
			break
		}
	}
	if len(loops) != 1 || !waitingForSignal(loops[0]) {
		t.Fatalf("os/signal's loop not recognised: %q", loops)
	}
	if !othersWaitForSignals("goroutine 1 [running]:\nmain.main()\n\n" + loops[0]) {
		t.Error("the caller and os/signal's loop: not alone")
	}
}

func TestEnviron(t *testing.T) {
	t.Setenv("GORACE", "halt_on_error=1")
	var gorace []string
	for _, kv := range Environ() {
		if strings.HasPrefix(kv, "GORACE=") {
			gorace = append(gorace, kv)
		}
	}
	if want := "GORACE=halt_on_error=1 atexit_sleep_ms=0"; len(gorace) != 1 || gorace[0] != want {
		t.Errorf("GORACE settings %q, want %q", gorace, want)
	}
}
