package transport

import (
	"bufio"
	"context"
	"crypto/tls"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"time"

	"golang.org/x/net/http2"
)

// endpoint identifies a pool: the scheme ("https" or "http" for h2c) and
// the host:port dialed.
type endpoint struct {
	scheme string
	addr   string // host:port
	host   string // host without port, for SNI
}

func endpointOf(u *url.URL) (endpoint, error) {
	e := endpoint{scheme: u.Scheme, host: u.Hostname()}
	port := u.Port()
	switch u.Scheme {
	case "https":
		if port == "" {
			port = "443"
		}
	case "http":
		if port == "" {
			port = "80"
		}
	default:
		return endpoint{}, fmt.Errorf("unsupported URL scheme %q", u.Scheme)
	}
	if e.host == "" {
		return endpoint{}, errors.New("URL has no host")
	}
	e.addr = net.JoinHostPort(e.host, port)
	return e, nil
}

// dial opens a connection to e: TCP (through a CONNECT proxy if one is
// configured for https), TLS with ALPN "h2" (or none for h2c), the client
// preface and SETTINGS, and the server's first SETTINGS frame, all within
// DialTimeout and ctx.
//
// Its errors are ErrNotHTTP2 (wrapped) for a peer that speaks something
// else, and a *ConnError for the others: its Cause is the network error,
// context.DeadlineExceeded after DialTimeout, or context.Canceled after
// Transport.Close.
func (t *Transport) dial(ctx context.Context, e endpoint) (*conn, error) {
	cc, err := t.dialConn(ctx, e)
	if err != nil && !errors.Is(err, ErrNotHTTP2) {
		var ce *ConnError
		if !errors.As(err, &ce) {
			err = &ConnError{Reason: "dial " + e.addr, Cause: err}
		}
	}
	return cc, err
}

func (t *Transport) dialConn(ctx context.Context, e endpoint) (*conn, error) {
	ctx, cancel := context.WithTimeout(ctx, t.cfg.dialTimeout())
	defer cancel()
	nc, err := t.dialTCP(ctx, e)
	if err != nil {
		return nil, stageError(ctx, "dial "+e.addr, err)
	}
	// Every blocking step below is bounded by the deadline of ctx.
	if dl, ok := ctx.Deadline(); ok {
		nc.SetDeadline(dl)
	}
	raw := nc // nc becomes the TLS connection; the deadline is the TCP one's
	stop := context.AfterFunc(ctx, func() { raw.SetDeadline(time.Unix(1, 0)) })
	defer stop()
	var cork *corkedConn
	if e.scheme == "https" {
		cork = &corkedConn{Conn: nc}
		nc, err = t.handshakeTLS(ctx, cork, e)
		if err != nil {
			return nil, err
		}
	}
	cc := newConn(t, e, nc)
	cc.cork = cork
	if err := cc.handshake(); err != nil {
		closeRaw(raw, nc)
		if ctx.Err() != nil || isTimeout(err) {
			// The deadline (or Close) cut the handshake short: a peer
			// that is silent, not one that speaks another protocol.
			return nil, stageError(ctx, "dial "+e.addr+": no SETTINGS from the server in time", err)
		}
		if isTLSAlert(err) {
			return nil, &ConnError{Reason: "dial " + e.addr + ": the server ended the TLS session", Cause: err}
		}
		return nil, err
	}
	if !stop() {
		nc.Close()
		return nil, &ConnError{Reason: "dial " + e.addr, Cause: context.Cause(ctx)}
	}
	nc.SetDeadline(time.Time{})
	return cc, nil
}

// stageError labels the failure of a dial stage: one that DialTimeout
// or ctx cut short (the connection's deadline, which reads as an i/o
// timeout) is a *ConnError whose Cause is context.DeadlineExceeded, or
// ctx's cause, whatever the stage (TCP, proxy, TLS, SETTINGS); others are
// returned as they are.
func stageError(ctx context.Context, reason string, err error) error {
	var cause error
	switch {
	case ctx.Err() != nil:
		cause = context.Cause(ctx)
	case isTimeout(err):
		cause = context.DeadlineExceeded
	default:
		return err
	}
	if !errors.Is(err, cause) {
		reason += ": " + err.Error()
	}
	return &ConnError{Reason: reason, Cause: cause}
}

// closeRaw closes a connection that failed during the dial: the TCP one
// under TLS (tls.Conn.Close would send close_notify to a peer that may not
// read it).
func closeRaw(raw, nc net.Conn) {
	raw.Close()
	if nc != raw {
		nc.Close()
	}
}

