package wsframe

import (
	"encoding/binary"
	"fmt"
	"strings"
	"unicode/utf8"
)

// Close status codes (RFC 6455 §7.4.1) used by the gateway.
const (
	CloseNormal         = 1000
	CloseGoingAway      = 1001
	CloseProtocolError  = 1002
	CloseMessageTooBig  = 1009
	CloseInternalError  = 1011
	CloseNoStatus       = 1005 // never sent: a close frame without a code
	CloseAbnormal       = 1006 // never sent: the connection ended without a close frame
	MaxCloseReasonBytes = MaxControlPayload - 2
)

// ValidCloseCode reports whether code may appear in a close frame on the
// wire (RFC 6455 section 7.4 and the IANA registry it set up): 1000-1003,
// 1007-1014 and 3000-4999. Codes 0-999 are unused, 1004 is reserved, 1005,
// 1006 and 1015 stand for conditions that are never sent, 1016-2999 are
// reserved for the protocol and unregistered, and codes over 4999 are
// out of range.
func ValidCloseCode(code int) bool {
	switch {
	case code >= 1000 && code <= 1003, code >= 1007 && code <= 1014:
		return true
	case code >= 3000 && code <= 4999:
		return true
	}
	return false
}

// ClosePayload returns the payload of a close frame with code and
// reason. The reason is made valid UTF-8 (each invalid byte replaced by
// U+FFFD) and cut to [MaxCloseReasonBytes] bytes, at a UTF-8 boundary. It
// panics if code is not a [ValidCloseCode]: the gateway sends only codes
// it chose or validated.
func ClosePayload(code int, reason string) []byte {
	if !ValidCloseCode(code) {
		panic(fmt.Sprintf("wsframe: close code %d must not be sent", code))
	}
	reason = strings.ToValidUTF8(reason, "\uFFFD")
	if len(reason) > MaxCloseReasonBytes {
		n := MaxCloseReasonBytes
		for n > 0 && !utf8.RuneStart(reason[n]) {
			n--
		}
		reason = reason[:n]
	}
	b := binary.BigEndian.AppendUint16(make([]byte, 0, 2+len(reason)), uint16(code))
	return append(b, reason...)
}

// ParseClose returns the code and reason of a close frame's payload. An
// empty payload means [CloseNoStatus] and no reason. A one-byte payload,
// a code that is not a [ValidCloseCode] (1006 included: a peer that sends
// it breaks the protocol, it did not drop the connection) and a reason
// that is not valid UTF-8 are a [*ProtocolError], whose reason names the
// code but never quotes the reason's bytes.
func ParseClose(payload []byte) (code int, reason string, err error) {
	switch len(payload) {
	case 0:
		return CloseNoStatus, "", nil
	case 1:
		return 0, "", &ProtocolError{Reason: "close frame with a one-byte payload"}
	}
	code = int(binary.BigEndian.Uint16(payload))
	if !ValidCloseCode(code) {
		return code, "", &ProtocolError{Reason: fmt.Sprintf("close frame with code %d, which must not be sent", code)}
	}
	if !utf8.Valid(payload[2:]) {
		return code, "", &ProtocolError{Reason: fmt.Sprintf("close frame (code %d) with a reason that is not valid UTF-8", code)}
	}
	return code, string(payload[2:]), nil
}
