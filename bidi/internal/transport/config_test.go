package transport

import (
	"testing"
	"time"
)

// TestConfigDefaults checks that a zero or negative field means its
// default and a positive one is used as given.
func TestConfigDefaults(t *testing.T) {
	var zero Config
	neg := Config{DialTimeout: -1, MaxStreamsPerConn: -1, PingTimeout: -1, StreamWindow: -1, ConnWindow: -1}
	set := Config{DialTimeout: time.Second, MaxStreamsPerConn: 7, PingTimeout: 2 * time.Second, StreamWindow: 1000, ConnWindow: 1 << 17, IdleTimeout: time.Minute}
	for _, c := range []*Config{&zero, &neg} {
		if c.dialTimeout() != DefaultDialTimeout || c.maxStreams() != DefaultMaxStreamsPerConn ||
			c.pingTimeout() != DefaultPingTimeout || c.streamWindow() != DefaultStreamWindow ||
			c.connWindow() != DefaultConnWindow {
			t.Errorf("%+v: got %v %v %v %v %v, want the defaults", *c, c.dialTimeout(), c.maxStreams(), c.pingTimeout(), c.streamWindow(), c.connWindow())
		}
	}
	if set.dialTimeout() != time.Second || set.maxStreams() != 7 || set.pingTimeout() != 2*time.Second ||
		set.streamWindow() != 1000 || set.connWindow() != 1<<17 || set.idleTimeout() != time.Minute {
		t.Errorf("set values not used: %v %v %v %v %v %v", set.dialTimeout(), set.maxStreams(), set.pingTimeout(), set.streamWindow(), set.connWindow(), set.idleTimeout())
	}
	if w := (&Config{ConnWindow: 100}).connWindow(); w != initialWindow {
		t.Errorf("ConnWindow 100: got %d, want %d (HTTP/2's initial window)", w, initialWindow)
	}
	if zero.idleTimeout() != DefaultIdleTimeout || (&Config{IdleTimeout: -1}).idleTimeout() != -1 {
		t.Errorf("idleTimeout: zero %v, want %v; negative is kept (disabled)", zero.idleTimeout(), DefaultIdleTimeout)
	}
}
