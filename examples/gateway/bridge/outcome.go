package bridge

import (
	"fmt"
	"strconv"
	"time"

	"github.com/sagemaker-bidi/sagemaker-bidi/examples/gateway/internal/wsframe"
)

// An outcome is how a session's WebSocket ended and what the client is
// told: nothing (a clean end of the response stream, which the client
// reads as io.EOF) or a ModelStreamError whose ErrorCode is the WebSocket
// close code in decimal and whose Message ends with "(code N)" or
// "(code N, reason "R")".
type outcome struct {
	clean    bool   // end the response stream without an error
	internal bool   // report an InternalStreamFailure (the platform's fault), not a ModelStreamError
	code     int    // WebSocket close code, the ErrorCode of the error
	message  string // Message of the error
	cause    string // for the log
}

// errorCode returns the ErrorCode of the ModelStreamError: the close code.
func (o outcome) errorCode() string { return strconv.Itoa(o.code) }

// clientEnded: the client sent its end frame; the gateway closes with 1000.
func clientEnded() outcome {
	return outcome{clean: true, code: wsframe.CloseNormal, cause: "client ended its stream"}
}

// clientLeft: the client went away (reset, disconnected, broke the
// protocol, or the gateway is shutting down); the gateway closes with
// 1001.
func clientLeft(err error) outcome {
	return outcome{clean: true, code: wsframe.CloseGoingAway, cause: "client went away: " + err.Error()}
}

// streamCapReached: the stream reached the gateway's connection cap
// (biditest sent the client an InternalStreamFailure); the gateway closes
// the container's WebSocket with 1001.
func streamCapReached(limit time.Duration) outcome {
	cause := "stream reached the connection cap"
	if limit > 0 {
		cause += " (" + limit.String() + ")"
	}
	return outcome{clean: true, code: wsframe.CloseGoingAway, cause: cause}
}

// gatewayClosed: the gateway closed while the session ran; the client's
// connection is gone with it.
func gatewayClosed() outcome {
	return outcome{clean: true, code: wsframe.CloseGoingAway, cause: "gateway closed"}
}

// aborted: the gateway ended the session (its shutdown grace period is
// over); the client gets an InternalStreamFailure.
func aborted(reason string) outcome {
	return outcome{internal: true, code: wsframe.CloseGoingAway, message: reason, cause: "aborted: " + reason}
}

// containerClosed: the container sent a close frame first.
func containerClosed(code int, reason string) outcome {
	msg := fmt.Sprintf("Model container closed the WebSocket connection (code %d)", code)
	if reason != "" {
		msg = fmt.Sprintf("Model container closed the WebSocket connection (code %d, reason %q)", code, reason)
	}
	return outcome{code: code, message: msg, cause: "container closed the connection"}
}

// containerDropped: the connection ended without a close frame.
func containerDropped(err error) outcome {
	return outcome{
		code:    wsframe.CloseAbnormal,
		message: fmt.Sprintf("Model container connection ended without a close frame (code %d)", wsframe.CloseAbnormal),
		cause:   "container connection dropped: " + err.Error(),
	}
}

// pingTimeout: the container answered none of the last n pings.
func pingTimeout(n int, interval time.Duration) outcome {
	return outcome{
		code:    wsframe.CloseAbnormal,
		message: fmt.Sprintf("Model container did not answer %d WebSocket pings sent every %s (code %d)", n, interval, wsframe.CloseAbnormal),
		cause:   "ping timeout",
	}
}

// protocolViolation: the container broke RFC 6455; the gateway closes
// with 1002.
func protocolViolation(err *wsframe.ProtocolError) outcome {
	return outcome{
		code:    wsframe.CloseProtocolError,
		message: fmt.Sprintf("Model container broke the WebSocket protocol: %s (code %d)", err.Reason, wsframe.CloseProtocolError),
		cause:   "container protocol error: " + err.Reason,
	}
}

// frameTooLarge: the container sent a frame over the limit; the gateway
// closes with 1009.
func frameTooLarge(err *wsframe.FrameTooLargeError) outcome {
	return outcome{
		code: wsframe.CloseMessageTooBig,
		message: fmt.Sprintf("Model container sent a frame of %d bytes, over the gateway's limit of %d (code %d)",
			err.Length, err.Limit, wsframe.CloseMessageTooBig),
		cause: "container frame too large",
	}
}

// writeFailed: a frame could not be written to the container.
func writeFailed(err error) outcome {
	return outcome{
		code:    wsframe.CloseAbnormal,
		message: fmt.Sprintf("Model container connection failed while the gateway was writing to it (code %d)", wsframe.CloseAbnormal),
		cause:   "writing to the container: " + err.Error(),
	}
}
