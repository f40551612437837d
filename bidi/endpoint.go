package bidi

import (
	"errors"
	"fmt"
	"net/url"
	"regexp"
	"slices"
	"strings"
)

// endpointError reports an endpoint configuration that the service's
// endpoint rules reject (custom endpoint with FIPS or dual-stack, missing
// or invalid region, a partition without FIPS or dual-stack support) or a
// BaseEndpoint that is not a usable URL. It is returned before any I/O.
type endpointError struct {
	// Message describes the problem, using the rule set's wording where
	// there is one (for example "Invalid Configuration: Missing Region").
	Message string
	// Err is an underlying parse error, if any.
	Err error
}

// Error implements the error interface.
func (e *endpointError) Error() string {
	s := "bidi: endpoint: " + e.Message
	if e.Err != nil {
		s += ": " + e.Err.Error()
	}
	return s
}

// Unwrap returns Err.
func (e *endpointError) Unwrap() error { return e.Err }

// partition holds the endpoint facts of one AWS partition, from
// aws-sdk-go-v2's internal/endpoints/awsrulesfn/partitions.json.
type partition struct {
	name               string
	regions            []string       // known regions, matched first
	regionRegex        *regexp.Regexp // then the partition's region pattern
	dnsSuffix          string
	dualStackDNSSuffix string
	supportsFIPS       bool
	supportsDualStack  bool
	// port8443 is set for the partitions the SageMaker Runtime HTTP2 rule
	// set lists explicitly; they serve the API on port 8443 and have FIPS
	// hosts named runtime-fips.sagemaker. Other partitions fall through to
	// the rule set's generic branch: default port, runtime.sagemaker-fips.
	port8443 bool
}

// partitions is ordered as partitions.json; the first partition is the
// default for regions that match nothing.
var partitions = []partition{
	{
		name: "aws",
		regions: []string{
			"af-south-1", "ap-east-1", "ap-east-2", "ap-northeast-1", "ap-northeast-2",
			"ap-northeast-3", "ap-south-1", "ap-south-2", "ap-southeast-1", "ap-southeast-2",
			"ap-southeast-3", "ap-southeast-4", "ap-southeast-5", "ap-southeast-6",
			"ap-southeast-7", "aws-global", "ca-central-1", "ca-west-1", "eu-central-1",
			"eu-central-2", "eu-north-1", "eu-south-1", "eu-south-2", "eu-west-1", "eu-west-2",
			"eu-west-3", "il-central-1", "me-central-1", "me-south-1", "mx-central-1",
			"sa-east-1", "us-east-1", "us-east-2", "us-west-1", "us-west-2",
		},
		regionRegex:        regexp.MustCompile(`^(us|eu|ap|sa|ca|me|af|il|mx)\-\w+\-\d+$`),
		dnsSuffix:          "amazonaws.com",
		dualStackDNSSuffix: "api.aws",
		supportsFIPS:       true,
		supportsDualStack:  true,
		port8443:           true,
	},
	{
		name:               "aws-cn",
		regions:            []string{"aws-cn-global", "cn-north-1", "cn-northwest-1"},
		regionRegex:        regexp.MustCompile(`^cn\-\w+\-\d+$`),
		dnsSuffix:          "amazonaws.com.cn",
		dualStackDNSSuffix: "api.amazonwebservices.com.cn",
		supportsFIPS:       true,
		supportsDualStack:  true,
		port8443:           true,
	},
	{
		name:               "aws-eusc",
		regions:            []string{"eusc-de-east-1"},
		regionRegex:        regexp.MustCompile(`^eusc\-(de)\-\w+\-\d+$`),
		dnsSuffix:          "amazonaws.eu",
		dualStackDNSSuffix: "api.amazonwebservices.eu",
		supportsFIPS:       true,
		supportsDualStack:  true,
		port8443:           true,
	},
	{
		name:               "aws-iso",
		regions:            []string{"aws-iso-global", "us-iso-east-1", "us-iso-west-1"},
		regionRegex:        regexp.MustCompile(`^us\-iso\-\w+\-\d+$`),
		dnsSuffix:          "c2s.ic.gov",
		dualStackDNSSuffix: "api.aws.ic.gov",
		supportsFIPS:       true,
		supportsDualStack:  true,
		port8443:           true,
	},
	{
		name:               "aws-iso-b",
		regions:            []string{"aws-iso-b-global", "us-isob-east-1", "us-isob-west-1"},
		regionRegex:        regexp.MustCompile(`^us\-isob\-\w+\-\d+$`),
		dnsSuffix:          "sc2s.sgov.gov",
		dualStackDNSSuffix: "api.aws.scloud",
		supportsFIPS:       true,
		supportsDualStack:  true,
		port8443:           true,
	},
	{
		name:               "aws-iso-e",
		regions:            []string{"aws-iso-e-global", "eu-isoe-west-1"},
		regionRegex:        regexp.MustCompile(`^eu\-isoe\-\w+\-\d+$`),
		dnsSuffix:          "cloud.adc-e.uk",
		dualStackDNSSuffix: "api.cloud-aws.adc-e.uk",
		supportsFIPS:       true,
		supportsDualStack:  true,
	},
	{
		name:               "aws-iso-f",
		regions:            []string{"aws-iso-f-global", "us-isof-east-1", "us-isof-south-1"},
		regionRegex:        regexp.MustCompile(`^us\-isof\-\w+\-\d+$`),
		dnsSuffix:          "csp.hci.ic.gov",
		dualStackDNSSuffix: "api.aws.hci.ic.gov",
		supportsFIPS:       true,
		supportsDualStack:  true,
		port8443:           true,
	},
	{
		name:               "aws-us-gov",
		regions:            []string{"aws-us-gov-global", "us-gov-east-1", "us-gov-west-1"},
		regionRegex:        regexp.MustCompile(`^us\-gov\-\w+\-\d+$`),
		dnsSuffix:          "amazonaws.com",
		dualStackDNSSuffix: "api.aws",
		supportsFIPS:       true,
		supportsDualStack:  true,
		port8443:           true,
	},
}

