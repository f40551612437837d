package bidi

// DataType says how the model container should treat a payload: as UTF-8
// text (a WebSocket text frame) or as opaque bytes (a binary frame).
type DataType uint8

const (
	// DataTypeBinary marks opaque bytes. It is what the service assumes when
	// the DataType header is absent.
	DataTypeBinary DataType = iota
	// DataTypeUTF8 marks UTF-8 text.
	DataTypeUTF8
)

// String returns the wire name of t: "BINARY" or "UTF8".
func (t DataType) String() string {
	if t == DataTypeUTF8 {
		return "UTF8"
	}
	return "BINARY"
}

// Message is one whole message exchanged with the model: the bytes and how
// to interpret them. A Message returned by a receive call owns its Data.
//
// The zero Type is DataTypeBinary: a Message{Data: b} goes to the
// container as a binary WebSocket frame, even when b holds JSON. Use
// [Text] or [TextBytes] for text. Send rejects a Type other than the two
// constants, and a DataTypeUTF8 message that is not valid UTF-8, with an
// [*InputValidationError] before any I/O.
type Message struct {
	Data []byte
	Type DataType
}

// Text returns a UTF-8 message holding s.
func Text(s string) Message { return Message{Data: []byte(s), Type: DataTypeUTF8} }

// TextBytes returns a UTF-8 message holding b, for text already in a
// byte slice (JSON from json.Marshal, for example). The slice is not
// copied.
func TextBytes(b []byte) Message { return Message{Data: b, Type: DataTypeUTF8} }

// Binary returns a binary message holding b. The slice is not copied.
func Binary(b []byte) Message { return Message{Data: b, Type: DataTypeBinary} }

// Part is one PayloadPart event as it travels on the wire: a fragment of a
// message. Complete is false for PARTIAL parts and true for the COMPLETE
// part that ends a message.
type Part struct {
	Data     []byte
	Type     DataType
	Complete bool
}
