// Package chromiumtest runs headless Chromium for tests of web pages: it
// dumps a page's DOM after its scripts ran, and takes screenshots.
//
// Tests that need it skip when Chromium is not installed, and fail when
// BIDI_REQUIRE_TOOLS=1 (CI installs it).
package chromiumtest

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// lookup returns the path of a Chromium binary, or "".
func lookup() string {
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	return ""
}

// Path returns the path of a Chromium binary, or skips the test (fails
// it when BIDI_REQUIRE_TOOLS=1).
func Path(t testing.TB) string {
	t.Helper()
	if !Available(t) {
		t.Skip("chromium not found: install Debian's chromium to run the browser tests")
	}
	return lookup()
}

// Available reports whether Chromium is installed, for a test that runs
// its browser checks only when it is; it fails the test when it is not
// and BIDI_REQUIRE_TOOLS=1, and logs that the checks are skipped
// otherwise.
func Available(t testing.TB) bool {
	t.Helper()
	if lookup() != "" {
		return true
	}
	if os.Getenv("BIDI_REQUIRE_TOOLS") == "1" {
		t.Fatal("chromium not found (BIDI_REQUIRE_TOOLS=1)")
	}
	t.Log("chromium not found: the browser checks are skipped (install Debian's chromium)")
	return false
}

// timeout bounds one Chromium run (its start is slow on a loaded
// machine); a run that does not finish in time is killed with its
// process group and tried again, up to attempts runs, as headless
// Chromium now and then hangs at exit under load.
const (
	timeout  = 45 * time.Second
	attempts = 3
)

// output runs Chromium with args and returns its standard output.
func output(t testing.TB, bin string, args []string) ([]byte, error) {
	t.Helper()
	var err error
	for attempt := range attempts {
		ctx, cancel := context.WithTimeout(context.Background(), timeout)
		cmd := exec.CommandContext(ctx, bin, args...)
		ownProcessGroup(cmd)
		cmd.WaitDelay = 5 * time.Second
		var stderr strings.Builder
		cmd.Stderr = &stderr
		var out []byte
		out, err = cmd.Output()
		killProcessGroup(cmd)
		timedOut := ctx.Err() != nil
		cancel()
		if err == nil {
			return out, nil
		}
		if !timedOut || attempt == attempts-1 {
			break
		}
		t.Logf("chromium did not finish within %v; trying again", timeout)
	}
	return nil, err
}

// args are the flags of every run: headless, a profile of the test's own,
// no sandbox (CI containers run as root), no GPU.
func args(t testing.TB) []string {
	return []string{"--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
		"--no-first-run", "--user-data-dir=" + t.TempDir()}
}

// DumpDOM loads url, lets its scripts run for budget of virtual time
// (timers and fetches complete within it; 0 dumps the DOM once the page
// has loaded), and returns the DOM as HTML.
func DumpDOM(t testing.TB, url string, budget time.Duration) string {
	t.Helper()
	bin := Path(t)
	a := args(t)
	if budget > 0 {
		a = append(a, "--virtual-time-budget="+strconv.FormatInt(budget.Milliseconds(), 10))
	}
	a = append(a, "--dump-dom", url)
	out, err := output(t, bin, a)
	if err != nil {
		t.Fatalf("chromium --dump-dom %s: %v", url, err)
	}
	return string(out)
}

// Screenshot saves a 1400×900 screenshot of url, after budget of virtual
// time, as name under the test's temp dir, and returns its path.
func Screenshot(t testing.TB, url, name string, budget time.Duration) string {
	t.Helper()
	bin := Path(t)
	path := filepath.Join(t.TempDir(), name)
	a := append(args(t), "--window-size=1400,900", "--virtual-time-budget="+strconv.FormatInt(budget.Milliseconds(), 10), "--screenshot="+path, url)
	if _, err := output(t, bin, a); err != nil {
		t.Fatalf("chromium --screenshot %s: %v", url, err)
	}
	if fi, err := os.Stat(path); err != nil || fi.Size() == 0 {
		t.Fatalf("no screenshot: %v", err)
	}
	return path
}
