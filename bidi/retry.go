package bidi

import (
	"errors"
	"net/http"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	"github.com/aws/smithy-go/logging"

	"github.com/sagemaker-bidi/sagemaker-bidi/internal/backoff"
)

// retryBaseDelay is the first backoff step of a retried open.
const retryBaseDelay = 50 * time.Millisecond

// retryBackoff returns the full-jitter delay before attempt n+1 after n failed
// attempts: uniform in [0, min(maxDelay, base·2^(n-1))], the engine's
// backoff (backoff.Delay) with retryBaseDelay.
func retryBackoff(n int, maxDelay time.Duration) time.Duration {
	return backoff.Delay(n, retryBaseDelay, maxDelay)
}

// retryClass is what an open's failure says about trying again.
type retryClass uint8

const (
	// classUnknown: the client's aws.Retryer decides.
	classUnknown retryClass = iota
	// classRetryable: transient (503, throttling, a 424 "Failed to
	// establish WebSocket connection" without a 4xx from the container).
	classRetryable
	// classTerminal: retrying cannot help (a 4xx of the request or of
	// the container, such as a wrong invocation path).
	classTerminal
	// classSkew: the signature was refused for the client's clock.
	classSkew
)

// classifyOpenError sorts the error of a failed open.
func classifyOpenError(err error) retryClass {
	var me *ModelError
	if errors.As(err, &me) {
		if me.OriginalStatusCode >= 400 && me.OriginalStatusCode < 500 {
			return classTerminal // the container's own 4xx: permanent
		}
		if strings.Contains(strings.ToLower(me.Message), webSocketFailure) {
			return classRetryable
		}
		return classTerminal
	}
	var su *ServiceUnavailableError
	if errors.As(err, &su) {
		return classRetryable
	}
	var re *ResponseError
	if !errors.As(err, &re) {
		return classUnknown
	}
	switch {
	case re.StatusCode == http.StatusServiceUnavailable, re.StatusCode == http.StatusTooManyRequests, throttleCodes[re.Code]:
		return classRetryable
	case skewCodes[re.Code] || (re.StatusCode == http.StatusForbidden && isSkewMessage(re.Message)):
		return classSkew
	case re.StatusCode >= 400 && re.StatusCode < 500:
		return classTerminal
	}
	return classUnknown
}

// skewCodes are the error codes aws-sdk-go-v2 takes as a clock-skew
// signal.
var skewCodes = map[string]bool{
	"RequestTimeTooSkewed": true,
	"RequestExpired":       true,
	"RequestInTheFuture":   true,
}

// isSkewMessage reports an InvalidSignatureException caused by the
// signing time (the service's "Signature expired" and "not yet current").
func isSkewMessage(msg string) bool {
	m := strings.ToLower(msg)
	return strings.Contains(m, "signature expired") || strings.Contains(m, "signature not yet current")
}

// throttleCodes are the error codes aws-sdk-go-v2 treats as throttling.
var throttleCodes = map[string]bool{
	"Throttling":                             true,
	"ThrottlingException":                    true,
	"ThrottledException":                     true,
	"RequestThrottledException":              true,
	"TooManyRequestsException":               true,
	"ProvisionedThroughputExceededException": true,
	"TransactionInProgressException":         true,
	"RequestLimitExceeded":                   true,
	"BandwidthLimitExceeded":                 true,
	"LimitExceededException":                 true,
	"RequestThrottled":                       true,
	"SlowDown":                               true,
	"PriorRequestNotComplete":                true,
	"EC2ThrottledException":                  true,
}

// webSocketFailure is the ModelError message SageMaker returns when it
// cannot open the WebSocket to the container; under burst load it is
// transient.
const webSocketFailure = "failed to establish websocket connection"

// resolveRetryer sets o.Retryer the way aws-sdk-go-v2 service clients do:
// the aws.Config's Retryer if any (resolveOptions put it there), else a
// standard retryer (adaptive with RetryMode adaptive) whose backoff is
// this package's (RetryMaxBackoff); an explicit RetryMaxAttempts overrides
// the retryer's. The retryer is shared by the client's sessions, so its
// token bucket is a client-wide retry budget.
func (o *Options) resolveRetryer(maxAttemptsSet bool) {
	if o.Retryer == nil {
		std := func(so *retry.StandardOptions) {
			so.MaxAttempts = o.RetryMaxAttempts
			maxBackoff := o.RetryMaxBackoff
			so.Backoff = retry.BackoffDelayerFunc(func(attempt int, _ error) (time.Duration, error) {
				return retryBackoff(attempt, maxBackoff), nil
			})
		}
		if o.RetryMode == aws.RetryModeAdaptive {
			o.Retryer = retry.NewAdaptiveMode(func(ao *retry.AdaptiveModeOptions) {
				ao.StandardOptions = append(ao.StandardOptions, std)
			})
		} else {
			o.Retryer = retry.NewStandard(std)
		}
		return
	}
	if maxAttemptsSet {
		o.Retryer = retry.AddWithMaxAttempts(o.Retryer, o.RetryMaxAttempts)
	}
}

// now is the client's signing clock: Options.Now corrected by the clock
// skew measured from the service's answers (see correctSkew).
func (c *Client) now() time.Time {
	return c.options.Now().Add(time.Duration(c.skew.Load()))
}

// correctSkew measures the client's clock skew from the Date header of a
// response refused for its signing time, as aws-sdk-go-v2 does, and
// applies it to later signing. It reports whether there was a skew to
// correct.
func (c *Client) correctSkew(err error) bool {
	var re *ResponseError
	if !errors.As(err, &re) {
		return false
	}
	date, perr := http.ParseTime(re.Header.Get("Date"))
	if perr != nil {
		return false
	}
	skew := date.Sub(c.options.Now())
	if skew > -time.Minute && skew < time.Minute {
		return false // not a clock problem
	}
	c.skew.Store(int64(skew))
	c.logf(logging.Debug, "bidi: clock skew of %v measured from the service's Date header; corrected", skew.Round(time.Second))
	return true
}