// partitionFor returns the partition of region the way the rules engine's
// aws.partition function does: known regions first, then region patterns,
// then the aws partition.
func partitionFor(region string) *partition {
	for i := range partitions {
		if slices.Contains(partitions[i].regions, region) {
			return &partitions[i]
		}
	}
	for i := range partitions {
		if partitions[i].regionRegex.MatchString(region) {
			return &partitions[i]
		}
	}
	return &partitions[0]
}

// validRegion reports whether region can be used as one DNS label: 1 to 63
// lower-case letters, digits and hyphens, not starting or ending with a
// hyphen. (Region names are lower case; an upper-case region would match no
// partition pattern and silently resolve to the wrong partition.)
func validRegion(region string) bool {
	if len(region) == 0 || len(region) > 63 || region[0] == '-' || region[len(region)-1] == '-' {
		return false
	}
	for i := 0; i < len(region); i++ {
		c := region[i]
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-') {
			return false
		}
	}
	return true
}

// regionError reports a region that is not a lower-case DNS label (see
// validRegion). Every client checks its region so, with a custom endpoint
// or without, since the region is also the signing region of every
// request. A region is no secret: the message quotes it (its first 64
// bytes) and gives an example.
func regionError(region string) *endpointError {
	shown := region
	if len(shown) > 64 {
		shown = shown[:64] + "..."
	}
	return &endpointError{Message: fmt.Sprintf("invalid region %q: want lower-case letters, digits and hyphens, e.g. us-west-2", shown)}
}

// normalizeFIPSRegion maps the legacy FIPS pseudo-regions that
// aws-sdk-go-v2 accepts ("fips-us-east-1", "us-east-1-fips",
// "us-fips-east-1") to the real region and reports whether one was found.
func normalizeFIPSRegion(region string) (string, bool) {
	const infix, prefix, suffix = "-fips-", "fips-", "-fips"
	if !strings.Contains(region, infix) && !strings.Contains(region, prefix) && !strings.Contains(region, suffix) {
		return region, false
	}
	region = strings.ReplaceAll(region, infix, "-")
	region = strings.ReplaceAll(region, prefix, "")
	region = strings.ReplaceAll(region, suffix, "")
	return region, true
}

