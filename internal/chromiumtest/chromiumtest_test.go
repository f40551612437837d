package chromiumtest_test

import (
	"bytes"
	"image/png"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sagemaker-bidi/sagemaker-bidi/internal/chromiumtest"
)

// page sets its heading 300 ms (of the page's time) after it loaded, and
// counts its loads.
func page(t *testing.T) (url string, loads *atomic.Int32) {
	loads = new(atomic.Int32)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/" {
			http.NotFound(w, r)
			return
		}
		loads.Add(1)
		w.Write([]byte(`<html><body><h1 id="x">loaded</h1><script>setTimeout(() => { document.getElementById("x").textContent = "timer fired" }, 300)</script></body></html>`))
	}))
	t.Cleanup(srv.Close)
	return srv.URL + "/", loads
}

// Without a budget the DOM is dumped once the page has loaded, before
// its timer; with one, after the page's timers within it fired. Each
// call loads the page in a tab of its own, in the test's one browser.
func TestDumpDOM(t *testing.T) {
	url, loads := page(t)
	if dom := chromiumtest.DumpDOM(t, url, 0); !strings.Contains(dom, `<h1 id="x">loaded</h1>`) {
		t.Errorf("without a budget: %s", dom)
	}
	if dom := chromiumtest.DumpDOM(t, url, time.Second); !strings.Contains(dom, `<h1 id="x">timer fired</h1>`) {
		t.Errorf("with 1 s of virtual time: %s", dom)
	}
	if dom := chromiumtest.DumpDOM(t, url, 100*time.Millisecond); !strings.Contains(dom, `<h1 id="x">loaded</h1>`) {
		t.Errorf("with 100 ms of virtual time, before the 300 ms timer: %s", dom)
	}
	if n := loads.Load(); n != 3 {
		t.Errorf("the page was loaded %d times, want 3", n)
	}
}

// A screenshot is a 1400×900 PNG taken after the budget.
func TestScreenshot(t *testing.T) {
	url, _ := page(t)
	path := chromiumtest.Screenshot(t, url, "page.png", 500*time.Millisecond)
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	img, err := png.Decode(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	if s := img.Bounds().Size(); s.X != 1400 || s.Y != 900 {
		t.Errorf("screenshot of %v, want 1400×900", s)
	}
}
