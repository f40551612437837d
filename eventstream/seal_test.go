package eventstream

import (
	"bytes"
	"errors"
	"hash/crc32"
	"testing"
)

// TestSealMessage: sealing a message in place gives, byte for byte, what
// AppendPayload gives for it, chain included, across the size at which the
// envelope's CRC is combined rather than recomputed and the sizes at which
// the payload is hashed and checksummed in chunks; a Verifier (which
// hashes in one call) accepts it.
func TestSealMessage(t *testing.T) {
	seed := bytes.Repeat([]byte{7}, 32)
	copying := NewSigner(sagemakerCreds, "us-west-2", "sagemaker", seed, fixedClock(sagemakerTime))
	inPlace := NewSigner(sagemakerCreds, "us-west-2", "sagemaker", seed, fixedClock(sagemakerTime))
	v := NewVerifier(sagemakerCreds, "us-west-2", "sagemaker", seed)
	for _, size := range []int{0, 1, 100, crcCombineMin - 1, crcCombineMin, 100 << 10,
		preemptChunk - Overhead - 20, preemptChunk, preemptChunk + 1, 3*preemptChunk + 5} {
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

// TestCRCUpdateChunked: checksumming a chunk at a time gives CRC-32's
// answer for every length around the chunk boundaries, from any start.
func TestCRCUpdateChunked(t *testing.T) {
	b := make([]byte, 3*preemptChunk+2)
	for i := range b {
		b[i] = byte(i*31 + i>>9)
	}
	for _, n := range []int{0, 1, preemptChunk - 1, preemptChunk, preemptChunk + 1, 2 * preemptChunk, len(b)} {
		for _, init := range []uint32{0, 0xdeadbeef} {
			if got, want := crcUpdate(init, b[:n]), crc32.Update(init, crcTable, b[:n]); got != want {
				t.Fatalf("%d bytes from %#x: %#x, want %#x", n, init, got, want)
			}
		}
	}
}
