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
type Message struct {
	Data []byte
	Type DataType
}

// Text returns a UTF-8 message holding s.
func Text(s string) Message { return Message{Data: []byte(s), Type: DataTypeUTF8} }

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
