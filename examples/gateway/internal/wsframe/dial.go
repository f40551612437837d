package wsframe

import (
	"bufio"
	"context"
	"crypto/rand"
	"crypto/sha1"
	"crypto/tls"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"time"
)

// DialOptions configure [Dial]. The zero value is ready to use.
type DialOptions struct {
	// NetDial dials the TCP connection; nil means a net.Dialer.
	NetDial func(ctx context.Context, network, addr string) (net.Conn, error)

	// TLSConfig is used for wss:// URLs; nil means the system roots.
	TLSConfig *tls.Config

	// MaxFrameSize bounds the payload of a frame read; 0 means
	// [DefaultMaxFrameSize].
	MaxFrameSize int64

	// Rand supplies the handshake key and the masking keys; nil means
	// crypto/rand.
	Rand io.Reader

	// UserAgent is sent in the User-Agent header when not empty.
	UserAgent string
}

// acceptGUID is the GUID of RFC 6455 §1.3 for Sec-WebSocket-Accept.
const acceptGUID = "258EAFA5-E914-47DA-95CA-C5AB0DC85B11"

// Dial opens a WebSocket connection to rawURL (ws:// or wss://; http://
// and https:// are accepted as synonyms) with the opening handshake of
// RFC 6455 §4.1, offering no extension and no subprotocol. ctx bounds the
// dial and the handshake, not the connection.
//
// A server that answers with another status than 101, or with a 101
// lacking the right Upgrade, Connection and Sec-WebSocket-Accept headers
// or naming an extension or subprotocol, yields a [*HandshakeError]. A
// failure to connect or to exchange the handshake yields the network
// error.
func Dial(ctx context.Context, rawURL string, opts *DialOptions) (*Conn, error) {
	var o DialOptions
	if opts != nil {
		o = *opts
	}
	if o.Rand == nil {
		o.Rand = rand.Reader
	}
	u, secure, err := parseURL(rawURL)
	if err != nil {
		return nil, err
	}
	nc, err := dialNet(ctx, u, secure, &o)
	if err != nil {
		return nil, err
	}
	br, err := handshake(ctx, nc, u, &o)
	if err != nil {
		nc.Close()
		return nil, err
	}
	return NewConn(nc, br, o.MaxFrameSize, o.Rand), nil
}

// parseURL checks rawURL and reports whether it asks for TLS.
func parseURL(rawURL string) (*url.URL, bool, error) {
	u, err := url.Parse(rawURL)
	if err != nil {
		return nil, false, fmt.Errorf("wsframe: %w", err)
	}
	var secure bool
	switch u.Scheme {
	case "ws", "http":
	case "wss", "https":
		secure = true
	default:
		return nil, false, fmt.Errorf("wsframe: URL scheme %q is not ws or wss", u.Scheme)
	}
	if u.Host == "" {
		return nil, false, fmt.Errorf("wsframe: URL %q has no host", rawURL)
	}
	return u, secure, nil
}

func dialNet(ctx context.Context, u *url.URL, secure bool, o *DialOptions) (net.Conn, error) {
	host, port := u.Hostname(), u.Port()
	if port == "" {
		port = "80"
		if secure {
			port = "443"
		}
	}
	addr := net.JoinHostPort(host, port)
	dial := o.NetDial
	if dial == nil {
		dial = (&net.Dialer{}).DialContext
	}
	nc, err := dial(ctx, "tcp", addr)
	if err != nil {
		return nil, err
	}
	if !secure {
		return nc, nil
	}
	cfg := o.TLSConfig.Clone()
	if cfg == nil {
		cfg = &tls.Config{}
	}
	if cfg.ServerName == "" {
		cfg.ServerName = host
	}
	cfg.NextProtos = []string{"http/1.1"} // the upgrade needs HTTP/1.1
	tc := tls.Client(nc, cfg)
	if err := tc.HandshakeContext(ctx); err != nil {
		nc.Close()
		return nil, err
	}
	return tc, nil
}

