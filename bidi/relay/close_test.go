package relay

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/coder/websocket"

	"github.com/sagemaker-bidi/sagemaker-bidi/bidi"
)

func TestCloseFor(t *testing.T) {
	for _, tc := range []struct {
		err    error
		code   websocket.StatusCode
		reason string
		http   int
	}{
		{nil, 1000, "", 500},
		{io.EOF, 1000, "", 500},
		{&bidi.ModelStreamError{ErrorCode_: "1000", Message: "bye"}, 1000, "ModelStreamError: bye", 500},
		{&bidi.ModelStreamError{ErrorCode_: "1009", Message: "too big"}, 1009, "ModelStreamError: too big", 500},
		{&bidi.ModelStreamError{ErrorCode_: "4321", Message: "app"}, 4321, "ModelStreamError: app", 500},
		{&bidi.ModelStreamError{ErrorCode_: "1006", Message: "gone"}, 1014, "ModelStreamError: gone", 500},
		{&bidi.ModelStreamError{ErrorCode_: "ModelInvocationTimeExceeded", Message: "slow"}, 1014, "ModelStreamError: slow", 500},
		{&bidi.InternalStreamFailure{Message: "cap"}, 1012, "InternalStreamFailure: cap", 500},
		{fmt.Errorf("bidi: stream ended and was not replaced after 3 reconnect(s): %w", &bidi.InternalStreamFailure{Message: "x"}), 1012, "InternalStreamFailure: x", 500},
		{&bidi.ResponseError{StatusCode: 424, Code: "ModelError", Message: "m", Body: []byte("SECRET"), Err: &bidi.ModelError{Message: "m", OriginalMessage: "SECRET"}}, 1014, "424 ModelError: m", 502},
		{&bidi.ResponseError{StatusCode: 503, Code: "ServiceUnavailableError", Message: "s"}, 1013, "503 ServiceUnavailableError: s", 503},
		{&bidi.ResponseError{StatusCode: 400, Code: "ThrottlingException", Message: "t"}, 1013, "400 ThrottlingException: t", 503},
		{&bidi.ResponseError{StatusCode: 403, Code: "AccessDeniedException", Message: "d"}, 1011, "403 AccessDeniedException: d", 502},
		{fmt.Errorf("wrapped: %w", bidi.ErrDeadPeer), 1014, "model connection failed", 500},
		{context.Canceled, 1001, "going away", 500},
		{ErrOpenTimeout, 1013, "model open timed out", 504},
		{&bidi.InputValidationError{Message: "EndpointName is bad", Field: "EndpointName"}, 1011, "InputValidationError: EndpointName is bad", 500},
		{websocket.CloseError{Code: 4000, Reason: "app says"}, 4000, "app says", 500},
		{errors.New("credentials: AKIA... expired"), 1011, "internal error", 500},
	} {
		code, reason := CloseFor(tc.err)
		if code != tc.code || reason != tc.reason {
			t.Errorf("CloseFor(%v) = %d %q, want %d %q", tc.err, code, reason, tc.code, tc.reason)
		}
		if got := HTTPStatusFor(tc.err); tc.err != nil && got != tc.http {
			t.Errorf("HTTPStatusFor(%v) = %d, want %d", tc.err, got, tc.http)
		}
	}
}

func TestRefusal(t *testing.T) {
	for _, tc := range []struct {
		err    error
		status int
		body   string
	}{
		{&StatusError{Status: 401, Message: "log in"}, 401, "log in"},
		{fmt.Errorf("wrapped: %w", &StatusError{Status: 429}), 429, http.StatusText(http.StatusTooManyRequests)},
		{&StatusError{Status: 200, Message: "not an error status"}, 403, http.StatusText(http.StatusForbidden)},
		{errors.New("detail"), 403, http.StatusText(http.StatusForbidden)},
		{&bidi.ResponseError{StatusCode: 503, Message: "inner"}, 503, http.StatusText(http.StatusServiceUnavailable)},
	} {
		status, body := refusal(tc.err)
		if status != tc.status || body != tc.body {
			t.Errorf("refusal(%v) = %d %q, want %d %q", tc.err, status, body, tc.status, tc.body)
		}
	}
}

// FuzzCloseReason: whatever a model's message holds, the close reason is
// valid UTF-8, without control characters, within MaxCloseReason bytes,
// and a prefix-preserving cut of the cleaned message.
func FuzzCloseReason(f *testing.F) {
	f.Add("Failed to establish WebSocket connection")
	f.Add(strings.Repeat("é", 100))
	f.Add("bad\xff\xfeutf8\n\r\x00")
	f.Fuzz(func(t *testing.T, msg string) {
		for _, err := range []error{
			&bidi.ModelStreamError{ErrorCode_: "1011", Message: msg},
			&bidi.ResponseError{StatusCode: 424, Code: "ModelError", Message: msg},
			websocket.CloseError{Code: 4000, Reason: msg},
		} {
			_, reason := CloseFor(err)
			if len(reason) > MaxCloseReason || !utf8.ValidString(reason) {
				t.Fatalf("reason %q: %d bytes, valid %v", reason, len(reason), utf8.ValidString(reason))
			}
			for _, r := range reason {
				if r < 0x20 || r == 0x7f {
					t.Fatalf("reason %q holds control character %U", reason, r)
				}
			}
			// The close frame accepts it.
			if _, err := (websocket.CloseError{Code: 1011, Reason: reason}).Error(), error(nil); err != nil {
				t.Fatal(err)
			}
		}
	})
}
