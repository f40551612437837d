package eventstream

import (
	"fmt"
	"io"
	"math/rand/v2"
	"time"

	sges "github.com/aws/smithy-go/eventstream"
)

// newRand returns a deterministic source for property tests, so a failure
// reproduces.
func newRand(seed uint64) *rand.Rand { return rand.New(rand.NewPCG(seed, 0x5eed)) }

func randBytes(r *rand.Rand, n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(r.Uint32())
	}
	return b
}

// randLen returns a length in 0..max, biased towards small values and the
// bounds.
func randLen(r *rand.Rand, max int) int {
	switch r.IntN(10) {
	case 0:
		return 0
	case 1:
		return max
	case 2, 3:
		return r.IntN(max + 1)
	default:
		return r.IntN(min(max, 32) + 1)
	}
}

// randValue returns a random value of type t. Timestamps stay within the
// range smithy-go can encode (it converts through UnixNano, ±292 years).
func randValue(r *rand.Rand, t ValueType) Value {
	switch t {
	case TypeBoolTrue, TypeBoolFalse:
		return Value{Type: t}
	case TypeByte:
		return ByteValue(int8(r.Uint32()))
	case TypeInt16:
		return Int16Value(int16(r.Uint32()))
	case TypeInt32:
		return Int32Value(int32(r.Uint32()))
	case TypeInt64:
		return Int64Value(int64(r.Uint64()))
	case TypeBytes:
		return BytesValue(randBytes(r, randLen(r, MaxValueLen)))
	case TypeString:
		return StringValue(string(randBytes(r, randLen(r, MaxValueLen))))
	case TypeTimestamp:
		return Value{Type: TypeTimestamp, Int: r.Int64N(2*9_000_000_000_000) - 9_000_000_000_000}
	case TypeUUID:
		var u [16]byte
		copy(u[:], randBytes(r, 16))
		return UUIDValue(u)
	}
	panic(t)
}

// randMessage returns a message with up to maxHeaders headers of random
// types under distinct random names (smithy-go merges repeated names), and
// a payload of up to maxPayload bytes. The header block stays within the
// default limit.
func randMessage(r *rand.Rand, maxHeaders, maxPayload int) *Message {
	m := &Message{}
	seen := map[string]bool{}
	hl := 0
	for n := r.IntN(maxHeaders + 1); len(m.Headers) < n; {
		name := string(randBytes(r, 1+randLen(r, MaxNameLen-1)))
		if seen[name] {
			continue
		}
		v := randValue(r, ValueType(r.IntN(10)))
		if hl += 2 + len(name) + v.encodedLen(); hl > DefaultMaxHeadersLen {
			break
		}
		seen[name] = true
		m.Headers = append(m.Headers, Header{Name: name, Value: v})
	}
	m.Payload = randBytes(r, randLen(r, maxPayload))
	return m
}

// toSmithy converts a message to smithy-go's representation.
func toSmithy(m *Message) sges.Message {
	var sm sges.Message
	for _, h := range m.Headers {
		var v sges.Value
		switch h.Value.Type {
		case TypeBoolTrue, TypeBoolFalse:
			v = sges.BoolValue(h.Value.Bool())
		case TypeByte:
			v = sges.Int8Value(h.Value.Int)
		case TypeInt16:
			v = sges.Int16Value(h.Value.Int)
		case TypeInt32:
			v = sges.Int32Value(h.Value.Int)
		case TypeInt64:
			v = sges.Int64Value(h.Value.Int)
		case TypeBytes:
			v = sges.BytesValue(h.Value.Bytes)
		case TypeString:
			v = sges.StringValue(string(h.Value.Bytes))
		case TypeTimestamp:
			v = sges.TimestampValue(time.UnixMilli(h.Value.Int))
		case TypeUUID:
			v = sges.UUIDValue(h.Value.Bytes)
		}
		sm.Headers = append(sm.Headers, sges.Header{Name: h.Name, Value: v})
	}
	sm.Payload = m.Payload
	return sm
}

// fromSmithy converts a message from smithy-go's representation.
func fromSmithy(sm sges.Message) (*Message, error) {
	m := &Message{Payload: sm.Payload}
	for _, h := range sm.Headers {
		var v Value
		switch x := h.Value.(type) {
		case sges.BoolValue:
			v = BoolValue(bool(x))
		case sges.Int8Value:
			v = ByteValue(int8(x))
		case sges.Int16Value:
			v = Int16Value(int16(x))
		case sges.Int32Value:
			v = Int32Value(int32(x))
		case sges.Int64Value:
			v = Int64Value(int64(x))
		case sges.BytesValue:
			v = BytesValue(x)
		case sges.StringValue:
			v = StringValue(string(x))
		case sges.TimestampValue:
			v = TimestampValue(time.Time(x))
		case sges.UUIDValue:
			v = UUIDValue(x)
		default:
			return nil, fmt.Errorf("unexpected smithy-go value %T", x)
		}
		m.Headers = append(m.Headers, Header{Name: h.Name, Value: v})
	}
	return m, nil
}

// chunkReader returns the bytes of r in random chunks of 0..max bytes; a
// zero-length chunk is a (0, nil) read, which readers may return.
type chunkReader struct {
	r    io.Reader
	rand *rand.Rand
	max  int
}

func (c *chunkReader) Read(p []byte) (int, error) {
	n := min(len(p), c.rand.IntN(c.max+1))
	return c.r.Read(p[:n])
}
