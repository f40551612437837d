package wsframe

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
)

// Opcode is the opcode of a frame (RFC 6455 §5.2).
type Opcode byte

// The opcodes of RFC 6455. The others are reserved.
const (
	OpContinuation Opcode = 0x0
	OpText         Opcode = 0x1
	OpBinary       Opcode = 0x2
	OpClose        Opcode = 0x8
	OpPing         Opcode = 0x9
	OpPong         Opcode = 0xA
)

// IsControl reports whether o is a control opcode (close, ping, pong or a
// reserved control opcode).
func (o Opcode) IsControl() bool { return o&0x8 != 0 }

// known reports whether o is defined by RFC 6455.
func (o Opcode) known() bool {
	switch o {
	case OpContinuation, OpText, OpBinary, OpClose, OpPing, OpPong:
		return true
	}
	return false
}

// String returns the opcode's name, or its value in hex when reserved.
func (o Opcode) String() string {
	switch o {
	case OpContinuation:
		return "continuation"
	case OpText:
		return "text"
	case OpBinary:
		return "binary"
	case OpClose:
		return "close"
	case OpPing:
		return "ping"
	case OpPong:
		return "pong"
	}
	return fmt.Sprintf("opcode %#x", byte(o))
}

// MaxControlPayload is the largest payload of a control frame.
const MaxControlPayload = 125

// MaxHeaderLen is the largest encoded frame header: 2 bytes, an 8-byte
// extended length and a 4-byte masking key.
const MaxHeaderLen = 14

// Header is a frame header (RFC 6455 §5.2).
type Header struct {
	Fin    bool
	Rsv    byte // RSV1-3 in the low three bits; zero without extensions
	Opcode Opcode
	Masked bool
	Mask   [4]byte // the masking key, when Masked
	Length int64   // payload length
}

// AppendHeader appends the encoding of h to dst, with the shortest length
// encoding. It panics on a negative Length.
func AppendHeader(dst []byte, h Header) []byte {
	if h.Length < 0 {
		panic("wsframe: negative payload length")
	}
	b0 := byte(h.Opcode) & 0x0F
	b0 |= (h.Rsv & 0x7) << 4
	if h.Fin {
		b0 |= 0x80
	}
	var b1 byte
	if h.Masked {
		b1 = 0x80
	}
	switch {
	case h.Length <= 125:
		dst = append(dst, b0, b1|byte(h.Length))
	case h.Length <= 0xFFFF:
		dst = append(dst, b0, b1|126)
		dst = binary.BigEndian.AppendUint16(dst, uint16(h.Length))
	default:
		dst = append(dst, b0, b1|127)
		dst = binary.BigEndian.AppendUint64(dst, uint64(h.Length))
	}
	if h.Masked {
		dst = append(dst, h.Mask[:]...)
	}
	return dst
}

// ReadHeader reads one frame header from r. A stream that ends before the
// first byte returns io.EOF; one that ends inside the header returns
// io.ErrUnexpectedEOF. A 64-bit length with the most significant bit set
// is a [*ProtocolError]. The other rules are checked by [Conn.ReadFrame].
func ReadHeader(r io.Reader) (Header, error) {
	var b [MaxHeaderLen]byte
	if _, err := io.ReadFull(r, b[:2]); err != nil {
		return Header{}, err
	}
	h := Header{
		Fin:    b[0]&0x80 != 0,
		Rsv:    (b[0] >> 4) & 0x7,
		Opcode: Opcode(b[0] & 0x0F),
		Masked: b[1]&0x80 != 0,
		Length: int64(b[1] & 0x7F),
	}
	switch h.Length {
	case 126:
		if _, err := io.ReadFull(r, b[2:4]); err != nil {
			return Header{}, unexpected(err)
		}
		h.Length = int64(binary.BigEndian.Uint16(b[2:4]))
	case 127:
		if _, err := io.ReadFull(r, b[2:10]); err != nil {
			return Header{}, unexpected(err)
		}
		n := binary.BigEndian.Uint64(b[2:10])
		if n>>63 != 0 {
			return Header{}, &ProtocolError{Reason: "64-bit payload length with the most significant bit set"}
		}
		h.Length = int64(n)
	}
	if h.Masked {
		if _, err := io.ReadFull(r, h.Mask[:]); err != nil {
			return Header{}, unexpected(err)
		}
	}
	return h, nil
}

// MaskBytes XORs b in place with key, as if b started at offset pos of
// the payload, and returns the offset after b, so that a payload can be
// masked in pieces. Masking twice unmasks.
func MaskBytes(key [4]byte, pos int, b []byte) int {
	for i := range b {
		b[i] ^= key[(pos+i)&3]
	}
	return pos + len(b)
}

// unexpected turns io.EOF inside a frame into io.ErrUnexpectedEOF.
func unexpected(err error) error {
	if errors.Is(err, io.EOF) {
		return io.ErrUnexpectedEOF
	}
	return err
}
