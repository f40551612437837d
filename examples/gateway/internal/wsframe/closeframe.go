package wsframe

import (
	"encoding/binary"
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

// ClosePayload returns the payload of a close frame with code and
// reason. The reason is cut to [MaxCloseReasonBytes] bytes, at a UTF-8
// boundary.
func ClosePayload(code int, reason string) []byte {
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
// empty payload means [CloseNoStatus] and no reason. A one-byte payload is
// a [*ProtocolError]. Codes and reasons are returned as sent, valid or
// not: the gateway reports what the container said.
func ParseClose(payload []byte) (code int, reason string, err error) {
	switch len(payload) {
	case 0:
		return CloseNoStatus, "", nil
	case 1:
		return 0, "", &ProtocolError{Reason: "close frame with a one-byte payload"}
	}
	return int(binary.BigEndian.Uint16(payload)), string(payload[2:]), nil
}
