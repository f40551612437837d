package main

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"os"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/smithy-go/logging"

	"github.com/sagemaker-bidi/sagemaker-bidi/bidi"
	"github.com/sagemaker-bidi/sagemaker-bidi/bidi/biditest"
)

// newClient builds the client the flags ask for: one for an in-process
// demo server with -local (and the server, to close), otherwise one from
// the AWS configuration (credentials chain, region, profile) adjusted by
// -endpoint-url and -ca-cert.
func newClient(ctx context.Context, o *options, st *status) (*bidi.Client, func(), error) {
	common := func(opt *bidi.Options) {
		opt.MaxPartSize = o.partSize
		// The SDK's diagnostics (never payloads or credentials) only
		// with -debug, between status line redraws; without a log mode
		// the client is silent.
		if o.debug {
			opt.Logger = logging.LoggerFunc(func(c logging.Classification, format string, v ...any) {
				st.write(st.stderr, fmt.Appendf(nil, "SDK %s "+format+"\n", append([]any{c}, v...)...))
			})
			opt.ClientLogMode |= aws.LogRetries
		}
	}
	optFns := []func(*bidi.Options){common}
	if o.caCert != "" {
		pool, err := certPool(o.caCert)
		if err != nil {
			return nil, nil, err
		}
		// The client's own HTTP/2 engine, trusting the system roots and
		// the file.
		optFns = append(optFns, func(opt *bidi.Options) {
			opt.TLSConfig = &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}
		})
	}
	var srv *biditest.Server
	if o.local {
		srv = biditest.NewServer(biditest.DemoModel(nil))
		st.note("local demo server at %s (biditest.DemoModel)", srv.URL)
	}
	client, err := o.conn.Client(ctx, srv, optFns...)
	if err != nil {
		return nil, nil, fmt.Errorf("loading the AWS configuration: %w", err)
	}
	if srv != nil {
		return client, srv.Close, nil
	}
	return client, func() {}, nil
}

// certPool returns the system roots plus the PEM certificates in file.
func certPool(file string) (*x509.CertPool, error) {
	pem, err := os.ReadFile(file)
	if err != nil {
		return nil, usagef("-ca-cert: %v", err)
	}
	pool, err := x509.SystemCertPool()
	if err != nil || pool == nil {
		pool = x509.NewCertPool()
	}
	if !pool.AppendCertsFromPEM(pem) {
		return nil, usagef("-ca-cert %s: no PEM certificate found", file)
	}
	return pool, nil
}
