package main

import (
	"os"
	"syscall"
	"unsafe"
)

// terminalWidth returns the number of columns of the terminal v, or 0.
func terminalWidth(v any) int {
	f, ok := v.(*os.File)
	if !ok || f == nil {
		return 0
	}
	var ws struct{ rows, cols, x, y uint16 }
	_, _, errno := syscall.Syscall(syscall.SYS_IOCTL, f.Fd(), syscall.TIOCGWINSZ, uintptr(unsafe.Pointer(&ws)))
	if errno != 0 {
		return 0
	}
	return int(ws.cols)
}
