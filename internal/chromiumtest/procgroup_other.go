//go:build !unix

package chromiumtest

import "os/exec"

// ownProcessGroup does nothing where there are no process groups: the
// wait delay alone bounds a run.
func ownProcessGroup(*exec.Cmd) {}

// killProcessGroup does nothing where there are no process groups.
func killProcessGroup(*exec.Cmd) {}
