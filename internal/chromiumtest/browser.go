package chromiumtest

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os/exec"
	"regexp"
	"sync"
	"testing"

	"github.com/coder/websocket"
)

// A browser is one headless Chromium that a test's page loads share: its
// start (about a second, and over half a CPU-second) is paid once per
// test, not once per page. Each load opens a tab of its own and closes
// it, so that pages do not see each other's state. It is driven over
// the DevTools protocol on a loopback port.
type browser struct {
	host string // host:port of the DevTools HTTP and WebSocket endpoints
}

// browsers holds each running test's browser, started at its first page
// load and killed by the test's cleanup.
var browsers sync.Map // testing.TB -> *browserSlot

// A browserSlot is a test's browser once started; its mutex serialises
// the start, so that pages the test loads from several goroutines share
// one browser.
type browserSlot struct {
	mu sync.Mutex
	b  *browser
}

var devToolsAddr = regexp.MustCompile(`DevTools listening on ws://([^/]+)/`)

// browserFor returns t's browser, starting it at the first call.
func browserFor(t testing.TB) *browser {
	t.Helper()
	v, _ := browsers.LoadOrStore(t, new(browserSlot))
	slot := v.(*browserSlot)
	slot.mu.Lock()
	defer slot.mu.Unlock()
	if slot.b != nil {
		return slot.b
	}
	bin := Path(t)
	run, stop := context.WithCancel(context.Background())
	cmd := exec.CommandContext(run, bin, append(args(t), "--remote-debugging-port=0", "--remote-debugging-address=127.0.0.1", "about:blank")...)
	ownProcessGroup(cmd)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		stop()
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		stop()
		t.Fatalf("starting chromium: %v", err)
	}
	// At the test's end the whole process group is killed before the
	// profile directory (a TempDir registered earlier, so removed later)
	// goes: helpers that outlived the browser kept writing to it.
	t.Cleanup(func() {
		browsers.Delete(t)
		stop() // kills the process group
		cmd.Wait()
		killProcessGroup(cmd) // helpers that outlived it
	})
	found := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			if m := devToolsAddr.FindStringSubmatch(sc.Text()); m != nil {
				found <- m[1]
				break
			}
		}
		close(found)
		io.Copy(io.Discard, stderr) // Chromium's log, until it exits
	}()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	select {
	case host, ok := <-found:
		if !ok {
			t.Fatal("chromium exited without printing its DevTools address")
		}
		slot.b = &browser{host: host}
		return slot.b
	case <-ctx.Done():
		t.Fatalf("chromium did not print its DevTools address within %v", timeout)
		return nil
	}
}

// tab is one page target of a browser and the DevTools connection to it.
// Its methods are called from one goroutine.
type tab struct {
	b      *browser
	id     string
	c      *websocket.Conn
	nextID int
	events []string // methods of the events read while awaiting a reply
}

