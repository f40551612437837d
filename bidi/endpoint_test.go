package bidi

import (
	"errors"
	"net/url"
	"strings"
	"testing"
)

func strPtr(s string) *string { return &s }

// TestEndpointRuleSetCases runs every smithy.rules#endpointTests case of
// the SageMaker Runtime HTTP2 model (aws-sdk-js-v3
// codegen/sdk-codegen/aws-models/sagemaker-runtime-http2.json).
func TestEndpointRuleSetCases(t *testing.T) {
	cases := []struct {
		doc       string
		region    string
		fips, ds  bool
		endpoint  *string
		wantURL   string
		wantError string
	}{
		{doc: "For custom endpoint with region not set and fips disabled", endpoint: strPtr("https://example.com"), wantURL: "https://example.com"},
		{doc: "For custom endpoint with fips enabled", endpoint: strPtr("https://example.com"), fips: true, wantError: "Invalid Configuration: FIPS and custom endpoint are not supported"},
		{doc: "For custom endpoint with fips disabled and dualstack enabled", endpoint: strPtr("https://example.com"), ds: true, wantError: "Invalid Configuration: Dualstack and custom endpoint are not supported"},
		{doc: "For region us-east-1 with FIPS enabled and DualStack enabled", region: "us-east-1", fips: true, ds: true, wantURL: "https://runtime-fips.sagemaker.us-east-1.api.aws:8443"},
		{doc: "For region us-east-1 with FIPS enabled and DualStack disabled", region: "us-east-1", fips: true, wantURL: "https://runtime-fips.sagemaker.us-east-1.amazonaws.com:8443"},
		{doc: "For region us-east-1 with FIPS disabled and DualStack enabled", region: "us-east-1", ds: true, wantURL: "https://runtime.sagemaker.us-east-1.api.aws:8443"},
		{doc: "For region us-east-1 with FIPS disabled and DualStack disabled", region: "us-east-1", wantURL: "https://runtime.sagemaker.us-east-1.amazonaws.com:8443"},
		{doc: "For region cn-northwest-1 with FIPS enabled and DualStack enabled", region: "cn-northwest-1", fips: true, ds: true, wantURL: "https://runtime-fips.sagemaker.cn-northwest-1.api.amazonwebservices.com.cn:8443"},
		{doc: "For region cn-northwest-1 with FIPS enabled and DualStack disabled", region: "cn-northwest-1", fips: true, wantURL: "https://runtime-fips.sagemaker.cn-northwest-1.amazonaws.com.cn:8443"},
		{doc: "For region cn-northwest-1 with FIPS disabled and DualStack enabled", region: "cn-northwest-1", ds: true, wantURL: "https://runtime.sagemaker.cn-northwest-1.api.amazonwebservices.com.cn:8443"},
		{doc: "For region cn-northwest-1 with FIPS disabled and DualStack disabled", region: "cn-northwest-1", wantURL: "https://runtime.sagemaker.cn-northwest-1.amazonaws.com.cn:8443"},
		{doc: "For region eusc-de-east-1 with FIPS enabled and DualStack disabled", region: "eusc-de-east-1", fips: true, wantURL: "https://runtime-fips.sagemaker.eusc-de-east-1.amazonaws.eu:8443"},
		{doc: "For region eusc-de-east-1 with FIPS disabled and DualStack disabled", region: "eusc-de-east-1", wantURL: "https://runtime.sagemaker.eusc-de-east-1.amazonaws.eu:8443"},
		{doc: "For region us-iso-east-1 with FIPS enabled and DualStack disabled", region: "us-iso-east-1", fips: true, wantURL: "https://runtime-fips.sagemaker.us-iso-east-1.c2s.ic.gov:8443"},
		{doc: "For region us-iso-east-1 with FIPS disabled and DualStack disabled", region: "us-iso-east-1", wantURL: "https://runtime.sagemaker.us-iso-east-1.c2s.ic.gov:8443"},
		{doc: "For region us-isob-east-1 with FIPS enabled and DualStack disabled", region: "us-isob-east-1", fips: true, wantURL: "https://runtime-fips.sagemaker.us-isob-east-1.sc2s.sgov.gov:8443"},
		{doc: "For region us-isob-east-1 with FIPS disabled and DualStack disabled", region: "us-isob-east-1", wantURL: "https://runtime.sagemaker.us-isob-east-1.sc2s.sgov.gov:8443"},
		{doc: "For region eu-isoe-west-1 with FIPS enabled and DualStack disabled", region: "eu-isoe-west-1", fips: true, wantURL: "https://runtime.sagemaker-fips.eu-isoe-west-1.cloud.adc-e.uk"},
		{doc: "For region eu-isoe-west-1 with FIPS disabled and DualStack disabled", region: "eu-isoe-west-1", wantURL: "https://runtime.sagemaker.eu-isoe-west-1.cloud.adc-e.uk"},
		{doc: "For region us-isof-south-1 with FIPS enabled and DualStack disabled", region: "us-isof-south-1", fips: true, wantURL: "https://runtime-fips.sagemaker.us-isof-south-1.csp.hci.ic.gov:8443"},
		{doc: "For region us-isof-south-1 with FIPS disabled and DualStack disabled", region: "us-isof-south-1", wantURL: "https://runtime.sagemaker.us-isof-south-1.csp.hci.ic.gov:8443"},
		{doc: "For region us-gov-west-1 with FIPS enabled and DualStack enabled", region: "us-gov-west-1", fips: true, ds: true, wantURL: "https://runtime-fips.sagemaker.us-gov-west-1.api.aws:8443"},
		{doc: "For region us-gov-west-1 with FIPS enabled and DualStack disabled", region: "us-gov-west-1", fips: true, wantURL: "https://runtime-fips.sagemaker.us-gov-west-1.amazonaws.com:8443"},
		{doc: "For region us-gov-west-1 with FIPS disabled and DualStack enabled", region: "us-gov-west-1", ds: true, wantURL: "https://runtime.sagemaker.us-gov-west-1.api.aws:8443"},
		{doc: "For region us-gov-west-1 with FIPS disabled and DualStack disabled", region: "us-gov-west-1", wantURL: "https://runtime.sagemaker.us-gov-west-1.amazonaws.com:8443"},
		{doc: "Missing region", wantError: "Invalid Configuration: Missing Region"},
	}
	for _, tc := range cases {
		t.Run(tc.doc, func(t *testing.T) {
			checkEndpoint(t, tc.region, tc.fips, tc.ds, tc.endpoint, tc.wantURL, tc.wantError)
		})
	}
}

