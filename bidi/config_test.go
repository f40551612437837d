package bidi

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/smithy-go/logging"
)

// fakeSource is a config source with the methods aws-sdk-go-v2's config
// package exposes. A nil field means "not found".
type fakeSource struct {
	serviceEndpoint map[string]string
	ignore          *bool
	fips            *aws.FIPSEndpointState
	dualStack       *aws.DualStackEndpointState
	err             error
	calls           int
}

func (f *fakeSource) GetServiceBaseEndpoint(_ context.Context, sdkID string) (string, bool, error) {
	f.calls++
	if f.err != nil {
		return "", false, f.err
	}
	v, ok := f.serviceEndpoint[sdkID]
	return v, ok, nil
}

func (f *fakeSource) GetIgnoreConfiguredEndpoints(context.Context) (bool, bool, error) {
	if f.ignore == nil {
		return false, false, nil
	}
	return *f.ignore, true, nil
}

func (f *fakeSource) GetUseFIPSEndpoint(context.Context) (aws.FIPSEndpointState, bool, error) {
	if f.err != nil {
		return 0, false, f.err
	}
	if f.fips == nil {
		return 0, false, nil
	}
	return *f.fips, true, nil
}

func (f *fakeSource) GetUseDualStackEndpoint(context.Context) (aws.DualStackEndpointState, bool, error) {
	if f.err != nil {
		return 0, false, f.err
	}
	if f.dualStack == nil {
		return 0, false, nil
	}
	return *f.dualStack, true, nil
}

func ptrTo[T any](v T) *T { return &v }

// clearEndpointEnv makes the endpoint environment variables absent for the
// test (t.Setenv restores them afterwards).
func clearEndpointEnv(t *testing.T) {
	for _, k := range []string{envGlobalEndpoint, envServiceEndpoint} {
		t.Setenv(k, "")
		os.Unsetenv(k)
	}
}

func TestResolveOptionsBaseEndpoint(t *testing.T) {
	svc := map[string]string{serviceID: "https://service.example"}
	cases := []struct {
		name      string
		cfgBase   *string
		sources   []any
		globalEnv bool
		svcEnv    bool
		want      string // "" = nil
	}{
		{name: "nothing"},
		{name: "cfg only", cfgBase: strPtr("https://cfg.example"), want: "https://cfg.example"},
		{name: "service source wins over cfg", cfgBase: strPtr("https://cfg.example"),
			sources: []any{&fakeSource{serviceEndpoint: svc}}, want: "https://service.example"},
		{name: "other service ignored", sources: []any{&fakeSource{serviceEndpoint: map[string]string{"STS": "https://sts"}}}},
		{name: "first source that has it", sources: []any{
			&fakeSource{}, &fakeSource{serviceEndpoint: map[string]string{serviceID: "https://second"}},
			&fakeSource{serviceEndpoint: map[string]string{serviceID: "https://third"}},
		}, want: "https://second"},
		{name: "global env without service env keeps cfg", cfgBase: strPtr("https://global.example"),
			sources: []any{&fakeSource{serviceEndpoint: svc}}, globalEnv: true, want: "https://global.example"},
		{name: "service env with global env", cfgBase: strPtr("https://global.example"),
			sources: []any{&fakeSource{serviceEndpoint: svc}}, globalEnv: true, svcEnv: true, want: "https://service.example"},
		{name: "ignore configured endpoints", cfgBase: strPtr("https://cfg.example"),
			sources: []any{&fakeSource{ignore: ptrTo(true)}, &fakeSource{serviceEndpoint: svc}}, want: "https://cfg.example"},
		{name: "ignore=false", sources: []any{&fakeSource{ignore: ptrTo(false)}, &fakeSource{serviceEndpoint: svc}}, want: "https://service.example"},
		{name: "source error ignored", cfgBase: strPtr("https://cfg.example"),
			sources: []any{&fakeSource{err: errors.New("boom")}, &fakeSource{serviceEndpoint: svc}}, want: "https://cfg.example"},
		{name: "unrelated source types", sources: []any{42, "x", nil, &fakeSource{serviceEndpoint: svc}}, want: "https://service.example"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			clearEndpointEnv(t)
			if tc.globalEnv {
				t.Setenv(envGlobalEndpoint, "https://global.example")
			}
			if tc.svcEnv {
				t.Setenv(envServiceEndpoint, "https://service.example")
			}
			o := resolveOptions(aws.Config{BaseEndpoint: tc.cfgBase, ConfigSources: tc.sources})
			got := ""
			if o.BaseEndpoint != nil {
				got = *o.BaseEndpoint
			}
			if got != tc.want {
				t.Fatalf("BaseEndpoint = %q, want %q", got, tc.want)
			}
			if tc.cfgBase != nil && o.BaseEndpoint == tc.cfgBase {
				t.Error("BaseEndpoint aliases cfg.BaseEndpoint")
			}
		})
	}
}

