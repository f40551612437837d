package bidi

import (
	"context"
	"crypto/tls"
	"net"
	"net/http"
	"time"
)

// HTTPClientOptions configures [NewHTTPClient].
type HTTPClientOptions struct {
	// TLSConfig is cloned and used for TLS connections; nil means the
	// system roots. Certificates are verified unless the config turns
	// verification off. Only "h2" is offered through ALPN.
	TLSConfig *tls.Config

	// DialContext dials TCP connections; nil means a net.Dialer with a 30 s
	// timeout and TCP keep-alives.
	DialContext func(ctx context.Context, network, addr string) (net.Conn, error)
}

// NewHTTPClient returns a net/http client for Options.HTTPClient, the
// escape hatch that takes a Client off its own HTTP/2 engine: an
// http.Transport that speaks only HTTP/2 (over TLS with ALPN "h2", or
// prior-knowledge h2c for http:// endpoints), verifies certificates,
// checks idle connections with PINGs (every DefaultHealthCheckInterval;
// adjust the returned transport's HTTP2 settings to change it) and opens
// another connection when the server's concurrent-stream limit is
// reached. None of the engine's guarantees apply to it (see
// Options.HTTPClient); it is also the baseline the benchmarks compare
// the engine with.
//
// The client has no overall timeout: a session lives as long as its
// context. Proxies from the environment are honoured.
func NewHTTPClient(optFns ...func(*HTTPClientOptions)) *http.Client {
	var o HTTPClientOptions
	for _, fn := range optFns {
		fn(&o)
	}
	if o.DialContext == nil {
		o.DialContext = (&net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second}).DialContext
	}
	var tlsConfig *tls.Config
	if o.TLSConfig != nil {
		tlsConfig = o.TLSConfig.Clone()
	} else {
		tlsConfig = &tls.Config{}
	}
	if tlsConfig.MinVersion == 0 {
		tlsConfig.MinVersion = tls.VersionTLS12
	}
	var protocols http.Protocols
	protocols.SetHTTP2(true)
	protocols.SetUnencryptedHTTP2(true)
	// The HTTP/2 transport is not strict about MaxConcurrentStreams by
	// default: past a connection's limit, new streams go to a new
	// connection instead of waiting.
	h2 := &http.HTTP2Config{PingTimeout: DefaultHealthCheckTimeout, SendPingTimeout: DefaultHealthCheckInterval}
	t := &http.Transport{
		Proxy:                 http.ProxyFromEnvironment,
		DialContext:           o.DialContext,
		TLSClientConfig:       tlsConfig,
		TLSHandshakeTimeout:   10 * time.Second,
		ForceAttemptHTTP2:     true,
		Protocols:             &protocols,
		HTTP2:                 h2,
		MaxIdleConns:          100,
		IdleConnTimeout:       90 * time.Second,
		ExpectContinueTimeout: 0,
	}
	return &http.Client{
		Transport:     t,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
}
