package main

import (
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"
)

// statusInterval is how often the status line is redrawn.
const statusInterval = 100 * time.Millisecond

// spinner is drawn while the size of the input is unknown.
var spinner = []string{"⠋", "⠙", "⠹", "⠸", "⠼", "⠴", "⠦", "⠧", "⠇", "⠏"}

// status counts what a session moves and, on a terminal, draws it as a
// live line on standard error. It also serializes every write of the
// program to stdout and stderr, so that output never lands in the middle
// of the status line: writers call [status.write], which erases the line
// first (it is redrawn at the next tick).
//
// Its methods are safe for concurrent use.
type status struct {
	mu     sync.Mutex
	stderr io.Writer
	onTTY  bool // print notes and the summary line
	live   bool // draw the status line
	shared bool // stdout is a terminal too: erase the line before output
	drawn  bool // the line is on screen now
	width  int
	frame  int

	opened, firstByte time.Time
	activity          time.Time // last part sent or received
	connected         bool
	variant           string

	sentParts, sentBytes int64
	recvParts, recvBytes int64
	upTotal              int64 // bytes to upload, 0 if unknown

	// Answers of -o answer, for the wait after the input: messages sent
	// whole, answers complete (or failed), whether one is in progress,
	// and a channel closed (and replaced) at each change of these.
	sentMessages, answersDone int64
	answerOpen                bool
	changed                   chan struct{}

	stop chan struct{}
	done chan struct{}
}

// newStatus returns a status writing to stderr. onTTY prints notes and a
// summary at the end, live also draws the status line, and shared says
// that stdout is a terminal as well.
func newStatus(stderr io.Writer, onTTY, live, shared bool) *status {
	width := terminalWidth(stderr)
	if width <= 0 {
		width, _ = strconv.Atoi(os.Getenv("COLUMNS"))
	}
	if width < 40 {
		width = 80
	}
	return &status{stderr: stderr, onTTY: onTTY, live: onTTY && live, shared: shared, width: width, changed: make(chan struct{})}
}

// start begins drawing, if live, and records the opening time.
func (s *status) start(opened time.Time) {
	s.mu.Lock()
	s.opened = opened
	s.mu.Unlock()
	if !s.live {
		return
	}
	s.stop, s.done = make(chan struct{}), make(chan struct{})
	go func() {
		defer close(s.done)
		t := time.NewTicker(statusInterval)
		defer t.Stop()
		for {
			s.mu.Lock()
			s.draw()
			s.mu.Unlock()
			select {
			case <-t.C:
			case <-s.stop:
				return
			}
		}
	}()
}

// finish stops drawing and, on a terminal, leaves a summary line.
func (s *status) finish() {
	if s.stop != nil {
		close(s.stop)
		<-s.done
		s.stop = nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.onTTY || s.opened.IsZero() {
		return
	}
	s.erase()
	fmt.Fprintf(s.stderr, "bidicat: variant %s: sent %s, received %s, %s, %s in all\n",
		s.variantLabel(), count(s.sentParts, s.sentBytes), count(s.recvParts, s.recvBytes),
		s.ttfbLabel(), round(time.Since(s.opened)))
}

func (s *status) setUpload(total int64) {
	s.mu.Lock()
	s.upTotal = total
	s.mu.Unlock()
}

func (s *status) setConnected(variant string) {
	s.mu.Lock()
	s.connected, s.variant = true, variant
	s.mu.Unlock()
}

func (s *status) sent(n int) {
	s.mu.Lock()
	s.activity = time.Now()
	s.sentParts++
	s.sentBytes += int64(n)
	s.mu.Unlock()
}

// sentMessage counts a message sent whole (its COMPLETE part).
func (s *status) sentMessage() {
	s.mu.Lock()
	s.sentMessages++
	s.notify()
	s.mu.Unlock()
}

// answerBegin records the first event of an answer.
func (s *status) answerBegin() {
	s.mu.Lock()
	s.answerOpen = true
	s.notify()
	s.mu.Unlock()
}

// answerEnd records the end of an answer: complete, failed or cut off.
func (s *status) answerEnd() {
	s.mu.Lock()
	s.answerOpen = false
	s.answersDone++
	s.notify()
	s.mu.Unlock()
}

// answers returns the messages sent whole, the answers ended, whether one
// is in progress, and a channel closed at the next change of these.
func (s *status) answers() (sent, done int64, open bool, changed <-chan struct{}) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.sentMessages, s.answersDone, s.answerOpen, s.changed
}

// notify wakes the waiters of answers; s.mu is held.
func (s *status) notify() {
	close(s.changed)
	s.changed = make(chan struct{})
}

func (s *status) received(n int) {
	s.mu.Lock()
	s.activity = time.Now()
	if s.recvParts == 0 {
		s.firstByte = s.activity
	}
	s.recvParts++
	s.recvBytes += int64(n)
	s.mu.Unlock()
}