func TestResolveOptionsFIPSDualStack(t *testing.T) {
	clearEndpointEnv(t)
	enabled, disabled := aws.FIPSEndpointStateEnabled, aws.FIPSEndpointStateDisabled
	dsOn := aws.DualStackEndpointStateEnabled
	cases := []struct {
		name    string
		sources []any
		fips    aws.FIPSEndpointState
		ds      aws.DualStackEndpointState
	}{
		{"none", nil, aws.FIPSEndpointStateUnset, aws.DualStackEndpointStateUnset},
		{"both", []any{&fakeSource{fips: &enabled, dualStack: &dsOn}}, enabled, dsOn},
		{"first found wins", []any{&fakeSource{}, &fakeSource{fips: &disabled}, &fakeSource{fips: &enabled}}, disabled, aws.DualStackEndpointStateUnset},
		{"error stops lookup", []any{&fakeSource{err: errors.New("x")}, &fakeSource{fips: &enabled}}, aws.FIPSEndpointStateUnset, aws.DualStackEndpointStateUnset},
	}
	for _, tc := range cases {
		o := resolveOptions(aws.Config{Region: "us-east-1", ConfigSources: tc.sources})
		if o.UseFIPSEndpoint != tc.fips || o.UseDualStackEndpoint != tc.ds {
			t.Errorf("%s: fips=%v ds=%v, want %v %v", tc.name, o.UseFIPSEndpoint, o.UseDualStackEndpoint, tc.fips, tc.ds)
		}
	}
	o := resolveOptions(aws.Config{Region: "us-east-1", ConfigSources: []any{&fakeSource{fips: &enabled, dualStack: &dsOn}}})
	u, err := o.endpoint()
	if err != nil || u.String() != "https://runtime-fips.sagemaker.us-east-1.api.aws:8443" {
		t.Errorf("endpoint = %v, %v", u, err)
	}
}

func TestResolveOptionsFromConfigFields(t *testing.T) {
	clearEndpointEnv(t)
	roots := x509.NewCertPool()
	proxyURL, _ := url.Parse("http://proxy.invalid:3128")
	hc := &http.Client{
		Timeout: time.Second, // must not reach streams
		Transport: &http.Transport{
			TLSClientConfig: &tls.Config{RootCAs: roots},
			Proxy:           http.ProxyURL(proxyURL),
		},
	}
	logger := logging.Nop{}
	creds := credentials.NewStaticCredentialsProvider("AKID", "SECRET", "TOKEN")
	var serviceSeen string
	cfg := aws.Config{
		Region:           "eu-west-1",
		Credentials:      creds,
		HTTPClient:       hc,
		Logger:           logger,
		ClientLogMode:    aws.LogRetries,
		AppID:            "my-app",
		RetryMaxAttempts: 7,
		ServiceOptions: []func(string, any){
			func(id string, v any) {
				serviceSeen = id
				if o, ok := v.(*Options); ok {
					o.MaxPartSize = 1234
					o.ReplayLimit = 99
				}
			},
		},
	}
	o := resolveOptions(cfg, func(o *Options) { o.ReplayLimit = 100 })
	if serviceSeen != serviceID {
		t.Errorf("ServiceOptions saw %q", serviceSeen)
	}
	if o.Region != "eu-west-1" || o.ClientLogMode != aws.LogRetries || o.AppID != "my-app" || o.RetryMaxAttempts != 7 {
		t.Errorf("fields not taken from cfg: %+v", o)
	}
	// The shared HTTP client (with its whole-request Timeout) only lends
	// the engine its roots and proxy.
	if o.rootCAs != roots {
		t.Error("the roots of cfg's HTTP client were not taken")
	}
	if o.cfgProxy == nil {
		t.Error("the proxy of cfg's HTTP client was not taken")
	} else if u, err := o.engineConfig().Proxy(&http.Request{URL: &url.URL{Scheme: "https", Host: "h:1"}}); err != nil || u.String() != proxyURL.String() {
		t.Errorf("engine proxy = %v, %v; want %v", u, err, proxyURL)
	}
	if o.MaxPartSize != 1234 || o.ReplayLimit != 100 {
		t.Errorf("ServiceOptions then optFns: MaxPartSize=%d ReplayLimit=%d", o.MaxPartSize, o.ReplayLimit)
	}
	cache, ok := o.Credentials.(*aws.CredentialsCache)
	if !ok || !cache.IsCredentialsProvider(creds) {
		t.Fatalf("Credentials = %T, want a cache around the static provider", o.Credentials)
	}
	v, err := o.Credentials.Retrieve(context.Background())
	if err != nil || v.AccessKeyID != "AKID" || v.SessionToken != "TOKEN" {
		t.Errorf("Retrieve = %+v, %v", v, err)
	}

	// A non-*http.Client HTTPClient lends nothing.
	o = resolveOptions(aws.Config{HTTPClient: doerFunc(nil)})
	if o.rootCAs != nil || o.cfgProxy != nil {
		t.Error("took roots or a proxy from a non-*http.Client HTTPClient")
	}
}

