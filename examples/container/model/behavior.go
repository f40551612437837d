package model

import (
	"fmt"
	"maps"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/coder/websocket"
)

// Behaviour modes selected with the mode query parameter.
const (
	modeChat = "chat" // text: OpenAI chat request → SSE stream, other text → echo
	modeEcho = "echo" // text and binary are echoed
)

// never marks a message-count trigger that is switched off.
const never = -1

// behavior is what one WebSocket session does. It is decoded from
// [Options.Defaults] and then from the upgrade request's query string, so
// each connection can choose its own behaviour (the gateway forwards
// X-Amzn-SageMaker-Model-Query-String as that query string).
type behavior struct {
	mode         string
	fragment     int           // bytes per frame of a fragmented reply
	fragmentText bool          // fragment text replies too, not only binary
	split        int           // re-cut the chat's SSE bytes into messages of this size; 0: one event per message
	delay        time.Duration // pause between streamed chat messages
	hello        bool          // send a JSON hello (path, query) first
	refuse       int           // refuse the upgrade with this HTTP status; 0: accept
	closeAfter   int           // close once this many messages were sent; never: off
	closeCode    websocket.StatusCode
	closeReason  string
	abrupt       bool // close_after drops the TCP connection without a close frame
	garbageAfter int  // send an invalid UTF-8 text message once this many were sent
	deafAfter    int  // stop reading after this many messages were received
	hold         time.Duration
	noPong       bool // keep reading but never answer pings
}

func defaultBehavior() behavior {
	return behavior{
		mode:         modeChat,
		fragment:     1024,
		closeAfter:   never,
		closeCode:    websocket.StatusInternalError,
		closeReason:  "close_after reached",
		garbageAfter: never,
		deafAfter:    never,
		hold:         10 * time.Minute,
	}
}

// param is one query parameter of the behaviour grammar.
type param struct {
	name string
	help string
	set  func(b *behavior, v string) error
}

// params lists the query parameters in the order -h prints them.
var params = []param{
	{"mode", "chat (default): a JSON chat request streams an SSE answer, other text is echoed; echo: echo every text message", func(b *behavior, v string) error {
		if v != modeChat && v != modeEcho {
			return fmt.Errorf("want %s or %s", modeChat, modeEcho)
		}
		b.mode = v
		return nil
	}},
	{"fragment", "bytes per frame when a reply is sent as a fragmented message (default 1024); binary echoes are always fragmented", func(b *behavior, v string) error {
		return setInt(&b.fragment, v, 1)
	}},
	{"fragment_text", "true: text replies are fragmented like binary ones", func(b *behavior, v string) error {
		return setBool(&b.fragmentText, v)
	}},
	{"split", "N>0: re-cut the chat's SSE bytes into text messages of N bytes, ignoring event boundaries (never inside a UTF-8 sequence)", func(b *behavior, v string) error {
		return setInt(&b.split, v, 0)
	}},
	{"delay", "pause between streamed chat messages, e.g. 20ms", func(b *behavior, v string) error {
		return setDuration(&b.delay, v)
	}},
	{"hello", "true: first send a JSON text message with the upgrade request's path and query", func(b *behavior, v string) error {
		return setBool(&b.hello, v)
	}},
	{"refuse", "refuse the WebSocket upgrade with this HTTP status (200-599)", func(b *behavior, v string) error {
		if err := setInt(&b.refuse, v, 0); err != nil {
			return err
		}
		if b.refuse != 0 && (b.refuse < 200 || b.refuse > 599) {
			return fmt.Errorf("want 200-599")
		}
		return nil
	}},
	{"close_after", "close once N data messages were sent (hello and garbage count; 0: right after the upgrade)", func(b *behavior, v string) error {
		return setInt(&b.closeAfter, v, 0)
	}},
	{"close_code", "close code for close_after (default 1011)", func(b *behavior, v string) error {
		var n int
		if err := setInt(&n, v, 0); err != nil {
			return err
		}
		if !sendableCloseCode(n) {
			return fmt.Errorf("%d cannot be sent in a close frame", n)
		}
		b.closeCode = websocket.StatusCode(n)
		return nil
	}},
	{"close_reason", "close reason for close_after (at most 123 bytes of UTF-8)", func(b *behavior, v string) error {
		if len(v) > 123 || !utf8.ValidString(v) {
			return fmt.Errorf("want at most 123 bytes of UTF-8")
		}
		b.closeReason = v
		return nil
	}},
	{"abrupt", "true: close_after drops the TCP connection without a close frame", func(b *behavior, v string) error {
		return setBool(&b.abrupt, v)
	}},
	{"garbage_after", "send one text message of invalid UTF-8 once N data messages were sent (0: right after the upgrade)", func(b *behavior, v string) error {
		return setInt(&b.garbageAfter, v, 0)
	}},
	{"deaf_after", "stop reading after N received messages (0: never read): pings go unanswered, the close handshake too; replies already queued are still sent", func(b *behavior, v string) error {
		return setInt(&b.deafAfter, v, 0)
	}},
	{"hold", "how long a deaf connection stays open before it is dropped (default 10m)", func(b *behavior, v string) error {
		return setDuration(&b.hold, v)
	}},
	{"no_pong", "true: keep reading but never answer pings", func(b *behavior, v string) error {
		return setBool(&b.noPong, v)
	}},
}