// lastActivity returns when the last part was sent or received.
func (s *status) lastActivity() time.Time {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.activity
}

// snapshot returns the counters, for the summary of -json; the times are
// zero for a session that never opened.
func (s *status) snapshot() (sentParts, sentBytes, recvParts, recvBytes int64, ttfb, total time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.firstByte.IsZero() {
		ttfb = s.firstByte.Sub(s.opened)
	}
	if !s.opened.IsZero() {
		total = time.Since(s.opened)
	}
	return s.sentParts, s.sentBytes, s.recvParts, s.recvBytes, ttfb, total
}

// note prints an informational line on a terminal only.
func (s *status) note(format string, args ...any) {
	if !s.onTTY {
		return
	}
	s.write(s.stderr, []byte(fmt.Sprintf("bidicat: "+format+"\n", args...)))
}

// write writes b to w, which is stdout or stderr, erasing the status
// line first if the line and w share a screen.
func (s *status) write(w io.Writer, b []byte) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if w == s.stderr || s.shared {
		s.erase()
	}
	_, err := w.Write(b)
	return err
}

// erase removes the status line from the screen; s.mu is held.
func (s *status) erase() {
	if s.drawn {
		io.WriteString(s.stderr, "\r\x1b[K")
		s.drawn = false
	}
}

// draw redraws the status line; s.mu is held.
func (s *status) draw() {
	var prefix string
	if s.upTotal > 0 {
		prefix = progressBar(s.sentBytes, s.upTotal)
	} else {
		prefix = spinner[s.frame%len(spinner)]
		s.frame++
	}
	ttfb := "ttfb -"
	if !s.firstByte.IsZero() {
		ttfb = "ttfb " + round(s.firstByte.Sub(s.opened))
	}
	// A line as wide as the terminal would wrap (or, in the last column,
	// move the cursor), and \r would then redraw only its last row. So
	// the line leaves the last column free, and shortens field by field
	// rather than cutting one in the middle: part counts go first, then
	// the variant is shortened, then the elapsed time and the ttfb go.
	budget := s.width - 1 - utf8.RuneCountInString(prefix)
	up, down := "↑ "+count(s.sentParts, s.sentBytes), "↓ "+count(s.recvParts, s.recvBytes)
	variant := s.variantLabel()
	tail := []string{ttfb, round(time.Since(s.opened))}
	line := statusLine(variant, up, down, tail)
	if over := utf8.RuneCountInString(line) - budget; over > 0 {
		up, down = "↑ "+size(s.sentBytes), "↓ "+size(s.recvBytes)
		line = statusLine(variant, up, down, tail)
	}
	for over := utf8.RuneCountInString(line) - budget; over > 0; over = utf8.RuneCountInString(line) - budget {
		if v := []rune(variant); len(v) > 8 {
			variant = string(v[:max(7, len(v)-over-1)]) + "…"
		} else if len(tail) > 0 {
			tail = tail[:len(tail)-1]
		} else {
			line = string([]rune(line)[:max(0, budget)]) // a very narrow terminal
			break
		}
		line = statusLine(variant, up, down, tail)
	}
	io.WriteString(s.stderr, "\r\x1b[K"+prefix+line)
	s.drawn = true
}

// statusLine joins the fields of the live line.
func statusLine(variant, up, down string, tail []string) string {
	return " " + strings.Join(append([]string{variant, up, down}, tail...), "  ")
}

func (s *status) variantLabel() string {
	switch {
	case !s.connected:
		return "connecting"
	case s.variant == "":
		return "connected"
	}
	return s.variant
}

func (s *status) ttfbLabel() string {
	if s.firstByte.IsZero() {
		return "no reply yet"
	}
	return "first byte after " + round(s.firstByte.Sub(s.opened))
}

// progressBar draws the share of done in total as a 10-cell bar.
func progressBar(done, total int64) string {
	const cells = 10
	pct := min(100, done*100/total)
	full := int(pct * cells / 100)
	return fmt.Sprintf("[%s%s] %3d%%", strings.Repeat("#", full), strings.Repeat("-", cells-full), pct)
}

// count formats a number of parts and their size.
func count(parts, bytes int64) string {
	unit := "parts"
	if parts == 1 {
		unit = "part"
	}
	return fmt.Sprintf("%d %s %s", parts, unit, size(bytes))
}

// size formats a byte count for people.
func size(n int64) string {
	switch {
	case n < 1<<10:
		return fmt.Sprintf("%d B", n)
	case n < 1<<20:
		return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
}

// round shortens a duration for display.
func round(d time.Duration) string {
	switch {
	case d < time.Millisecond:
		return d.Round(time.Microsecond).String()
	case d < time.Second:
		return d.Round(100 * time.Microsecond).String()
	}
	return d.Round(10 * time.Millisecond).String()
}
