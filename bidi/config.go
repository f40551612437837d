package bidi

import (
	"context"
	"net/http"
	"os"

	"github.com/aws/aws-sdk-go-v2/aws"
)

// serviceID is the service's sdkId, "SageMaker Runtime HTTP2". It names the
// service in aws.Config.ServiceOptions callbacks and, normalised, in the
// service-specific endpoint settings (AWS_ENDPOINT_URL_SAGEMAKER_RUNTIME_HTTP2,
// or sagemaker_runtime_http2 in a shared config services section).
const serviceID = "SageMaker Runtime HTTP2"

// envServiceEndpoint is the service-specific endpoint variable, and
// envGlobalEndpoint the one for all services.
const (
	envServiceEndpoint = "AWS_ENDPOINT_URL_SAGEMAKER_RUNTIME_HTTP2"
	envGlobalEndpoint  = "AWS_ENDPOINT_URL"
)

// The aws-sdk-go-v2 config package exposes these settings through
// cfg.ConfigSources (its EnvConfig, SharedConfig and LoadOptions). They are
// matched by method set, as generated service clients do, so no internal
// package is imported.
type (
	serviceBaseEndpointProvider interface {
		GetServiceBaseEndpoint(ctx context.Context, sdkID string) (string, bool, error)
	}
	ignoreConfiguredEndpointsProvider interface {
		GetIgnoreConfiguredEndpoints(ctx context.Context) (bool, bool, error)
	}
	useFIPSEndpointProvider interface {
		GetUseFIPSEndpoint(ctx context.Context) (aws.FIPSEndpointState, bool, error)
	}
	useDualStackEndpointProvider interface {
		GetUseDualStackEndpoint(ctx context.Context) (aws.DualStackEndpointState, bool, error)
	}
)

// resolveOptions builds a client's Options from cfg the way aws-sdk-go-v2
// service clients do, then applies cfg.ServiceOptions and optFns in order,
// then fills defaults (see Options.setDefaults):
//
//   - Region, Logger, ClientLogMode, AppID, RetryMaxAttempts, RetryMode
//     and Retryer from cfg;
//   - Credentials from cfg (wrapped in aws.CredentialsCache after optFns
//     unless already one);
//   - from cfg.HTTPClient (an *http.Client or the config package's
//     BuildableClient) only its transport's trusted roots (the custom CA
//     bundle, e.g. AWS_CA_BUNDLE) and proxy function, for the client's own
//     HTTP/2 engine; never the client itself, whose whole-request Timeout
//     would cut streams;
//   - BaseEndpoint from cfg.BaseEndpoint, overridden by the
//     service-specific endpoint from cfg.ConfigSources, except that a set
//     AWS_ENDPOINT_URL without AWS_ENDPOINT_URL_SAGEMAKER_RUNTIME_HTTP2
//     keeps cfg.BaseEndpoint (the global variable outranks the shared
//     config file); ignore_configured_endpoints disables the lookup;
//   - UseFIPSEndpoint and UseDualStackEndpoint from cfg.ConfigSources.
//
// Errors from config sources are ignored, as in generated clients: the
// setting is treated as absent.
func resolveOptions(cfg aws.Config, optFns ...func(*Options)) Options {
	o := Options{
		Region:           cfg.Region,
		Credentials:      cfg.Credentials,
		Logger:           cfg.Logger,
		ClientLogMode:    cfg.ClientLogMode,
		AppID:            cfg.AppID,
		RetryMaxAttempts: cfg.RetryMaxAttempts,
		RetryMode:        cfg.RetryMode,
	}
	if cfg.Retryer != nil {
		o.Retryer = cfg.Retryer()
	}
	// An HTTP client in cfg is shared with other AWS clients, often with a
	// whole-request Timeout that would cut every stream: it only lends the
	// engine the roots it trusts and its proxy.
	var tr *http.Transport
	switch hc := cfg.HTTPClient.(type) {
	case *http.Client:
		tr, _ = hc.Transport.(*http.Transport)
	case interface{ GetTransport() *http.Transport }:
		// The config package's BuildableClient, with the custom CA
		// bundle (AWS_CA_BUNDLE, ca_bundle) if any.
		tr = hc.GetTransport()
	}
	if tr != nil {
		if tr.TLSClientConfig != nil {
			o.rootCAs = tr.TLSClientConfig.RootCAs
		}
		o.cfgProxy = tr.Proxy
	}
	ctx := context.Background()
	resolveBaseEndpoint(ctx, cfg, &o)
	if v, ok := resolveFIPS(ctx, cfg.ConfigSources); ok {
		o.UseFIPSEndpoint = v
	}
	if v, ok := resolveDualStack(ctx, cfg.ConfigSources); ok {
		o.UseDualStackEndpoint = v
	}
	for _, fn := range cfg.ServiceOptions {
		fn(serviceID, &o)
	}
	for _, fn := range optFns {
		fn(&o)
	}
	o = o.clone()
	o.setDefaults()
	return o
}

func resolveBaseEndpoint(ctx context.Context, cfg aws.Config, o *Options) {
	if cfg.BaseEndpoint != nil {
		s := *cfg.BaseEndpoint
		o.BaseEndpoint = &s
	}
	_, global := os.LookupEnv(envGlobalEndpoint)
	_, service := os.LookupEnv(envServiceEndpoint)
	if global && !service {
		return
	}
	if v, ok := resolveServiceBaseEndpoint(ctx, cfg.ConfigSources); ok {
		o.BaseEndpoint = &v
	}
}

// resolveServiceBaseEndpoint returns the first service-specific endpoint
// found in sources, unless a source says to ignore configured endpoints.
func resolveServiceBaseEndpoint(ctx context.Context, sources []any) (string, bool) {
	for _, s := range sources {
		if p, ok := s.(ignoreConfiguredEndpointsProvider); ok {
			v, found, err := p.GetIgnoreConfiguredEndpoints(ctx)
			if err != nil {
				break
			}
			if found {
				if v {
					return "", false
				}
				break
			}
		}
	}
	for _, s := range sources {
		if p, ok := s.(serviceBaseEndpointProvider); ok {
			v, found, err := p.GetServiceBaseEndpoint(ctx, serviceID)
			if err != nil {
				return "", false
			}
			if found && v != "" {
				return v, true
			}
		}
	}
	return "", false
}

// resolveFIPS returns the first FIPS endpoint setting found in sources.
func resolveFIPS(ctx context.Context, sources []any) (aws.FIPSEndpointState, bool) {
	return firstSetting(ctx, sources, useFIPSEndpointProvider.GetUseFIPSEndpoint)
}

// resolveDualStack returns the first dual-stack endpoint setting found in
// sources.
func resolveDualStack(ctx context.Context, sources []any) (aws.DualStackEndpointState, bool) {
	return firstSetting(ctx, sources, useDualStackEndpointProvider.GetUseDualStackEndpoint)
}

// firstSetting returns the value of the first source that implements P and
// has the setting, in order, as aws-sdk-go-v2's resolvers do: the search
// stops, with nothing found, at the first source whose getter fails.
func firstSetting[P, V any](ctx context.Context, sources []any, get func(P, context.Context) (V, bool, error)) (V, bool) {
	var zero V
	for _, s := range sources {
		if p, ok := s.(P); ok {
			v, found, err := get(p, ctx)
			if err != nil {
				return zero, false
			}
			if found {
				return v, true
			}
		}
	}
	return zero, false
}