func checkEndpoint(t *testing.T, region string, fips, ds bool, base *string, wantURL, wantError string) {
	t.Helper()
	u, err := resolveEndpoint(region, fips, ds, base)
	if wantError != "" {
		var ee *endpointError
		if !errors.As(err, &ee) {
			t.Fatalf("resolveEndpoint(%q, %v, %v) = %v, %v; want *EndpointError", region, fips, ds, u, err)
		}
		if ee.Message != wantError {
			t.Fatalf("error message = %q, want %q", ee.Message, wantError)
		}
		if !strings.HasPrefix(err.Error(), "bidi: ") {
			t.Errorf("error %q lacks package prefix", err)
		}
		return
	}
	if err != nil {
		t.Fatalf("resolveEndpoint(%q, %v, %v): %v", region, fips, ds, err)
	}
	if got := u.String(); got != wantURL {
		t.Fatalf("resolveEndpoint(%q, fips=%v, ds=%v) = %s, want %s", region, fips, ds, got, wantURL)
	}
}

// TestEndpointAllPartitions covers every partition, known region and
// pattern-matched region, with every FIPS/dual-stack combination.
func TestEndpointAllPartitions(t *testing.T) {
	cases := []struct {
		region         string
		dns, dualDNS   string
		port8443       bool
		wantPartition  string
		patternMatched bool
	}{
		{"us-west-2", "amazonaws.com", "api.aws", true, "aws", false},
		{"ap-southeast-7", "amazonaws.com", "api.aws", true, "aws", false},
		{"eu-west-9", "amazonaws.com", "api.aws", true, "aws", true},
		{"cn-north-1", "amazonaws.com.cn", "api.amazonwebservices.com.cn", true, "aws-cn", false},
		{"cn-south-7", "amazonaws.com.cn", "api.amazonwebservices.com.cn", true, "aws-cn", true},
		{"us-gov-east-1", "amazonaws.com", "api.aws", true, "aws-us-gov", false},
		{"us-gov-south-3", "amazonaws.com", "api.aws", true, "aws-us-gov", true},
		{"us-iso-west-1", "c2s.ic.gov", "api.aws.ic.gov", true, "aws-iso", false},
		{"us-isob-west-1", "sc2s.sgov.gov", "api.aws.scloud", true, "aws-iso-b", false},
		{"us-isof-east-1", "csp.hci.ic.gov", "api.aws.hci.ic.gov", true, "aws-iso-f", false},
		{"us-isof-north-2", "csp.hci.ic.gov", "api.aws.hci.ic.gov", true, "aws-iso-f", true},
		{"eusc-de-east-1", "amazonaws.eu", "api.amazonwebservices.eu", true, "aws-eusc", false},
		{"eusc-de-west-2", "amazonaws.eu", "api.amazonwebservices.eu", true, "aws-eusc", true},
		{"eu-isoe-west-1", "cloud.adc-e.uk", "api.cloud-aws.adc-e.uk", false, "aws-iso-e", false},
		{"eu-isoe-north-4", "cloud.adc-e.uk", "api.cloud-aws.adc-e.uk", false, "aws-iso-e", true},
		// Matches no pattern: the rules engine falls back to aws.
		{"xx-unknown-1", "amazonaws.com", "api.aws", true, "aws", true},
		{"aws-global", "amazonaws.com", "api.aws", true, "aws", false},
	}
	for _, tc := range cases {
		if p := partitionFor(tc.region); p.name != tc.wantPartition {
			t.Errorf("partitionFor(%q) = %s, want %s", tc.region, p.name, tc.wantPartition)
		}
		for _, fips := range []bool{false, true} {
			for _, ds := range []bool{false, true} {
				dns := tc.dns
				if ds {
					dns = tc.dualDNS
				}
				var want string
				switch {
				case tc.port8443 && fips:
					want = "https://runtime-fips.sagemaker." + tc.region + "." + dns + ":8443"
				case tc.port8443:
					want = "https://runtime.sagemaker." + tc.region + "." + dns + ":8443"
				case fips:
					want = "https://runtime.sagemaker-fips." + tc.region + "." + dns
				default:
					want = "https://runtime.sagemaker." + tc.region + "." + dns
				}
				t.Run(tc.region, func(t *testing.T) {
					checkEndpoint(t, tc.region, fips, ds, nil, want, "")
				})
			}
		}
	}
}

