// Package chromiumtest runs headless Chromium for tests of web pages: it
// dumps a page's DOM after its scripts ran, takes screenshots, and opens
// pages for a test to drive (Open). A test's pages share one browser.
//
// Tests that need it skip when Chromium is not installed, and fail when
// BIDI_REQUIRE_TOOLS=1 (CI installs it).
package chromiumtest

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
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

// timeout bounds Chromium's start and each page load (a start is slow
// on a loaded machine).
const timeout = 45 * time.Second

// args are the flags of the browser: headless, a profile of the test's
// own, no sandbox (CI containers run as root), no GPU, no sound.
func args(t testing.TB) []string {
	return []string{"--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
		"--no-first-run", "--disable-extensions", "--mute-audio", "--user-data-dir=" + t.TempDir()}
}

// DumpDOM loads url in a new tab of the test's browser (started at the
// test's first page, stopped when it ends), lets its scripts run for
// budget of virtual time (timers and fetches complete within it; 0 dumps
// the DOM once the page has loaded), and returns the DOM as HTML.
func DumpDOM(t testing.TB, url string, budget time.Duration) string {
	t.Helper()
	var html string
	withTab(t, "dumping the DOM of "+url, func(ctx context.Context, p *tab) error {
		if err := p.load(ctx, url, budget.Milliseconds()); err != nil {
			return err
		}
		var err error
		html, err = p.eval(ctx, "document.documentElement.outerHTML")
		return err
	})
	return html
}

// Screenshot saves a 1400×900 screenshot of url, after budget of virtual
// time, as name under the test's temp dir, and returns its path. It uses
// the test's browser, as DumpDOM does.
func Screenshot(t testing.TB, url, name string, budget time.Duration) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), name)
	withTab(t, "taking a screenshot of "+url, func(ctx context.Context, p *tab) error {
		err := p.call(ctx, "Emulation.setDeviceMetricsOverride", map[string]any{"width": 1400, "height": 900, "deviceScaleFactor": 1, "mobile": false}, nil)
		if err != nil {
			return err
		}
		if err := p.load(ctx, url, budget.Milliseconds()); err != nil {
			return err
		}
		if budget > 0 {
			// Virtual time stood still once the budget ran out, and with
			// it, now and then, the frame a screenshot waits for: the
			// capture hung on a loaded machine.
			if err := p.call(ctx, "Emulation.setVirtualTimePolicy", map[string]any{"policy": "advance"}, nil); err != nil {
				return err
			}
		}
		png, err := p.screenshot(ctx)
		if err != nil {
			return err
		}
		return os.WriteFile(path, png, 0o644)
	})
	return path
}

// A Page is a page loaded in a tab of the test's browser, for a test
// that drives it: it evaluates scripts in it and takes screenshots of it
// while the page runs. Its methods are called from one goroutine at a
// time.
type Page struct {
	t *tab
}

// Open loads url in a new tab of the test's browser and returns it once
// the page has loaded. The tab is closed when the test ends.
func Open(t testing.TB, url string) *Page {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	p := tabFor(ctx, t, "loading "+url)
	t.Cleanup(p.close)
	if err := p.load(ctx, url, 0); err != nil {
		t.Fatalf("chromium: loading %s: %v", url, err)
	}
	return &Page{t: p}
}

// Eval evaluates the JavaScript expression expr in the page and returns
// its value if it is a string, else "".
func (p *Page) Eval(ctx context.Context, expr string) (string, error) {
	return p.t.eval(ctx, expr)
}

// Screenshot returns a PNG screenshot of the page as it is now.
func (p *Page) Screenshot(ctx context.Context) ([]byte, error) {
	return p.t.screenshot(ctx)
}

// withTab runs f on a new tab of t's browser, within the timeout, and
// fails t with what it was doing if f fails.
func withTab(t testing.TB, doing string, f func(context.Context, *tab) error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	p := tabFor(ctx, t, doing)
	defer p.close()
	if err := f(ctx, p); err != nil {
		t.Fatalf("chromium: %s: %v", doing, err)
	}
}

// tabFor opens a new tab of t's browser, starting the browser if needed,
// and fails t, saying what the tab was for, if it cannot.
func tabFor(ctx context.Context, t testing.TB, doing string) *tab {
	t.Helper()
	p, err := browserFor(t).openTab(ctx)
	if err != nil {
		t.Fatalf("chromium: opening a tab for %s: %v", doing, err)
	}
	return p
}
