package eventstream

import (
	"crypto/sha256"
	"encoding/binary"
	"hash/crc32"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
)

// SignerOptions configures a [Signer].
type SignerOptions struct {
	// Now returns the signing time. Nil means time.Now. Tests inject a
	// fixed clock to get known-answer signatures.
	Now func() time.Time
}

// A Signer wraps event messages in signed envelopes (WIRE.md §4): an outer
// message with a :date header, holding the signing time in milliseconds,
// and a :chunk-signature header, holding the SigV4 signature of the event
// chained from the previous one. The first envelope chains from the seed,
// the signature of the HTTP request that opened the stream.
//
// Each Append method advances the chain, so envelopes must be sent in the
// order they are produced. A Signer is not safe for concurrent use.
type Signer struct {
	chain chain
	now   func() time.Time
}

// NewSigner returns a Signer for credentials creds, the signing region and
// service (for SageMaker, "sagemaker") and the request's seed signature.
// Only the secret key takes part in event signatures.
func NewSigner(creds aws.Credentials, region, service string, seed []byte, optFns ...func(*SignerOptions)) *Signer {
	var o SignerOptions
	for _, fn := range optFns {
		fn(&o)
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	return &Signer{chain: newChain(creds.SecretAccessKey, region, service, seed), now: o.Now}
}

// AppendMessage encodes m as the payload of a signed envelope appended to
// dst. The inner message is encoded in place, inside the envelope, so its
// payload is copied once.
func (s *Signer) AppendMessage(dst []byte, m *Message) ([]byte, error) {
	hl, err := m.Headers.encodedLen()
	if err != nil {
		return dst, err
	}
	if hl > DefaultMaxHeadersLen {
		return dst, &LengthError{Err: ErrHeadersTooLarge, Length: int64(hl), Limit: DefaultMaxHeadersLen}
	}
	innerLen := Overhead + hl + len(m.Payload)
	if innerLen > DefaultMaxPayloadLen {
		return dst, &LengthError{Err: ErrPayloadTooLarge, Length: int64(innerLen), Limit: DefaultMaxPayloadLen}
	}
	start := len(dst)
	dst = grow(dst, Overhead+envelopeHeadersLen+innerLen)
	dst = dst[:start+preludeLen+envelopeHeadersLen]
	innerStart := len(dst)
	dst = appendPrelude(dst, innerLen, hl)
	dst = appendHeaders(dst, m.Headers)
	dst = append(dst, m.Payload...)
	dst = binary.BigEndian.AppendUint32(dst, crc32.Update(0, crcTable, dst[innerStart:]))
	return s.seal(dst, start, s.now()), nil
}

// AppendPayload wraps payload, which is normally an encoded event message,
// in a signed envelope appended to dst.
func (s *Signer) AppendPayload(dst, payload []byte) ([]byte, error) {
	if len(payload) > DefaultMaxPayloadLen {
		return dst, &LengthError{Err: ErrPayloadTooLarge, Length: int64(len(payload)), Limit: DefaultMaxPayloadLen}
	}
	start := len(dst)
	dst = grow(dst, Overhead+envelopeHeadersLen+len(payload))
	dst = dst[:start+preludeLen+envelopeHeadersLen]
	dst = append(dst, payload...)
	return s.seal(dst, start, s.now()), nil
}

// AppendEnd appends the end frame: a signed envelope with an empty payload,
// which tells the service that no more events follow. Send it last, then
// close the request body.
func (s *Signer) AppendEnd(dst []byte) []byte {
	start := len(dst)
	dst = grow(dst, Overhead+envelopeHeadersLen)
	dst = dst[:start+preludeLen+envelopeHeadersLen]
	return s.seal(dst, start, s.now())
}

// PrevSignature returns the latest signature of the chain (the seed before
// the first envelope), hex-encoded.
func (s *Signer) PrevSignature() string { return string(s.chain.prevHex) }

// seal fills in the prelude and headers of the envelope that starts at
// dst[start:], whose payload already follows the reserved header space,
// and appends its CRC.
func (s *Signer) seal(dst []byte, start int, now time.Time) []byte {
	ms := now.UnixMilli()
	payload := dst[start+preludeLen+envelopeHeadersLen:]
	hash := sha256.Sum256(payload)
	sig := s.chain.signature(ms, &hash)

	total := len(dst) - start + 4
	b := dst[start:start:len(dst)]
	b = appendPrelude(b, total, envelopeHeadersLen)
	b = append(b, byte(len(DateHeader)))
	b = append(b, DateHeader...)
	b = append(b, byte(TypeTimestamp))
	b = binary.BigEndian.AppendUint64(b, uint64(ms))
	b = append(b, byte(len(ChunkSignatureHeader)))
	b = append(b, ChunkSignatureHeader...)
	b = append(b, byte(TypeBytes), 0, sha256.Size)
	_ = append(b, sig[:]...)
	return binary.BigEndian.AppendUint32(dst, crc32.Update(0, crcTable, dst[start:]))
}
