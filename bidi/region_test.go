package bidi_test

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"

	"github.com/sagemaker-bidi/sagemaker-bidi/bidi"
	"github.com/sagemaker-bidi/sagemaker-bidi/bidi/biditest"
)

// countingCredentials counts Retrieve calls: Open retrieves credentials
// before its first I/O, so a count of zero shows it stopped before.
type countingCredentials struct{ n atomic.Int64 }

func (c *countingCredentials) Retrieve(context.Context) (aws.Credentials, error) {
	c.n.Add(1)
	return aws.Credentials{AccessKeyID: serverCredentials.AccessKeyID, SecretAccessKey: serverCredentials.SecretAccessKey}, nil
}

// TestRegionRuleEverywhere checks that a region that is not a lower-case
// DNS label is refused the same way with and without a custom endpoint,
// and with biditest's Server.Client: an *EndpointError from Open that
// quotes the value and gives an example, before credentials are retrieved
// or anything reaches the server.
func TestRegionRuleEverywhere(t *testing.T) {
	srv := newServer(t, biditest.Echo())
	long := strings.Repeat("a", 100)
	cases := []struct {
		name, region string
		client       func(creds aws.CredentialsProvider, region string) *bidi.Client
	}{
		{"no custom endpoint", "us west", func(creds aws.CredentialsProvider, region string) *bidi.Client {
			return bidi.NewFromConfig(aws.Config{Region: region, Credentials: creds})
		}},
		{"custom endpoint", "US-WEST-2", func(creds aws.CredentialsProvider, region string) *bidi.Client {
			return bidi.NewFromConfig(aws.Config{Region: region, Credentials: creds}, func(o *bidi.Options) {
				o.BaseEndpoint = aws.String(srv.URL)
			})
		}},
		{"srv.Client", "us west", func(creds aws.CredentialsProvider, region string) *bidi.Client {
			return srv.Client(func(o *bidi.Options) { o.Region, o.Credentials = region, creds })
		}},
		{"srv.Client, long", long, func(creds aws.CredentialsProvider, region string) *bidi.Client {
			return srv.Client(func(o *bidi.Options) { o.Region, o.Credentials = region, creds })
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			creds := &countingCredentials{}
			c := tc.client(creds, tc.region)
			sess, err := c.Open(testCtx(t), &bidi.OpenInput{EndpointName: "e"})
			if err == nil {
				sess.Close()
				t.Fatalf("region %q: Open succeeded", tc.region)
			}
			var ee *bidi.EndpointError
			if !errors.As(err, &ee) || !errors.Is(err, bidi.ErrInvalidConfig) {
				t.Fatalf("region %q: Open error %T %v, want an endpoint error matching ErrInvalidConfig", tc.region, err, err)
			}
			shown := tc.region
			if len(shown) > 64 {
				shown = shown[:64] + "..."
			}
			if want := `invalid region "` + shown + `"`; !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), "e.g. us-west-2") {
				t.Errorf("region %q: error %q, want it to contain %q and an example", tc.region, err, want)
			}
			if n := creds.n.Load(); n != 0 {
				t.Errorf("region %q: credentials retrieved %d times before the error", tc.region, n)
			}
		})
	}
	if n := len(srv.Streams()); n != 0 {
		t.Errorf("the server saw %d streams", n)
	}
	if v := srv.Violations(); len(v) != 0 {
		t.Errorf("the server saw requests: %v", v)
	}

	// A valid region still works with a custom endpoint.
	sess, err := srv.Client().Open(testCtx(t), &bidi.OpenInput{EndpointName: "e"})
	if err != nil {
		t.Fatal(err)
	}
	sess.Close()
}