// TestEndpointListedPartitionsUse8443 guards the failure mode that makes
// real clients hang: a listed partition resolved without :8443.
func TestEndpointListedPartitionsUse8443(t *testing.T) {
	listed := map[string]bool{"aws": true, "aws-cn": true, "aws-us-gov": true, "aws-iso": true, "aws-iso-b": true, "aws-iso-f": true, "aws-eusc": true}
	for _, p := range partitions {
		if p.port8443 != listed[p.name] {
			t.Errorf("partition %s: port8443 = %v, want %v", p.name, p.port8443, listed[p.name])
		}
		for _, r := range p.regions {
			for _, fips := range []bool{false, true} {
				for _, ds := range []bool{false, true} {
					u, err := resolveEndpoint(r, fips, ds, nil)
					if err != nil {
						t.Fatalf("%s: %v", r, err)
					}
					if got := u.Port() == "8443"; got != listed[p.name] {
						t.Errorf("%s fips=%v ds=%v: %s (port 8443: %v, want %v)", r, fips, ds, u, got, listed[p.name])
					}
					if u.Scheme != "https" {
						t.Errorf("%s: scheme %q", r, u.Scheme)
					}
				}
			}
		}
	}
}

func TestEndpointPartitionWithoutSupport(t *testing.T) {
	saved := partitions
	t.Cleanup(func() { partitions = saved })
	partitions = append([]partition(nil), saved...)
	for i := range partitions {
		if partitions[i].name == "aws-iso-e" {
			partitions[i].supportsFIPS = false
			partitions[i].supportsDualStack = false
		}
	}
	cases := []struct {
		fips, ds bool
		want     string
	}{
		{true, false, "FIPS is enabled but this partition does not support FIPS"},
		{false, true, "DualStack is enabled but this partition does not support DualStack"},
		{true, true, "FIPS and DualStack are enabled, but this partition does not support one or both"},
	}
	for _, tc := range cases {
		checkEndpoint(t, "eu-isoe-west-1", tc.fips, tc.ds, nil, "", tc.want)
	}
	checkEndpoint(t, "eu-isoe-west-1", false, false, nil, "https://runtime.sagemaker.eu-isoe-west-1.cloud.adc-e.uk", "")
}

func TestEndpointInvalidRegion(t *testing.T) {
	for _, r := range []string{
		"US-EAST-1", "us east 1", "us-east-1.", "us-east-1.evil.com", "-us-east-1", "us-east-1-",
		"us/east", "us-east-1:443", strings.Repeat("a", 64), "ü-east-1",
	} {
		_, err := resolveEndpoint(r, false, false, nil)
		var ee *endpointError
		if !errors.As(err, &ee) {
			t.Errorf("resolveEndpoint(%q) = %v, want *EndpointError", r, err)
		}
	}
	for _, r := range []string{"us-east-1", strings.Repeat("a", 63), "local"} {
		if _, err := resolveEndpoint(r, false, false, nil); err != nil {
			t.Errorf("resolveEndpoint(%q): %v", r, err)
		}
	}
}

