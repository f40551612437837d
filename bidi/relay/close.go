package relay

import (
	"context"
	"errors"
	"io"
	"net/http"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/coder/websocket"

	"github.com/sagemaker-bidi/sagemaker-bidi/bidi"
)

// MaxCloseReason is the longest close reason a WebSocket close frame can
// carry, in bytes (125 bytes of control payload less the 2-byte code).
const MaxCloseReason = 123

// Close codes the relay sends that [websocket.StatusCode] has no name
// for in RFC 6455 itself (IANA's registry has them).
const (
	// StatusBadGateway (1014): the model's side failed in a way the client
	// cannot act on besides trying again later.
	StatusBadGateway websocket.StatusCode = 1014
)

// CloseFor returns the WebSocket close code and reason a client gets
// when the model side of its call ended with err (nil or io.EOF: a clean
// end). The reason is the modeled error's shape name and message, never
// a credential, a header or the raw body of an HTTP error; it is valid
// UTF-8 of at most MaxCloseReason bytes.
//
//	model side ended with                              code  reason
//	clean end (io.EOF), ModelStreamError 1000          1000  "" / "ModelStreamError: <message>"
//	ModelStreamError 1001, 1008, 1009, 1011,           same  "ModelStreamError: <message>"
//	  1012, 1013, 3000–4999 (the container's code)
//	ModelStreamError with another code (1002, 1006…)   1014  "ModelStreamError: <message>"
//	InternalStreamFailure (platform fault)             1012  "InternalStreamFailure: <message>"
//	HTTP 503, 429 or a throttling error at open        1013  "<status> <code>: <message>"
//	HTTP 424 ModelError at open (container failed)     1014  "424 ModelError: <message>"
//	another HTTP error at open (400, 403, 500…)        1011  "<status> <code>: <message>"
//	connection to the service failed (dead peer, …)    1014  "model connection failed"
//	the open took longer than OpenTimeout              1013  "model open timed out"
//	the relay's context ended, session closed          1001  "going away"
//	a websocket.CloseError (from a Hook)               its code and reason
//	anything else                                      1011  "internal error"
//
// Behind a [bidi.RotatingSession] (the default), a stream that fails
// mid-way is replaced without the client noticing; the client sees its
// error only once reconnects are exhausted, wrapping the last failure,
// and it is mapped by that failure. The relay's own limits close
// with codes of their own (see the package documentation).
func CloseFor(err error) (websocket.StatusCode, string) {
	var (
		ce  websocket.CloseError
		re  *bidi.ResponseError
		mse *bidi.ModelStreamError
		isf *bidi.InternalStreamFailure
		api interface {
			ErrorCode() string
			ErrorMessage() string
		}
	)
	switch {
	case err == nil || err == io.EOF || errors.Is(err, bidi.ErrStreamEnded):
		return websocket.StatusNormalClosure, ""
	case errors.As(err, &ce):
		return ce.Code, cleanReason(ce.Reason)
	case errors.Is(err, ErrOpenTimeout):
		return websocket.StatusTryAgainLater, "model open timed out"
	case errors.As(err, &re):
		reason := strconv.Itoa(re.StatusCode) + " " + re.Code + ": " + re.Message
		switch {
		case re.StatusCode == http.StatusServiceUnavailable || re.StatusCode == http.StatusTooManyRequests ||
			strings.Contains(strings.ToLower(re.Code), "throttl"):
			return websocket.StatusTryAgainLater, cleanReason(reason)
		case re.StatusCode == http.StatusFailedDependency:
			return StatusBadGateway, cleanReason(reason)
		}
		return websocket.StatusInternalError, cleanReason(reason)
	case errors.As(err, &mse):
		reason := cleanReason("ModelStreamError: " + mse.Message)
		switch c := mse.CloseCode(); {
		case c == 1000, c == 1001, c == 1008, c == 1009, c == 1011, c == 1012, c == 1013, c >= 3000 && c <= 4999:
			return websocket.StatusCode(c), reason
		}
		return StatusBadGateway, reason
	case errors.As(err, &isf):
		return websocket.StatusServiceRestart, cleanReason("InternalStreamFailure: " + isf.Message)
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded), errors.Is(err, bidi.ErrSessionClosed):
		return websocket.StatusGoingAway, "going away"
	case errors.Is(err, bidi.ErrDeadPeer), errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, bidi.ErrMalformedResponse):
		return StatusBadGateway, "model connection failed"
	case errors.As(err, &api):
		return websocket.StatusInternalError, cleanReason(api.ErrorCode() + ": " + api.ErrorMessage())
	}
	return websocket.StatusInternalError, "internal error"
}

// HTTPStatusFor returns the HTTP status a refused open is answered with
// when Options.RefuseWithHTTPStatus is set: 503 for what [CloseFor] maps
// to 1013 (try again later), 502 (bad gateway) for any other refusal of
// the service, 504 when the open timed out (ErrOpenTimeout), 500 otherwise.
func HTTPStatusFor(err error) int {
	var re *bidi.ResponseError
	switch {
	case errors.Is(err, ErrOpenTimeout):
		return http.StatusGatewayTimeout
	case errors.As(err, &re):
		if c, _ := CloseFor(err); c == websocket.StatusTryAgainLater {
			return http.StatusServiceUnavailable
		}
		return http.StatusBadGateway
	}
	return http.StatusInternalServerError
}

// cleanReason makes s a valid close reason: valid UTF-8, control
// characters replaced by spaces, at most MaxCloseReason bytes, cut at a
// rune boundary.
func cleanReason(s string) string {
	s = strings.ToValidUTF8(s, "\uFFFD")
	s = strings.Map(func(r rune) rune {
		if unicode.IsControl(r) {
			return ' '
		}
		return r
	}, s)
	if len(s) <= MaxCloseReason {
		return s
	}
	n := MaxCloseReason
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}
