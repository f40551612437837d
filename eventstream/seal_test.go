package eventstream

import (
	"bytes"
	"errors"
	"testing"
)

// TestSealMessage: sealing a message in place gives, byte for byte, what
// AppendPayload gives for it, chain included, across the size at which the
// envelope's CRC is combined rather than recomputed; a Verifier accepts it.
func TestSealMessage(t *testing.T) {
	seed := bytes.Repeat([]byte{7}, 32)
	copying := NewSigner(sagemakerCreds, "us-west-2", "sagemaker", seed, fixedClock(sagemakerTime))
	inPlace := NewSigner(sagemakerCreds, "us-west-2", "sagemaker", seed, fixedClock(sagemakerTime))
	v := NewVerifier(sagemakerCreds, "us-west-2", "sagemaker", seed)
	for _, size := range []int{0, 1, 100, crcCombineMin - 1, crcCombineMin, 100 << 10} {
		m := &Message{
			Headers: Headers{{Name: ":event-type", Value: StringValue("PayloadPart")}},
			Payload: bytes.Repeat([]byte{byte(size)}, size),
		}
		inner, err := AppendMessage(nil, m)
		if err != nil {
			t.Fatal(err)
		}
		want, err := copying.AppendPayload(nil, inner)
		if err != nil {
			t.Fatal(err)
		}
		env := make([]byte, EnvelopePrefixLen+len(inner)+4)
		copy(env[EnvelopePrefixLen:], inner)
		if err := inPlace.SealMessage(env); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(env, want) {
			t.Fatalf("%d-byte payload: SealMessage differs from AppendPayload", size)
		}
		var dec Message
		if err := Unmarshal(env, &dec); err != nil {
			t.Fatal(err)
		}
		got, err := v.Verify(&dec)
		if err != nil {
			t.Fatalf("%d-byte payload: %v", size, err)
		}
		if !bytes.Equal(got, inner) {
			t.Fatalf("%d-byte payload: the verified payload is not the message", size)
		}
	}
}

// TestSealMessageShort: an envelope too short for a message is refused
// and the chain does not advance.
func TestSealMessageShort(t *testing.T) {
	seed := bytes.Repeat([]byte{7}, 32)
	s := NewSigner(sagemakerCreds, "us-west-2", "sagemaker", seed, fixedClock(sagemakerTime))
	before := s.PrevSignature()
	for _, n := range []int{0, EnvelopePrefixLen, EnvelopePrefixLen + Overhead + 3} {
		if err := s.SealMessage(make([]byte, n)); !errors.Is(err, ErrInvalidLength) {
			t.Fatalf("%d-byte envelope: %v, want ErrInvalidLength", n, err)
		}
	}
	if s.PrevSignature() != before {
		t.Fatal("a refused envelope advanced the chain")
	}
}