func TestEndpointCustom(t *testing.T) {
	ok := []string{
		"https://127.0.0.1:8443",
		"https://example.com",
		"https://example.com/prefix/",
		"http://localhost:9000",
		"https://[::1]:8443",
	}
	for _, s := range ok {
		u, err := resolveEndpoint("", false, false, &s)
		if err != nil {
			t.Errorf("resolveEndpoint(base=%q): %v", s, err)
			continue
		}
		if u.String() != s {
			t.Errorf("resolveEndpoint(base=%q) = %s, want it unchanged", s, u)
		}
	}
	// A custom endpoint wins over a region.
	checkEndpoint(t, "us-east-1", false, false, strPtr("https://example.com"), "https://example.com", "")

	bad := []string{"", "ftp://example.com", "example.com:8443", "https://", "https://host/?a=b", "https://host/#frag",
		"https://user:hunter2secret@host", "https://host:port", "://"}
	for _, s := range bad {
		_, err := resolveEndpoint("us-east-1", false, false, &s)
		var ee *endpointError
		if !errors.As(err, &ee) {
			t.Errorf("resolveEndpoint(base=%q) = %v, want *EndpointError", s, err)
			continue
		}
		if s == "https://host:port" && errors.Unwrap(err) == nil {
			t.Errorf("parse error not wrapped: %v", err)
		}
		if strings.Contains(err.Error(), "hunter2secret") {
			t.Errorf("error %q repeats the password", err)
		}
	}
}

func TestEndpointNormalizeFIPSRegion(t *testing.T) {
	cases := []struct {
		in, want string
		fips     bool
	}{
		{"us-east-1", "us-east-1", false},
		{"fips-us-east-1", "us-east-1", true},
		{"us-east-1-fips", "us-east-1", true},
		{"us-fips-east-1", "us-east-1", true},
		{"fips-us-gov-west-1", "us-gov-west-1", true},
		{"", "", false},
	}
	for _, tc := range cases {
		got, fips := normalizeFIPSRegion(tc.in)
		if got != tc.want || fips != tc.fips {
			t.Errorf("normalizeFIPSRegion(%q) = %q, %v; want %q, %v", tc.in, got, fips, tc.want, tc.fips)
		}
	}
}

func TestEndpointInvocationURL(t *testing.T) {
	cases := []struct {
		base, name, want string
	}{
		{"https://runtime.sagemaker.us-west-2.amazonaws.com:8443", "my-endpoint",
			"https://runtime.sagemaker.us-west-2.amazonaws.com:8443/endpoints/my-endpoint/invocations-bidirectional-stream"},
		{"https://127.0.0.1:9443/", "e1", "https://127.0.0.1:9443/endpoints/e1/invocations-bidirectional-stream"},
		{"https://proxy.example/sm/", "e1", "https://proxy.example/sm/endpoints/e1/invocations-bidirectional-stream"},
		{"https://proxy.example/a%2Fb", "e1", "https://proxy.example/a%2Fb/endpoints/e1/invocations-bidirectional-stream"},
		// Not reachable after validation, but escaped as an httpLabel.
		{"https://h", "a/b c", "https://h/endpoints/a%2Fb%20c/invocations-bidirectional-stream"},
	}
	for _, tc := range cases {
		base, err := parseBaseEndpoint(tc.base)
		if err != nil {
			t.Fatal(err)
		}
		before := base.String()
		u := invocationURL(base, tc.name)
		if got := u.String(); got != tc.want {
			t.Errorf("invocationURL(%s, %q) = %s, want %s", tc.base, tc.name, got, tc.want)
		}
		if base.String() != before {
			t.Errorf("invocationURL modified base: %s", base)
		}
	}
}

// TestClientReusesInvocationURL opens endpoints in turns on one client's
// URL cache: the same endpoint twice in a row shares its URL, and every
// answer is its endpoint's.
func TestClientReusesInvocationURL(t *testing.T) {
	base, err := parseBaseEndpoint("https://runtime.sagemaker.us-west-2.amazonaws.com:8443")
	if err != nil {
		t.Fatal(err)
	}
	c := &Client{endpoint: base}
	var prevName string
	var prev *url.URL
	for i, name := range []string{"a", "a", "b", "a", "b", "b"} {
		u := c.invocationURL(name)
		if want := invocationURL(base, name).String(); u.String() != want {
			t.Fatalf("open %d of %q: URL %s, want %s", i, name, u, want)
		}
		if name == prevName && u != prev {
			t.Fatalf("open %d of %q: a new URL for the endpoint opened last", i, name)
		}
		prevName, prev = name, u
	}
}
