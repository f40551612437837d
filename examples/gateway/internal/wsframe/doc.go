// Package wsframe is the client side of the WebSocket protocol (RFC 6455)
// at the level of frames, for the gateway: [Dial] performs the opening
// handshake, and a [Conn] reads and writes single frames with their FIN
// bit and opcode exactly as they travel, control frames included.
//
// General-purpose WebSocket libraries present messages: their readers hide
// frame boundaries and their writers choose the frames (coder/websocket,
// for one, ends every fragmented message with an extra empty frame). The
// gateway must map each event-stream part to exactly one frame and each
// frame to exactly one part, so it needs this lower level. The package is
// small on purpose: no extensions (compression is never offered), no
// subprotocols, no automatic pong or close replies; the caller decides
// every frame.
//
// What a [Conn] checks on reading: reserved bits unset, a known opcode,
// unmasked frames (a server must not mask), control frames unfragmented
// and at most 125 bytes, fragmentation in order (no continuation outside
// a message, no new message inside one) and the frame size limit, before
// any payload is read or allocated. Violations are [*ProtocolError]s, an
// oversize frame a [*FrameTooLargeError]; the caller closes the
// connection with [CloseProtocolError] or [CloseMessageTooBig].
//
// Text payloads are not checked for valid UTF-8: the gateway forwards
// bytes as they are, as SageMaker does.
package wsframe
