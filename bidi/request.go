package bidi

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
)

// Wire constants of the request (docs/wire.md §3).
const (
	signingName            = "sagemaker"
	contentTypeEventStream = "application/vnd.amazon.eventstream"
	streamingPayloadHash   = "STREAMING-AWS4-HMAC-SHA256-EVENTS"

	headerContentSHA256       = "X-Amz-Content-Sha256"
	headerTargetVariant       = "X-Amzn-Sagemaker-Target-Variant"
	headerModelInvocationPath = "X-Amzn-Sagemaker-Model-Invocation-Path"
	headerModelQueryString    = "X-Amzn-Sagemaker-Model-Query-String"
	headerInvokedVariant      = "X-Amzn-Invoked-Production-Variant"
	headerRequestID           = "X-Amzn-Requestid"
	headerAlternateRequestID  = "X-Amz-Request-Id"
	userAgent                 = "sagemaker-bidi-go/" + moduleVersion
	credentialsErrorPrefix    = "bidi: retrieving credentials"
)

// moduleVersion is the version of this module, sent in the User-Agent header.
const moduleVersion = "0.1.0"

// retrieveCredentials asks provider for credentials, giving up when ctx is
// done even if the provider ignores ctx. An aws.CredentialsCache (which
// Options.Credentials always is, unless anonymous) already honours ctx: it
// refreshes in the background and returns when ctx is done, so it is
// called directly. Other providers are called in a goroutine; if ctx ends
// first, the call finishes in the background and its result is dropped.
//
// Credentials that expired before now are refused with
// an error matching ErrInvalidConfig: the service would refuse them.
func retrieveCredentials(ctx context.Context, provider aws.CredentialsProvider, now time.Time) (aws.Credentials, error) {
	c, err := retrieveFrom(ctx, provider)
	if err == nil && c.CanExpire && c.Expires.Before(now) {
		source := ""
		if c.Source != "" {
			source = " from " + c.Source
		}
		return aws.Credentials{}, fmt.Errorf("%s: %w: the credentials%s expired at %s, %s before the request; refresh them at their source",
			credentialsErrorPrefix, errExpiredCredentials, source, c.Expires.UTC().Format(time.RFC3339), now.Sub(c.Expires).Round(time.Second))
	}
	return c, err
}

// retrieveFrom is retrieveCredentials without the expiry check.
func retrieveFrom(ctx context.Context, provider aws.CredentialsProvider) (aws.Credentials, error) {
	if provider == nil {
		return aws.Credentials{}, errNoCredentials
	}
	if cache, ok := provider.(*aws.CredentialsCache); ok {
		c, err := cache.Retrieve(ctx)
		if err != nil {
			if ctx.Err() != nil {
				err = context.Cause(ctx)
			}
			return aws.Credentials{}, fmt.Errorf("%s: %w", credentialsErrorPrefix, err)
		}
		return c, nil
	}
	type result struct {
		creds aws.Credentials
		err   error
	}
	ch := make(chan result, 1)
	go func() {
		c, err := provider.Retrieve(ctx)
		ch <- result{c, err}
	}()
	select {
	case r := <-ch:
		if r.err != nil {
			return aws.Credentials{}, fmt.Errorf("%s: %w", credentialsErrorPrefix, r.err)
		}
		return r.creds, nil
	case <-ctx.Done():
		return aws.Credentials{}, fmt.Errorf("%s: %w", credentialsErrorPrefix, context.Cause(ctx))
	}
}

// The values of the headers every request carries, shared by the heads of
// all requests: nothing writes to a request head once it is built.
var (
	contentTypeValue = []string{contentTypeEventStream}
	payloadHashValue = []string{streamingPayloadHash}
)

// newRequest builds the signed head of the POST to u that opens a stream
// (docs/wire.md §3) and returns it with the seed of the event signature
// chain: the request's own signature.
func (c *Client) newRequest(in *OpenInput, u *url.URL, creds aws.Credentials, now time.Time) (http.Header, []byte) {
	h := make(http.Header, 8)
	h["Content-Type"] = contentTypeValue
	h[headerContentSHA256] = payloadHashValue
	h["User-Agent"] = c.userAgent
	if in.TargetVariant != "" {
		h[headerTargetVariant] = []string{in.TargetVariant}
	}
	if in.ModelInvocationPath != "" {
		h[headerModelInvocationPath] = []string{in.ModelInvocationPath}
	}
	if in.ModelQueryString != "" {
		h[headerModelQueryString] = []string{in.ModelQueryString}
	}
	sig := c.signer.sign(h, u, creds, now)
	return h, sig[:]
}
