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

// HealthFailedMessage starts the Message of the 424 ModelError the
// gateway returns when the container fails its health check.
const HealthFailedMessage = "Model container failed its health check"

// failUpgrade answers 424 ModelError "Failed to establish WebSocket
// connection", with the container's status and the start of its body as
// OriginalStatusCode and OriginalMessage when it answered the upgrade
// with an HTTP error.
func failUpgrade(st *biditest.Stream, err error) {
	fields := map[string]any{"Message": UpgradeFailedMessage}
	var he *wsframe.HandshakeError
	if errors.As(err, &he) && he.StatusCode != http.StatusSwitchingProtocols {
		fields["OriginalStatusCode"] = he.StatusCode
		if msg := originalMessage(he.Body); msg != "" {
			fields["OriginalMessage"] = msg
		}
	}
	st.Fail(http.StatusFailedDependency, "ModelError", fields)
}

// failHealth answers 424 ModelError for a container that failed GET
// /ping: the Message says how, and OriginalStatusCode carries the status
// it answered, if any.
func failHealth(st *biditest.Stream, err error) {
	fields := map[string]any{"Message": HealthFailedMessage + ": " + err.Error()}
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

// originalMessage returns the container's error body as text, trimmed,
// or "" if it is not UTF-8.
func originalMessage(body []byte) string {
	if !utf8.Valid(body) {
		return ""
	}
	return strings.TrimSpace(string(body))
}
