package bidi

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/smithy-go/logging"
)

func TestOptionsDefaults(t *testing.T) {
	var o Options
	o.setDefaults()
	if o.MaxPartSize != defaultMaxPartSize || o.MaxMessageSize != defaultMaxMessageSize ||
		o.RetryMaxAttempts != defaultRetryMaxAttempts || o.RetryMaxBackoff != defaultRetryMaxBackoff ||
		o.ReplayLimit != defaultReplayLimit || o.HealthCheckInterval != defaultHealthCheckInterval ||
		o.HealthCheckTimeout != defaultHealthCheckTimeout {
		t.Errorf("defaults not applied: %+v", o)
	}
	if o.Padding == nil || o.Padding(100) != BucketPadding(100) || o.Padding(5000) != BucketPadding(5000) {
		t.Error("Padding not defaulted to BucketPadding")
	}
	if _, ok := o.Logger.(logging.Nop); !ok {
		t.Errorf("Logger = %T", o.Logger)
	}
	if o.Now == nil || time.Since(o.Now()) > time.Minute {
		t.Error("Now not defaulted to time.Now")
	}

	// Explicit values, including the negative "disabled" ones, survive.
	fixed := time.Unix(1, 0)
	o = Options{
		MaxPartSize: 10, MaxMessageSize: 20, RetryMaxAttempts: 1, RetryMaxBackoff: time.Second,
		ReplayLimit: -1, HealthCheckInterval: -1, HealthCheckTimeout: time.Second,
		Padding: noPadding, Now: func() time.Time { return fixed },
	}
	o.setDefaults()
	if o.MaxPartSize != 10 || o.MaxMessageSize != 20 || o.RetryMaxAttempts != 1 || o.ReplayLimit != -1 ||
		o.HealthCheckInterval != -1 || o.HealthCheckTimeout != time.Second || !o.Now().Equal(fixed) {
		t.Errorf("explicit values changed: %+v", o)
	}
	if o.Padding == nil || o.Padding(100) != 0 {
		t.Error("an explicit Padding changed")
	}
}

func TestOptionsFIPSPseudoRegion(t *testing.T) {
	o := Options{Region: "fips-us-east-2"}
	o.setDefaults()
	if o.Region != "us-east-2" || o.UseFIPSEndpoint != aws.FIPSEndpointStateEnabled {
		t.Fatalf("Region=%q fips=%v", o.Region, o.UseFIPSEndpoint)
	}
	u, err := o.endpoint()
	if err != nil || u.String() != "https://runtime-fips.sagemaker.us-east-2.amazonaws.com:8443" {
		t.Fatalf("endpoint = %v, %v", u, err)
	}
	// With a custom endpoint the pseudo-region is a FIPS conflict.
	o = Options{Region: "us-east-2-fips", BaseEndpoint: strPtr("https://example.com")}
	o.setDefaults()
	var ee *endpointError
	if _, err := o.endpoint(); !errors.As(err, &ee) {
		t.Fatalf("endpoint = %v, want *EndpointError", err)
	}
}

func TestOptionsValidate(t *testing.T) {
	creds := credentials.NewStaticCredentialsProvider("A", "S", "")
	cases := []struct {
		name  string
		mod   func(*Options)
		field string // "" = valid
	}{
		{"defaults", func(*Options) {}, ""},
		{"part at limit", func(o *Options) { o.MaxPartSize = maxPartSizeLimit }, ""},
		{"part over limit", func(o *Options) { o.MaxPartSize = maxPartSizeLimit + 1 }, "MaxPartSize"},
		{"part negative", func(o *Options) { o.MaxPartSize = -1 }, "MaxPartSize"},
		{"message negative", func(o *Options) { o.MaxMessageSize = -1 }, "MaxMessageSize"},
		{"attempts negative", func(o *Options) { o.RetryMaxAttempts = -1 }, "RetryMaxAttempts"},
		{"backoff negative", func(o *Options) { o.RetryMaxBackoff = -time.Second }, "RetryMaxBackoff"},
		{"timeout negative", func(o *Options) { o.HealthCheckTimeout = -time.Second }, "HealthCheckTimeout"},
		{"health checks disabled", func(o *Options) { o.HealthCheckInterval = -1 }, ""},
		{"replay disabled", func(o *Options) { o.ReplayLimit = -1 }, ""},
		{"no credentials", func(o *Options) { o.Credentials = nil }, "credentials"},
		{"custom endpoint, no region", func(o *Options) { o.Region = ""; o.BaseEndpoint = aws.String("https://127.0.0.1:8443") }, "region"},
		{"custom endpoint with region", func(o *Options) { o.BaseEndpoint = aws.String("https://127.0.0.1:8443") }, ""},
	}
	for _, tc := range cases {
		o := Options{Credentials: creds, Region: "us-west-2"}
		tc.mod(&o)
		o.setDefaults()
		err := o.validate()
		if tc.field == "" {
			if err != nil {
				t.Errorf("%s: %v", tc.name, err)
			}
			continue
		}
		if err == nil || !strings.Contains(err.Error(), tc.field) || !strings.HasPrefix(err.Error(), "bidi: ") {
			t.Errorf("%s: err = %v, want one naming %s", tc.name, err, tc.field)
		}
	}
	o := Options{}
	o.setDefaults()
	if err := o.validate(); !errors.Is(err, errNoCredentials) {
		t.Errorf("no credentials: %v", err)
	}
	o = Options{Credentials: creds, BaseEndpoint: aws.String("https://127.0.0.1:8443")}
	o.setDefaults()
	if err := o.validate(); !errors.Is(err, errNoRegion) {
		t.Errorf("custom endpoint without a region: %v, want ErrNoRegion", err)
	}
}

func TestOptionsCopy(t *testing.T) {
	o := Options{BaseEndpoint: strPtr("https://a")}
	c := o.clone()
	*c.BaseEndpoint = "https://b"
	if *o.BaseEndpoint != "https://a" {
		t.Error("Copy shares BaseEndpoint")
	}
	var empty Options
	if empty.clone().BaseEndpoint != nil {
		t.Error("Copy invented a BaseEndpoint")
	}
}

// TestOptionsNegativeText checks the text of the errors of the fields
// that must not be negative: the field's name and its value as set.
func TestOptionsNegativeText(t *testing.T) {
	for _, tc := range []struct {
		mod  func(*Options)
		want string
	}{
		{func(o *Options) { o.MaxMessageSize = -2 }, "bidi: Options.MaxMessageSize -2 is negative"},
		{func(o *Options) { o.MaxStreamsPerConnection = -3 }, "bidi: Options.MaxStreamsPerConnection -3 is negative"},
		{func(o *Options) { o.DialTimeout = -time.Second }, "bidi: Options.DialTimeout -1s is negative"},
		{func(o *Options) { o.RetryMaxBackoff = -time.Millisecond; o.DialTimeout = -1 }, "bidi: Options.RetryMaxBackoff -1ms is negative"},
	} {
		o := Options{Credentials: aws.AnonymousCredentials{}, Region: "us-west-2"}
		tc.mod(&o)
		if err := o.validate(); err == nil || err.Error() != tc.want {
			t.Errorf("validate() = %v, want %q", err, tc.want)
		}
	}
}
