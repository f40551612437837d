package chromiumtest

import (
	"context"
	"net"
	"strings"
	"testing"
)

// A page that cannot be fetched fails its load with Chromium's reason,
// not a timeout, and the tab still serves the next page.
func TestLoadRefused(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close() // nothing listens there now
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	p := tabFor(ctx, t, "a refused page")
	defer p.close()
	err = p.load(ctx, "http://"+addr+"/", 0)
	if err == nil || !strings.Contains(err.Error(), "navigating: net::ERR_CONNECTION_REFUSED") {
		t.Fatalf("load = %v, want the navigation's net::ERR_CONNECTION_REFUSED", err)
	}
	if err := p.load(ctx, "data:text/html,<p>next</p>", 0); err != nil {
		t.Fatalf("the next load: %v", err)
	}
	if html, err := p.eval(ctx, "document.body.innerHTML"); err != nil || html != "<p>next</p>" {
		t.Fatalf("the next page: %q, %v", html, err)
	}
}