// handshake sends the upgrade request on nc and checks the answer. It
// returns the reader holding whatever the server sent after the
// response.
func handshake(ctx context.Context, nc net.Conn, u *url.URL, o *DialOptions) (*bufio.Reader, error) {
	// Bound the exchange by ctx: its deadline, and its cancellation.
	if d, ok := ctx.Deadline(); ok {
		nc.SetDeadline(d)
	}
	stop := context.AfterFunc(ctx, func() { nc.SetDeadline(time.Unix(1, 0)) })
	defer stop()

	var k [16]byte
	if _, err := io.ReadFull(o.Rand, k[:]); err != nil {
		return nil, fmt.Errorf("wsframe: reading a handshake key: %w", err)
	}
	key := base64.StdEncoding.EncodeToString(k[:])
	req := &http.Request{
		Method:     http.MethodGet,
		URL:        &url.URL{Path: u.Path, RawPath: u.RawPath, RawQuery: u.RawQuery},
		Proto:      "HTTP/1.1",
		ProtoMajor: 1,
		ProtoMinor: 1,
		Host:       u.Host,
		Header: http.Header{
			"Upgrade":               {"websocket"},
			"Connection":            {"Upgrade"},
			"Sec-WebSocket-Key":     {key},
			"Sec-WebSocket-Version": {"13"},
		},
	}
	if req.URL.Path == "" {
		req.URL.Path = "/"
	}
	if o.UserAgent != "" {
		req.Header.Set("User-Agent", o.UserAgent)
	}
	bw := bufio.NewWriter(nc)
	if err := req.Write(bw); err != nil {
		return nil, ctxErr(ctx, err)
	}
	if err := bw.Flush(); err != nil {
		return nil, ctxErr(ctx, err)
	}
	br := bufio.NewReaderSize(nc, 4096)
	resp, err := http.ReadResponse(br, req)
	if err != nil {
		return nil, ctxErr(ctx, fmt.Errorf("wsframe: reading the handshake response: %w", err))
	}
	if resp.StatusCode != http.StatusSwitchingProtocols {
		body, _ := io.ReadAll(io.LimitReader(resp.Body, MaxErrorBody))
		resp.Body.Close()
		return nil, &HandshakeError{StatusCode: resp.StatusCode, Status: resp.Status, Body: body}
	}
	if reason := checkUpgrade(resp.Header, key); reason != "" {
		return nil, &HandshakeError{StatusCode: resp.StatusCode, Status: resp.Status, Reason: reason}
	}
	if !stop() {
		return nil, ctx.Err() // cancelled at the last moment: the deadline is in the past
	}
	nc.SetDeadline(time.Time{})
	return br, nil
}

// checkUpgrade checks the headers of a 101 response (RFC 6455 §4.1) and
// returns what is wrong, or "".
func checkUpgrade(h http.Header, key string) string {
	if !headerHasToken(h, "Upgrade", "websocket") {
		return "no Upgrade: websocket header"
	}
	if !headerHasToken(h, "Connection", "upgrade") {
		return "no Connection: Upgrade header"
	}
	sum := sha1.Sum([]byte(key + acceptGUID))
	if h.Get("Sec-WebSocket-Accept") != base64.StdEncoding.EncodeToString(sum[:]) {
		return "wrong Sec-WebSocket-Accept"
	}
	if h.Get("Sec-WebSocket-Extensions") != "" {
		return "the server chose an extension that was not offered"
	}
	if h.Get("Sec-WebSocket-Protocol") != "" {
		return "the server chose a subprotocol that was not offered"
	}
	return ""
}

// headerHasToken reports whether a comma-separated header contains token,
// ignoring case.
func headerHasToken(h http.Header, name, token string) bool {
	for _, v := range h.Values(name) {
		for t := range strings.SplitSeq(v, ",") {
			if strings.EqualFold(strings.TrimSpace(t), token) {
				return true
			}
		}
	}
	return false
}

// ctxErr prefers ctx's error to the I/O error its cancellation or
// deadline caused. The connection's deadline is ctx's, so a timeout may be
// seen a moment before ctx reports it: then ctx is given that moment.
func ctxErr(ctx context.Context, err error) error {
	var ne net.Error
	if _, ok := ctx.Deadline(); ok && errors.As(err, &ne) && ne.Timeout() {
		t := time.NewTimer(100 * time.Millisecond)
		defer t.Stop()
		select {
		case <-ctx.Done():
		case <-t.C:
		}
	}
	if ctx.Err() != nil {
		return fmt.Errorf("wsframe: handshake: %w", ctx.Err())
	}
	return err
}
