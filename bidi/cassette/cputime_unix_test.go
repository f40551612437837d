//go:build unix

package cassette_test

import (
	"syscall"
	"time"
)

// processCPU returns the CPU time (user and system) the process has
// used, or 0 where it cannot tell.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
