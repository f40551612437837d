package main

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
	"unsafe"
)

// openPTY allocates a pseudo-terminal with the standard library only:
// /dev/ptmx, then TIOCSPTLCK to unlock the slave and TIOCGPTN for its
// number. The terminal is 120 columns wide.
func openPTY(t *testing.T) (master, slave *os.File) {
	t.Helper()
	master, err := os.OpenFile("/dev/ptmx", os.O_RDWR|syscall.O_NOCTTY, 0)
	if err != nil {
		t.Skipf("no pseudo-terminals here: %v", err)
	}
	var n uint32
	err = ioctl(master, syscall.TIOCSPTLCK, unsafe.Pointer(new(int32)))
	if err == nil {
		err = ioctl(master, syscall.TIOCGPTN, unsafe.Pointer(&n))
	}
	if err != nil {
		master.Close()
		t.Fatalf("setting up the pty: %v", err)
	}
	slave, err = os.OpenFile(fmt.Sprintf("/dev/pts/%d", n), os.O_RDWR|syscall.O_NOCTTY, 0)
	if err != nil {
		master.Close()
		t.Fatal(err)
	}
	ws := struct{ rows, cols, x, y uint16 }{rows: 40, cols: 120}
	if err := ioctl(slave, syscall.TIOCSWINSZ, unsafe.Pointer(&ws)); err != nil {
		t.Fatal(err)
	}
	return master, slave
}

func ioctl(f *os.File, req uint, arg unsafe.Pointer) error {
	rc, err := f.SyscallConn()
	if err != nil {
		return err
	}
	var errno syscall.Errno
	err = rc.Control(func(fd uintptr) {
		_, _, errno = syscall.Syscall(syscall.SYS_IOCTL, fd, uintptr(req), uintptr(arg))
	})
	if err != nil {
		return err
	}
	if errno != 0 {
		return errno
	}
	return nil
}

// runOnTerminal runs the binary with its stderr on a pseudo-terminal and
// returns what the terminal showed, and the result.
func runOnTerminal(t *testing.T, stdin string, args ...string) (string, result) {
	t.Helper()
	return onTerminal(t, stdin, false, args...)
}

// onTerminal runs the binary with stderr, and with typed also stdin, on a
// pseudo-terminal. With typed, stdin is typed on the terminal, then
// Ctrl-D.
func onTerminal(t *testing.T, stdin string, typed bool, args ...string) (string, result) {
	t.Helper()
	return onTerminalStreams(t, stdin, typed, false, args...)
}

// onTerminalStreams runs the binary with stderr on a pseudo-terminal,
// stdin too if typed, and stdout too if stdoutToo.
func onTerminalStreams(t *testing.T, stdin string, typed, stdoutToo bool, args ...string) (string, result) {
	t.Helper()
	master, slave := openPTY(t)
	defer master.Close()
	screen := make(chan []byte, 1)
	go func() {
		var b bytes.Buffer
		buf := make([]byte, 4096)
		for {
			n, err := master.Read(buf)
			b.Write(buf[:n])
			if err != nil { // EIO once every slave descriptor is closed
				screen <- b.Bytes()
				return
			}
		}
	}()
	cmd, stdout, stderr := command(t, cleanEnv(t), stdin, args...)
	cmd.Stderr = slave
	if typed {
		cmd.Stdin = slave
	}
	if stdoutToo {
		cmd.Stdout = slave
	}
	start := time.Now()
	err := cmd.Start()
	slave.Close() // the child has its own copy
	if err != nil {
		t.Fatal(err)
	}
	if typed {
		master.Write([]byte(stdin + "\x04"))
	}
	r := finished(t, cmd, cmd.Wait(), start, stdout, stderr)
	select {
	case b := <-screen:
		return string(b), r
	case <-time.After(runTimeout):
		t.Fatal("the terminal never closed")
	}
	return "", r
}

func TestStatusLineOnTerminal(t *testing.T) {
	t.Parallel() // mostly waiting: half a second of paced sending
	audio := filepath.Join(t.TempDir(), "audio.pcm")
	os.WriteFile(audio, make([]byte, 16000), 0o600)
	// 5 chunks at 32000 B/s: about half a second of live status.
	screen, r := runOnTerminal(t, "", "-local", "-binary", audio, "-rate", "32000")
	r.wantCode(t, exitOK)
	if len(r.stdout) != 16000 {
		t.Errorf("stdout has %d bytes of echo, want 16000", len(r.stdout))
	}
	for _, want := range []string{
		"local demo server at https://127.0.0.1:", // a note
		"\r\x1b[K",       // the line is redrawn in place
		"%",              // a progress bar for the file
		"AllTraffic  ↑ ", // live: the invoked variant, then the counts
		"bidicat: variant AllTraffic: sent 5 parts 15.6 KiB, received", // the summary
		"first byte after ",
	} {
		if !strings.Contains(screen, want) {
			t.Errorf("the terminal did not show %q:\n%q", want, screen)
		}
	}
}

func TestStatusLineOnTerminalSpinner(t *testing.T) {
	screen, r := runOnTerminal(t, chatRequest("hi")+"\n", "-local", "-o", "answer")
	r.wantCode(t, exitOK)
	if r.stdout != "You said: hi\n" {
		t.Errorf("stdout %q", r.stdout)
	}
	if !strings.ContainsAny(screen, strings.Join(spinner, "")) || !strings.Contains(screen, "sent 1 part ") {
		t.Errorf("no spinner or summary on the terminal:\n%q", screen)
	}
}

func TestQuietOnTerminal(t *testing.T) {
	screen, r := runOnTerminal(t, "hello\n", "-local", "-q")
	r.wantCode(t, exitOK)
	if screen != "" {
		t.Errorf("-q, yet the terminal showed %q", screen)
	}
	if r.stdout != "hello\n" {
		t.Errorf("stdout %q, want the message and, piped text, a final line end", r.stdout)
	}
}

func TestErrorsOnTerminal(t *testing.T) {
	_, flags := server(t, modelError)
	screen, r := runOnTerminal(t, "hello\n", append(flags, "-endpoint", "e", "-q")...)
	r.wantCode(t, exitHTTP)
	if !strings.Contains(screen, "original status code: 500") || strings.Contains(screen, "\x1b[K") {
		t.Errorf("-q shows the error but no status line; the terminal showed %q", screen)
	}
}

func TestTypedInputGetsSummaryOnly(t *testing.T) {
	screen, r := onTerminal(t, "typed line\n", true, "-local", "-nl")
	r.wantCode(t, exitOK)
	if r.stdout != "typed line\n" {
		t.Errorf("stdout %q", r.stdout)
	}
	if strings.Contains(screen, "\x1b[K") || !strings.Contains(screen, "bidicat: variant AllTraffic: sent 1 part 10 B") {
		t.Errorf("want no live line over the typing, but a summary; the terminal showed %q", screen)
	}
}

// TestRawOnTerminalEndsMessages checks that -o raw on a terminal ends
// each message with a newline, so that messages do not run together, and
// that -nl=false turns it off.
func TestRawOnTerminalEndsMessages(t *testing.T) {
	screen, r := onTerminalStreams(t, "hello\nworld\n", false, true, "-local", "-q")
	r.wantCode(t, exitOK)
	if screen != "hello\r\nworld\r\n" {
		t.Errorf("the terminal showed %q, want one line per message", screen)
	}
	screen, r = onTerminalStreams(t, "hello\nworld\n", false, true, "-local", "-q", "-nl=false")
	r.wantCode(t, exitOK)
	if screen != "helloworld" {
		t.Errorf("-nl=false: the terminal showed %q", screen)
	}
}
