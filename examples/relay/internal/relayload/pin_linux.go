package main

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// splitCPUs divides the CPUs this process may run on in two: the first
// half for the relay, the rest for this process (the clients and the
// model), so that neither's work is queued behind the other's, as when
// the clients are on other machines. It needs two CPUs.
func splitCPUs() (relay, load string, err error) {
	var set unix.CPUSet
	if err := unix.SchedGetaffinity(0, &set); err != nil {
		return "", "", err
	}
	var cpus []string
	for i := range len(set) * 64 {
		if set.IsSet(i) {
			cpus = append(cpus, strconv.Itoa(i))
		}
	}
	if len(cpus) < 2 {
		return "", "", fmt.Errorf("-pin needs two CPUs, this process may use %d", len(cpus))
	}
	half := len(cpus) / 2
	return strings.Join(cpus[:half], ","), strings.Join(cpus[half:], ","), nil
}

// pinProcess restricts every thread of this process to the CPUs in list
// (comma-separated numbers). A thread inherits its creator's CPUs, so
// the threads the runtime starts later are restricted too; one started
// by a thread not yet restricted is caught by the next pass.
func pinProcess(list string) error {
	set, err := parseCPUs(list)
	if err != nil {
		return err
	}
	for range 3 {
		tasks, err := os.ReadDir("/proc/self/task")
		if err != nil {
			return err
		}
		for _, t := range tasks {
			tid, err := strconv.Atoi(t.Name())
			if err != nil {
				continue
			}
			if err := unix.SchedSetaffinity(tid, &set); err != nil && !errors.Is(err, unix.ESRCH) {
				return err
			}
		}
	}
	return nil
}

// parseCPUs parses a comma-separated list of CPU numbers.
func parseCPUs(list string) (unix.CPUSet, error) {
	var set unix.CPUSet
	for f := range strings.SplitSeq(list, ",") {
		n, err := strconv.Atoi(f)
		if err != nil || n < 0 || n >= len(set)*64 {
			return set, fmt.Errorf("CPU list %q: %q is not a CPU number", list, f)
		}
		set.Set(n)
	}
	return set, nil
}