// parseBehavior applies the query strings in order, later ones overriding
// earlier ones, on top of the defaults.
func parseBehavior(queries ...string) (behavior, error) {
	b := defaultBehavior()
	for _, q := range queries {
		if err := b.apply(q); err != nil {
			return behavior{}, err
		}
	}
	return b, nil
}

func (b *behavior) apply(query string) error {
	vals, err := url.ParseQuery(query)
	if err != nil {
		return fmt.Errorf("model: query %q: %w", query, err)
	}
	for _, p := range params {
		vs, ok := vals[p.name]
		if !ok {
			continue
		}
		delete(vals, p.name)
		v := vs[len(vs)-1]
		if err := p.set(b, v); err != nil {
			return fmt.Errorf("model: query parameter %s=%q: %w", p.name, v, err)
		}
	}
	if len(vals) > 0 {
		name := slices.Sorted(maps.Keys(vals))[0]
		return fmt.Errorf("model: unknown query parameter %q (known: %s)", name, paramNames())
	}
	return nil
}

func paramNames() string {
	names := make([]string, len(params))
	for i, p := range params {
		names[i] = p.name
	}
	return strings.Join(names, ", ")
}

// CheckQuery reports whether query is a valid behaviour query string, as
// accepted in [Options.Defaults] and on the upgrade request. The error names
// the offending parameter.
func CheckQuery(query string) error {
	_, err := parseBehavior(query)
	return err
}

// QueryHelp returns a description of every behaviour query parameter, one
// per line, for a command's usage text.
func QueryHelp() string {
	var sb strings.Builder
	for _, p := range params {
		fmt.Fprintf(&sb, "  %-14s %s\n", p.name, p.help)
	}
	return sb.String()
}

func setInt(dst *int, v string, least int) error {
	n, err := strconv.Atoi(v)
	if err != nil {
		return fmt.Errorf("want an integer")
	}
	if n < least {
		return fmt.Errorf("want at least %d", least)
	}
	*dst = n
	return nil
}

func setBool(dst *bool, v string) error {
	x, err := strconv.ParseBool(v)
	if err != nil {
		return fmt.Errorf("want true or false")
	}
	*dst = x
	return nil
}

func setDuration(dst *time.Duration, v string) error {
	d, err := time.ParseDuration(v)
	if err != nil || d < 0 {
		return fmt.Errorf("want a non-negative duration such as 20ms")
	}
	*dst = d
	return nil
}

// sendableCloseCode reports whether code may appear in a close frame
// (RFC 6455 section 7.4): the defined codes except the reserved 1004-1006
// and 1015, and the 3000-4999 range.
func sendableCloseCode(code int) bool {
	switch {
	case code >= 1000 && code <= 1003, code >= 1007 && code <= 1014:
		return true
	case code >= 3000 && code <= 4999:
		return true
	}
	return false
}
