//go:build unix

package chromiumtest

import (
	"os/exec"
	"syscall"
)

// ownProcessGroup makes cmd the leader of a process group of its own
// and makes cancelling it kill the whole group: Chromium's renderer and
// helper processes inherit its standard output, so killing Chromium
// alone leaves the pipe open and the wait for its output hanging.
func ownProcessGroup(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
}

// killProcessGroup kills what is left of cmd's process group after it
// exited (helpers that outlive a headless run).
func killProcessGroup(cmd *exec.Cmd) {
	if cmd.Process != nil {
		syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	}
}
