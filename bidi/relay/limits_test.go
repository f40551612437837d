package relay

import (
	"testing"
	"time"

	"github.com/coder/websocket"
)

// A client that does not answer pings (this one never reads, and
// coder/websocket answers only while reading) is dropped.
func TestPingTimeout(t *testing.T) {
	aborted := make(chan string, 1)
	testHookAbort = func(kind string) { aborted <- kind }
	defer func() { testHookAbort = nil }()
	e := newEnv(t, nil, &Options{PingInterval: 10 * time.Millisecond, PingTimeout: 10 * time.Millisecond}, nil)
	c := e.dial(t)
	if kind := <-aborted; kind != KindPingTimeout {
		t.Fatalf("aborted with %s", kind)
	}
	// The connection is gone, without a close frame.
	_, _, err := c.Read(t.Context())
	if err == nil || websocket.CloseStatus(err) != -1 {
		t.Fatalf("read after the ping timeout: %v", err)
	}
}

// MaxLifetime ends a call gracefully with 1001 after its replies.
func TestMaxLifetime(t *testing.T) {
	e := newEnv(t, nil, &Options{MaxLifetime: 30 * time.Millisecond, FinishQuiet: time.Millisecond}, nil)
	c := e.dial(t)
	_, err := readUntilClose(t, c)
	wantClose(t, err, websocket.StatusGoingAway, "lifetime limit reached")
}

// A data message after the end of input is a protocol violation.
func TestMessageAfterEndOfInput(t *testing.T) {
	e := newEnv(t, nil, &Options{EndOfInput: endOfInput, FinishQuiet: time.Hour}, nil)
	c := e.dial(t)
	c.Write(t.Context(), websocket.MessageText, []byte("end"))
	c.Write(t.Context(), websocket.MessageText, []byte("more"))
	_, err := readUntilClose(t, c)
	wantClose(t, err, websocket.StatusPolicyViolation, "message after end of input")
}
