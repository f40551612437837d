package bidi

import (
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/smithy-go/metrics"
)

// TestObservabilityOffByDefault: without providers a client has no
// observer and its sessions none, so every recording site is a nil check
// (BenchmarkStream's impl=ours and impl=ours-observed give the figures).
func TestObservabilityOffByDefault(t *testing.T) {
	cfg := aws.Config{Region: "us-west-2", Credentials: aws.AnonymousCredentials{}}
	if c := NewFromConfig(cfg); c.obs != nil {
		t.Fatal("observer built without providers")
	}
	c := NewFromConfig(cfg, func(o *Options) { o.MeterProvider = metrics.NopMeterProvider{} })
	if c.obs == nil {
		t.Fatal("no observer with a MeterProvider")
	}
	var so *sessionObs // a nil session observer records nothing, safely
	so.attempt()
	so.sent(1)
	so.received(1)
	so.response(200)
	so.retry(1, nil)
	so.end(nil)
}
