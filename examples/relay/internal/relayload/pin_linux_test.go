package main

import (
	"os"
	"runtime"
	"strconv"
	"testing"

	"golang.org/x/sys/unix"
)

// With -pin, the relay child's threads run only on the CPUs given to it,
// disjoint from the ones this process keeps; a machine with one CPU
// cannot be split.
func TestPinnedRelayChild(t *testing.T) {
	relayCPUs, loadCPUs, err := splitCPUs()
	if runtime.NumCPU() < 2 {
		if err == nil {
			t.Fatalf("one CPU split into %q and %q", relayCPUs, loadCPUs)
		}
		return
	}
	if err != nil {
		t.Fatal(err)
	}
	relaySet, loadSet := cpuSet(t, relayCPUs), cpuSet(t, loadCPUs)
	for i := range len(relaySet) * 64 {
		if relaySet.IsSet(i) && loadSet.IsSet(i) {
			t.Fatalf("CPU %d is in both %q and %q", i, relayCPUs, loadCPUs)
		}
	}
	if relaySet.Count() == 0 || loadSet.Count() == 0 {
		t.Fatalf("split %q / %q leaves a side without a CPU", relayCPUs, loadCPUs)
	}

	srv := startModel(&model{})
	defer srv.Close()
	childCPUs = relayCPUs
	defer func() { childCPUs = "" }()
	rp, err := startRelay(srv)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { rp.cmd.Process.Kill(); rp.cmd.Wait() }()
	if d, err := rp.directRoundTrips(1, 1); err != nil || len(d) != 1 { // the child's threads have worked
		t.Fatalf("one round trip: %v, %v", d, err)
	}
	tasks, err := os.ReadDir("/proc/" + strconv.Itoa(rp.cmd.Process.Pid) + "/task")
	if err != nil {
		t.Fatal(err)
	}
	for _, task := range tasks {
		tid, _ := strconv.Atoi(task.Name())
		var got unix.CPUSet
		if err := unix.SchedGetaffinity(tid, &got); err != nil {
			t.Fatalf("thread %d: %v", tid, err)
		}
		if got != relaySet {
			t.Errorf("relay thread %d may run on %d CPUs, not just %q", tid, got.Count(), relayCPUs)
		}
	}
}

func cpuSet(t *testing.T, list string) unix.CPUSet {
	t.Helper()
	set, err := parseCPUs(list)
	if err != nil {
		t.Fatal(err)
	}
	return set
}

// parseCPUs takes comma-separated CPU numbers and refuses anything else.
func TestParseCPUs(t *testing.T) {
	set, err := parseCPUs("0,2")
	if err != nil || set.Count() != 2 || !set.IsSet(0) || !set.IsSet(2) {
		t.Fatalf(`parseCPUs("0,2") = %d CPUs, %v`, set.Count(), err)
	}
	for _, bad := range []string{"", "x", "-1", "1,,2", "1 ,2", "100000"} {
		if _, err := parseCPUs(bad); err == nil {
			t.Errorf("parseCPUs(%q): no error", bad)
		}
	}
}