func (t *Transport) dialTCP(ctx context.Context, e endpoint) (net.Conn, error) {
	dialer := t.cfg.DialContext
	if dialer == nil {
		d := &net.Dialer{KeepAlive: 30 * time.Second}
		dialer = d.DialContext
	}
	if e.scheme == "https" && t.cfg.Proxy != nil {
		proxy, err := t.cfg.Proxy(&http.Request{URL: &url.URL{Scheme: e.scheme, Host: e.addr}})
		if err != nil {
			return nil, fmt.Errorf("proxy for %s: %w", e.addr, err)
		}
		if proxy != nil {
			return t.dialProxy(ctx, dialer, proxy, e)
		}
	}
	nc, err := dialer(ctx, "tcp", e.addr)
	if err != nil {
		return nil, err
	}
	return nc, nil
}

// dialProxy opens a CONNECT tunnel to e through proxy (http or https).
func (t *Transport) dialProxy(ctx context.Context, dialer func(context.Context, string, string) (net.Conn, error), proxy *url.URL, e endpoint) (net.Conn, error) {
	pe, err := endpointOf(proxy)
	if err != nil {
		return nil, fmt.Errorf("proxy %s: %w", proxy.Redacted(), err)
	}
	nc, err := dialer(ctx, "tcp", pe.addr)
	if err != nil {
		return nil, fmt.Errorf("proxy %s: %w", proxy.Redacted(), err)
	}
	if dl, ok := ctx.Deadline(); ok {
		nc.SetDeadline(dl)
	}
	stop := context.AfterFunc(ctx, func() { nc.SetDeadline(time.Unix(1, 0)) })
	defer stop()
	if pe.scheme == "https" {
		tc := tls.Client(nc, &tls.Config{ServerName: pe.host, RootCAs: t.tlsConfig.RootCAs, MinVersion: tls.VersionTLS12})
		if err := tc.HandshakeContext(ctx); err != nil {
			nc.Close()
			return nil, fmt.Errorf("proxy %s: %w", proxy.Redacted(), err)
		}
		nc = tc
	}
	req := "CONNECT " + e.addr + " HTTP/1.1\r\nHost: " + e.addr + "\r\n"
	if u := proxy.User; u != nil {
		pw, _ := u.Password()
		req += "Proxy-Authorization: Basic " + base64.StdEncoding.EncodeToString([]byte(u.Username()+":"+pw)) + "\r\n"
	}
	req += "\r\n"
	if _, err := io.WriteString(nc, req); err != nil {
		nc.Close()
		return nil, fmt.Errorf("proxy %s: %w", proxy.Redacted(), err)
	}
	// The proxy sends nothing after its response until the tunnel is
	// used, so a buffered reader loses no bytes of the tunnel.
	br := bufio.NewReaderSize(nc, 1024)
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		nc.Close()
		return nil, fmt.Errorf("proxy %s: reading CONNECT response: %w", proxy.Redacted(), err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		nc.Close()
		return nil, fmt.Errorf("proxy %s: CONNECT answered %s", proxy.Redacted(), resp.Status)
	}
	if br.Buffered() > 0 {
		nc.Close()
		return nil, fmt.Errorf("proxy %s: unexpected bytes after the CONNECT response", proxy.Redacted())
	}
	if !stop() {
		nc.Close()
		return nil, context.Cause(ctx)
	}
	nc.SetDeadline(time.Time{})
	return nc, nil
}

func (t *Transport) handshakeTLS(ctx context.Context, nc net.Conn, e endpoint) (net.Conn, error) {
	cfg := t.tlsConfig.Clone()
	if cfg.ServerName == "" {
		cfg.ServerName = e.host
	}
	tc := tls.Client(nc, cfg)
	if err := tc.HandshakeContext(ctx); err != nil {
		nc.Close()
		var oe *net.OpError
		if errors.As(err, &oe) && oe.Op == "remote error" && oe.Err != nil && oe.Err.Error() == "tls: no application protocol" {
			// The server's ALPN list has no "h2": an HTTP/1 server.
			return nil, fmt.Errorf("%w: the server at %s does not offer h2 through ALPN (%v)", ErrNotHTTP2, e.addr, err)
		}
		switch {
		case ctx.Err() != nil:
			return nil, &ConnError{Reason: "dial " + e.addr + ": TLS handshake", Cause: context.Cause(ctx)}
		case isTimeout(err):
			// The connection's deadline, which is DialTimeout's.
			return nil, &ConnError{Reason: "dial " + e.addr + ": TLS handshake: " + err.Error(), Cause: context.DeadlineExceeded}
		}
		return nil, err
	}
	if p := tc.ConnectionState().NegotiatedProtocol; p != http2.NextProtoTLS {
		tc.Close()
		if p == "" {
			return nil, fmt.Errorf("%w: the server at %s offered no application protocol through ALPN", ErrNotHTTP2, e.addr)
		}
		return nil, fmt.Errorf("%w: the server at %s negotiated %q", ErrNotHTTP2, e.addr, p)
	}
	return tc, nil
}