type doerFunc func(*http.Request) (*http.Response, error)

func (f doerFunc) Do(r *http.Request) (*http.Response, error) { return f(r) }

func TestResolveOptionsCredentialsWrapping(t *testing.T) {
	clearEndpointEnv(t)
	static := credentials.NewStaticCredentialsProvider("A", "S", "")
	cache := aws.NewCredentialsCache(static)
	cases := []struct {
		name string
		cfg  aws.CredentialsProvider
		fn   func(*Options)
		want func(aws.CredentialsProvider) bool
	}{
		{"nil stays nil", nil, nil, func(p aws.CredentialsProvider) bool { return p == nil }},
		{"cache kept", cache, nil, func(p aws.CredentialsProvider) bool { return p == cache }},
		{"anonymous kept", aws.AnonymousCredentials{}, nil, func(p aws.CredentialsProvider) bool {
			_, ok := p.(aws.AnonymousCredentials)
			return ok
		}},
		{"provider from optFns wrapped", nil, func(o *Options) { o.Credentials = static }, func(p aws.CredentialsProvider) bool {
			c, ok := p.(*aws.CredentialsCache)
			return ok && c.IsCredentialsProvider(static)
		}},
	}
	for _, tc := range cases {
		var fns []func(*Options)
		if tc.fn != nil {
			fns = append(fns, tc.fn)
		}
		o := resolveOptions(aws.Config{Credentials: tc.cfg}, fns...)
		if !tc.want(o.Credentials) {
			t.Errorf("%s: got %T", tc.name, o.Credentials)
		}
	}
}

