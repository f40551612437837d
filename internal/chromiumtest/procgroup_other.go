//go:build !unix

package chromiumtest

import "os/exec"

// ownProcessGroup does nothing where there are no process groups:
// cancelling the command kills Chromium's own process.
func ownProcessGroup(*exec.Cmd) {}

// killProcessGroup does nothing where there are no process groups.
func killProcessGroup(*exec.Cmd) {}