// openTab opens a blank tab.
func (b *browser) openTab(ctx context.Context) (*tab, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPut, "http://"+b.host+"/json/new?about:blank", nil)
	if err != nil {
		return nil, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	var target struct {
		ID                   string `json:"id"`
		WebSocketDebuggerURL string `json:"webSocketDebuggerUrl"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&target); err != nil {
		return nil, fmt.Errorf("new tab: %s: %w", resp.Status, err)
	}
	c, _, err := websocket.Dial(ctx, target.WebSocketDebuggerURL, nil)
	if err != nil {
		return nil, err
	}
	c.SetReadLimit(64 << 20) // screenshots
	return &tab{b: b, id: target.ID, c: c}, nil
}

// close closes the tab.
func (p *tab) close() {
	p.c.CloseNow()
	resp, err := http.Get("http://" + p.b.host + "/json/close/" + url.PathEscape(p.id))
	if err == nil {
		resp.Body.Close()
	}
}

// call sends a command and decodes its result into result (nil: ignore
// it); the events read meanwhile are kept for await.
func (p *tab) call(ctx context.Context, method string, params, result any) error {
	p.nextID++
	id := p.nextID
	msg, err := json.Marshal(map[string]any{"id": id, "method": method, "params": params})
	if err != nil {
		return err
	}
	if err := p.c.Write(ctx, websocket.MessageText, msg); err != nil {
		return fmt.Errorf("%s: %w", method, err)
	}
	for {
		var m message
		if err := p.read(ctx, &m); err != nil {
			return fmt.Errorf("%s: %w", method, err)
		}
		if m.Method != "" {
			p.events = append(p.events, m.Method)
			continue
		}
		if m.ID != id {
			continue
		}
		if m.Error != nil {
			return fmt.Errorf("%s: %s", method, m.Error.Message)
		}
		if result == nil {
			return nil
		}
		return json.Unmarshal(m.Result, result)
	}
}

// await returns once the event method has arrived (before now, while a
// call awaited its reply, or next).
func (p *tab) await(ctx context.Context, method string) error {
	for i, e := range p.events {
		if e == method {
			p.events = append(p.events[:i], p.events[i+1:]...)
			return nil
		}
	}
	for {
		var m message
		if err := p.read(ctx, &m); err != nil {
			return fmt.Errorf("awaiting %s: %w", method, err)
		}
		if m.Method == method {
			return nil
		}
		if m.Method != "" {
			p.events = append(p.events, m.Method)
		}
	}
}

// message is a reply or an event of the DevTools protocol.
type message struct {
	ID     int             `json:"id"`
	Method string          `json:"method"`
	Result json.RawMessage `json:"result"`
	Error  *struct {
		Message string `json:"message"`
	} `json:"error"`
}

func (p *tab) read(ctx context.Context, m *message) error {
	_, b, err := p.c.Read(ctx)
	if err != nil {
		return err
	}
	return json.Unmarshal(b, m)
}

// load navigates the tab to target and returns once the page has loaded
// and then, with a budget, once budgetMS of virtual time have passed
// (timers fire and fetches complete within it, as with Chromium's
// --virtual-time-budget).
func (p *tab) load(ctx context.Context, target string, budgetMS int64) error {
	if err := p.call(ctx, "Page.enable", map[string]any{}, nil); err != nil {
		return err
	}
	if budgetMS > 0 {
		// Virtual time stands still until the page is there, so that the
		// budget is the page's, not the blank tab's. (The policy's
		// waitForNavigation let the budget run out on the blank tab, and
		// the page never loaded.)
		if err := p.call(ctx, "Emulation.setVirtualTimePolicy", map[string]any{"policy": "pause"}, nil); err != nil {
			return err
		}
	}
	var nav struct {
		ErrorText string `json:"errorText"`
	}
	if err := p.call(ctx, "Page.navigate", map[string]any{"url": target}, &nav); err != nil {
		return err
	}
	if nav.ErrorText != "" {
		return errors.New("navigating: " + nav.ErrorText)
	}
	if budgetMS > 0 {
		err := p.call(ctx, "Emulation.setVirtualTimePolicy", map[string]any{"policy": "pauseIfNetworkFetchesPending", "budget": budgetMS}, nil)
		if err != nil {
			return err
		}
		if err := p.await(ctx, "Emulation.virtualTimeBudgetExpired"); err != nil {
			return err
		}
	}
	return p.await(ctx, "Page.loadEventFired")
}

// eval evaluates the JavaScript expression expr in the tab's page and
// returns its value if it is a string, else "".
func (p *tab) eval(ctx context.Context, expr string) (string, error) {
	var r struct {
		Result struct {
			Value any `json:"value"`
		} `json:"result"`
	}
	if err := p.call(ctx, "Runtime.evaluate", map[string]any{"expression": expr, "returnByValue": true}, &r); err != nil {
		return "", err
	}
	s, _ := r.Result.Value.(string)
	return s, nil
}

// screenshot returns a PNG screenshot of the tab.
func (p *tab) screenshot(ctx context.Context) ([]byte, error) {
	var shot struct {
		Data []byte `json:"data"` // base64 in the JSON
	}
	if err := p.call(ctx, "Page.captureScreenshot", map[string]any{"format": "png"}, &shot); err != nil {
		return nil, err
	}
	if len(shot.Data) < 8 || string(shot.Data[1:4]) != "PNG" {
		return nil, fmt.Errorf("screenshot: not a PNG (%d bytes)", len(shot.Data))
	}
	return shot.Data, nil
}