// TestResolveOptionsLoadDefaultConfig resolves from a real
// config.LoadDefaultConfig with environment variables and temporary shared
// files (no network).
func TestResolveOptionsLoadDefaultConfig(t *testing.T) {
	dir := t.TempDir()
	configFile := filepath.Join(dir, "config")
	credsFile := filepath.Join(dir, "credentials")
	writeFile(t, configFile, `[default]
region = ap-southeast-2
services = local

[services local]
sagemaker_runtime_http2 =
  endpoint_url = https://from-shared-config.example:9443
`)
	writeFile(t, credsFile, "")

	setBaseEnv := func(t *testing.T) {
		for _, k := range []string{
			"AWS_PROFILE", "AWS_DEFAULT_PROFILE", "AWS_REGION", "AWS_DEFAULT_REGION", "AWS_USE_FIPS_ENDPOINT",
			"AWS_USE_DUALSTACK_ENDPOINT", "AWS_MAX_ATTEMPTS", "AWS_IGNORE_CONFIGURED_ENDPOINT_URLS",
			"AWS_CA_BUNDLE", "AWS_ROLE_ARN", "AWS_WEB_IDENTITY_TOKEN_FILE", "AWS_CONTAINER_CREDENTIALS_FULL_URI",
			"AWS_CONTAINER_CREDENTIALS_RELATIVE_URI", "AWS_APP_ID",
		} {
			t.Setenv(k, "")
			os.Unsetenv(k)
		}
		clearEndpointEnv(t)
		t.Setenv("AWS_EC2_METADATA_DISABLED", "true")
		t.Setenv("AWS_CONFIG_FILE", configFile)
		t.Setenv("AWS_SHARED_CREDENTIALS_FILE", credsFile)
		t.Setenv("AWS_ACCESS_KEY_ID", "AKIDENV")
		t.Setenv("AWS_SECRET_ACCESS_KEY", "SECRETENV")
		t.Setenv("AWS_SESSION_TOKEN", "TOKENENV")
	}
	load := func(t *testing.T) Options {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		cfg, err := config.LoadDefaultConfig(ctx)
		if err != nil {
			t.Fatal(err)
		}
		return resolveOptions(cfg)
	}

	t.Run("shared config", func(t *testing.T) {
		setBaseEnv(t)
		o := load(t)
		if o.Region != "ap-southeast-2" {
			t.Errorf("Region = %q", o.Region)
		}
		if o.BaseEndpoint == nil || *o.BaseEndpoint != "https://from-shared-config.example:9443" {
			t.Errorf("BaseEndpoint = %v", o.BaseEndpoint)
		}
		v, err := o.Credentials.Retrieve(context.Background())
		if err != nil || v.AccessKeyID != "AKIDENV" || v.SecretAccessKey != "SECRETENV" || v.SessionToken != "TOKENENV" {
			t.Errorf("Retrieve = %+v, %v", v, err)
		}
		if _, ok := o.Credentials.(*aws.CredentialsCache); !ok {
			t.Errorf("Credentials = %T, want a cache", o.Credentials)
		}
	})

	t.Run("service env beats shared config", func(t *testing.T) {
		setBaseEnv(t)
		t.Setenv(envServiceEndpoint, "https://from-env.example:8443")
		if o := load(t); o.BaseEndpoint == nil || *o.BaseEndpoint != "https://from-env.example:8443" {
			t.Errorf("BaseEndpoint = %v", o.BaseEndpoint)
		}
	})

	t.Run("global env beats shared service config", func(t *testing.T) {
		setBaseEnv(t)
		t.Setenv(envGlobalEndpoint, "https://global.example")
		if o := load(t); o.BaseEndpoint == nil || *o.BaseEndpoint != "https://global.example" {
			t.Errorf("BaseEndpoint = %v", o.BaseEndpoint)
		}
	})

	t.Run("ignore configured endpoints", func(t *testing.T) {
		setBaseEnv(t)
		t.Setenv("AWS_IGNORE_CONFIGURED_ENDPOINT_URLS", "true")
		t.Setenv(envServiceEndpoint, "https://from-env.example:8443")
		if o := load(t); o.BaseEndpoint != nil {
			t.Errorf("BaseEndpoint = %q, want nil", *o.BaseEndpoint)
		}
	})

	t.Run("fips dual-stack region retries from env", func(t *testing.T) {
		setBaseEnv(t)
		t.Setenv("AWS_CONFIG_FILE", filepath.Join(dir, "missing"))
		t.Setenv("AWS_REGION", "us-gov-west-1")
		t.Setenv("AWS_USE_FIPS_ENDPOINT", "true")
		t.Setenv("AWS_USE_DUALSTACK_ENDPOINT", "true")
		t.Setenv("AWS_MAX_ATTEMPTS", "5")
		o := load(t)
		if o.UseFIPSEndpoint != aws.FIPSEndpointStateEnabled || o.UseDualStackEndpoint != aws.DualStackEndpointStateEnabled {
			t.Errorf("fips=%v ds=%v", o.UseFIPSEndpoint, o.UseDualStackEndpoint)
		}
		if o.RetryMaxAttempts != 5 {
			t.Errorf("RetryMaxAttempts = %d", o.RetryMaxAttempts)
		}
		if o.BaseEndpoint != nil {
			t.Errorf("BaseEndpoint = %q", *o.BaseEndpoint)
		}
		u, err := o.endpoint()
		if err != nil || u.String() != "https://runtime-fips.sagemaker.us-gov-west-1.api.aws:8443" {
			t.Errorf("endpoint = %v, %v", u, err)
		}
	})

	t.Run("NewFromConfig", func(t *testing.T) {
		setBaseEnv(t)
		ctx := context.Background()
		cfg, err := config.LoadDefaultConfig(ctx, config.WithRegion("us-west-2"))
		if err != nil {
			t.Fatal(err)
		}
		c := NewFromConfig(cfg, func(o *Options) { o.MaxPartSize = 4096 })
		if c.options.Region != "us-west-2" || c.options.MaxPartSize != 4096 || c.options.MaxMessageSize != defaultMaxMessageSize {
			t.Errorf("client options = %+v", c.options)
		}
	})
}

func writeFile(t *testing.T, name, content string) {
	t.Helper()
	if err := os.WriteFile(name, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
}
