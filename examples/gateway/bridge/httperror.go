package bridge

import (
	"errors"
	"fmt"
	"net/http"
	"strings"
	"unicode/utf8"

	"github.com/sagemaker-bidi/sagemaker-bidi/bidi/biditest"
	"github.com/sagemaker-bidi/sagemaker-bidi/examples/gateway/internal/wsframe"
)

// UpgradeFailedMessage is the Message of the 424 ModelError SageMaker
// returns when it cannot open the container's WebSocket.
const UpgradeFailedMessage = "Failed to establish WebSocket connection"

// HealthFailedMessage starts the OriginalMessage of the 424 ModelError
// the gateway returns while the container fails its health checks.
const HealthFailedMessage = "Model container failed its health check"

// failUpgrade answers 424 ModelError "Failed to establish WebSocket
// connection", with the container's status and the start of its body as
// OriginalStatusCode and OriginalMessage when it answered the upgrade
// with an HTTP error, and the gateway's explanation as OriginalMessage
// when it did not accept in time.
func failUpgrade(st *biditest.Stream, err error) {
	fields := map[string]any{"Message": UpgradeFailedMessage}
	var (
		he *wsframe.HandshakeError
		te *AcceptTimeoutError
	)
	switch {
	case errors.As(err, &he) && he.StatusCode != http.StatusSwitchingProtocols:
		fields["OriginalStatusCode"] = he.StatusCode
		if msg := originalMessage(he.Body); msg != "" {
			fields["OriginalMessage"] = msg
		}
	case errors.As(err, &te):
		fields["OriginalMessage"] = te.Error()
	}
	st.Fail(http.StatusFailedDependency, "ModelError", fields)
}

// failHealth answers a session while the container fails its health
// checks with the 424 ModelError SageMaker gives when it cannot reach a
// model ("Failed to establish WebSocket connection"); OriginalMessage
// says how the check failed, and OriginalStatusCode carries the status
// /ping answered, if any.
func failHealth(st *biditest.Stream, err error) {
	fields := map[string]any{
		"Message":         UpgradeFailedMessage,
		"OriginalMessage": HealthFailedMessage + ": " + err.Error(),
	}
	var he *HealthError
	if errors.As(err, &he) && he.StatusCode != 0 {
		fields["OriginalStatusCode"] = he.StatusCode
	}
	st.Fail(http.StatusFailedDependency, "ModelError", fields)
}

// failVariant answers 400 InputValidationError for a TargetVariant the
// gateway does not serve.
func failVariant(st *biditest.Stream, target, variant string) {
	st.Fail(http.StatusBadRequest, "InputValidationError", map[string]any{
		"Message": fmt.Sprintf("Target variant %q does not exist: this gateway serves only %q", target, variant),
	})
}

// failEndpoint answers 400 InputValidationError for an endpoint name the
// gateway does not serve, as SageMaker answers a name it does not know.
func failEndpoint(st *biditest.Stream, name, served string) {
	st.Fail(http.StatusBadRequest, "InputValidationError", map[string]any{
		"Message": fmt.Sprintf("Endpoint %q not found: this gateway serves only %q", name, served),
	})
}

// originalMessage returns the container's error body as text, trimmed,
// or "" if it is not UTF-8.
func originalMessage(body []byte) string {
	if !utf8.Valid(body) {
		return ""
	}
	return strings.TrimSpace(string(body))
}