// resolveEndpoint implements the SageMaker Runtime HTTP2 endpoint rule set
// (model smithy.rules#endpointRuleSet, service version 2025-10-01).
//
// A region that is set must be a lower-case DNS label, base or not (see
// regionError). With base set, the custom endpoint is used as given, and FIPS or
// dual-stack is a configuration error. Otherwise region picks the
// partition: the partitions the rule set lists (aws, aws-cn, aws-us-gov,
// aws-iso, aws-iso-b, aws-iso-f, aws-eusc) get
// https://runtime[-fips].sagemaker.{region}.{dnsSuffix or dualStackDnsSuffix}:8443,
// any other partition the generic https://runtime.sagemaker[-fips].{region}.{suffix}
// without a port. The returned URL is a fresh value the caller may modify.
func resolveEndpoint(region string, fips, dualStack bool, base *string) (*url.URL, error) {
	if region != "" && !validRegion(region) {
		return nil, regionError(region)
	}
	if base != nil {
		if fips {
			return nil, &endpointError{Message: "Invalid Configuration: FIPS and custom endpoint are not supported"}
		}
		if dualStack {
			return nil, &endpointError{Message: "Invalid Configuration: Dualstack and custom endpoint are not supported"}
		}
		return parseBaseEndpoint(*base)
	}
	if region == "" {
		return nil, &endpointError{Message: "Invalid Configuration: Missing Region"}
	}
	p := partitionFor(region)
	suffix := p.dnsSuffix
	if dualStack {
		if !p.port8443 && !p.supportsDualStack {
			if fips {
				return nil, &endpointError{Message: "FIPS and DualStack are enabled, but this partition does not support one or both"}
			}
			return nil, &endpointError{Message: "DualStack is enabled but this partition does not support DualStack"}
		}
		suffix = p.dualStackDNSSuffix
	}
	if fips && !p.port8443 && !p.supportsFIPS {
		if dualStack {
			return nil, &endpointError{Message: "FIPS and DualStack are enabled, but this partition does not support one or both"}
		}
		return nil, &endpointError{Message: "FIPS is enabled but this partition does not support FIPS"}
	}
	var host string
	switch {
	case p.port8443 && fips:
		host = "runtime-fips.sagemaker." + region + "." + suffix + ":8443"
	case p.port8443:
		host = "runtime.sagemaker." + region + "." + suffix + ":8443"
	case fips:
		host = "runtime.sagemaker-fips." + region + "." + suffix
	default:
		host = "runtime.sagemaker." + region + "." + suffix
	}
	return &url.URL{Scheme: "https", Host: host}, nil
}

// parseBaseEndpoint checks a custom endpoint: an absolute http or https
// URL with a host and no user info, query or fragment. Its path, if any,
// prefixes the operation path. Errors never repeat the URL, which could
// carry a password.
func parseBaseEndpoint(s string) (*url.URL, error) {
	if s == "" {
		return nil, &endpointError{Message: "BaseEndpoint is empty"}
	}
	u, err := url.Parse(s)
	if err != nil {
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err
		}
		return nil, &endpointError{Message: "BaseEndpoint is not a valid URL", Err: err}
	}
	switch {
	case u.Scheme != "https" && u.Scheme != "http":
		return nil, &endpointError{Message: "BaseEndpoint must be an http or https URL"}
	case u.Host == "":
		return nil, &endpointError{Message: "BaseEndpoint has no host"}
	case u.User != nil:
		return nil, &endpointError{Message: "BaseEndpoint must not contain user information"}
	case u.RawQuery != "" || u.ForceQuery || u.Fragment != "":
		return nil, &endpointError{Message: "BaseEndpoint must not contain a query or fragment"}
	}
	return u, nil
}

// invocationURL returns the request URL for endpointName under base:
// base's path (without a trailing slash) followed by
// /endpoints/{EndpointName}/invocations-bidirectional-stream, the name
// escaped as an httpLabel (a no-op for names that pass validation).
func invocationURL(base *url.URL, endpointName string) *url.URL {
	u := *base
	u.RawQuery, u.Fragment, u.RawFragment, u.ForceQuery = "", "", "", false
	prefix := strings.TrimRight(u.Path, "/")
	rawPrefix := strings.TrimRight(u.EscapedPath(), "/")
	const tail = "/invocations-bidirectional-stream"
	u.Path = prefix + "/endpoints/" + endpointName + tail
	u.RawPath = rawPrefix + "/endpoints/" + escapeLabel(endpointName) + tail
	if u.RawPath == u.Path {
		u.RawPath = ""
	}
	return &u
}

// escapeLabel percent-encodes every byte outside A-Z a-z 0-9 - . _ ~,
// including '/', as Smithy does for a non-greedy @httpLabel.
func escapeLabel(s string) string {
	const hex = "0123456789ABCDEF"
	n := 0
	for i := 0; i < len(s); i++ {
		if !unreserved(s[i]) {
			n++
		}
	}
	if n == 0 {
		return s
	}
	b := make([]byte, 0, len(s)+2*n)
	for i := 0; i < len(s); i++ {
		if c := s[i]; unreserved(c) {
			b = append(b, c)
		} else {
			b = append(b, '%', hex[c>>4], hex[c&15])
		}
	}
	return string(b)
}

func unreserved(c byte) bool {
	return isAlnum(c) || c == '-' || c == '.' || c == '_' || c == '~'
}
