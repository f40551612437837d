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

// A Signer wraps event messages in signed envelopes (docs/wire.md §4): an outer
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

	innerPrelude, envPrelude preludeCache
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
// payload is copied once. dst grows at most once; with enough capacity,
// AppendMessage does not allocate.
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
	envLen := Overhead + envelopeHeadersLen + innerLen
	dst = grow(dst, envLen)[:start+envLen]
	env := dst[start:]
	inner := env[preludeLen+envelopeHeadersLen : envLen-4]
	crc := putMessage(inner, m, hl, &s.innerPrelude)
	// The CRC of the whole inner message, its own CRC included.
	crc = crc32.Update(crc, crcTable, inner[innerLen-4:])
	s.seal(env, s.now(), crc, true)
	return dst, nil
}

// AppendPayload wraps payload, which is normally an encoded event message,
// in a signed envelope appended to dst.
func (s *Signer) AppendPayload(dst, payload []byte) ([]byte, error) {
	if len(payload) > DefaultMaxPayloadLen {
		return dst, &LengthError{Err: ErrPayloadTooLarge, Length: int64(len(payload)), Limit: DefaultMaxPayloadLen}
	}
	start := len(dst)
	envLen := Overhead + envelopeHeadersLen + len(payload)
	dst = grow(dst, envLen)[:start+envLen]
	copy(dst[start+preludeLen+envelopeHeadersLen:], payload)
	s.seal(dst[start:], s.now(), 0, false)
	return dst, nil
}

// EnvelopePrefixLen is the number of bytes a signed envelope holds before
// its payload: the prelude and the :date and :chunk-signature headers. The
// envelope's 4-byte CRC follows the payload.
const EnvelopePrefixLen = preludeLen + envelopeHeadersLen

// SealMessage signs, in place, an envelope whose payload is already
// there: env is EnvelopePrefixLen reserved bytes, then one encoded
// message ending with its own CRC (as [FinishMessage] leaves it), then 4
// reserved bytes, which SealMessage fills in with the prelude, the
// headers and the CRC. The result is what AppendPayload appends for that
// message, without copying it: a sender that encodes the message inside
// its envelope hashes it where it lies. The message's CRC is trusted, not
// checked (the envelope's CRC is derived from it). SealMessage fails,
// signing nothing, when env is too short to hold a message or the message
// is larger than DefaultMaxPayloadLen.
func (s *Signer) SealMessage(env []byte) error {
	const bodyStart = EnvelopePrefixLen
	n := len(env) - bodyStart - 4
	switch {
	case n < Overhead:
		return &LengthError{Err: ErrInvalidLength, Length: int64(max(n, 0)), Limit: Overhead}
	case n > DefaultMaxPayloadLen:
		return &LengthError{Err: ErrPayloadTooLarge, Length: int64(n), Limit: DefaultMaxPayloadLen}
	}
	msgCRC := env[bodyStart+n-4 : bodyStart+n]
	// The CRC of the whole message, its own CRC included.
	crc := crc32.Update(binary.BigEndian.Uint32(msgCRC), crcTable, msgCRC)
	s.seal(env, s.now(), crc, true)
	return nil
}

// AppendEnd appends the end frame: a signed envelope with an empty payload,
// which tells the service that no more events follow. Send it last, then
// close the request body.
func (s *Signer) AppendEnd(dst []byte) []byte {
	start := len(dst)
	envLen := Overhead + envelopeHeadersLen
	dst = grow(dst, envLen)[:start+envLen]
	s.seal(dst[start:], s.now(), 0, false)
	return dst
}

// PrevSignature returns the latest signature of the chain (the seed before
// the first envelope), hex-encoded.
func (s *Signer) PrevSignature() string { return string(s.chain.prevHex) }

// crcCombineMin is the payload length from which combining the envelope's
// CRC from the inner message's CRC is cheaper than a second CRC pass.
const crcCombineMin = 8 << 10

// seal signs the envelope env, whose payload is already in place between
// the reserved prelude and header space and the 4 bytes of the message CRC,
// and fills in everything but the payload. When hasCRC is set, payloadCRC
// is the CRC-32 of the payload.
func (s *Signer) seal(env []byte, now time.Time, payloadCRC uint32, hasCRC bool) {
	const bodyStart = preludeLen + envelopeHeadersLen
	ms := now.UnixMilli()
	payload := env[bodyStart : len(env)-4]
	hash := s.chain.sha256Of(payload)
	sig := s.chain.signature(ms, &hash)
	s.chain.advance(&sig)

	s.envPrelude.put(env, len(env), envelopeHeadersLen)
	h := env[preludeLen:bodyStart]
	h[0] = byte(len(DateHeader))
	copy(h[1:], DateHeader)
	h[1+len(DateHeader)] = byte(TypeTimestamp)
	binary.BigEndian.PutUint64(h[2+len(DateHeader):], uint64(ms))
	h = h[dateHeaderLen:]
	h[0] = byte(len(ChunkSignatureHeader))
	copy(h[1:], ChunkSignatureHeader)
	h = h[1+len(ChunkSignatureHeader):]
	h[0] = byte(TypeBytes)
	binary.BigEndian.PutUint16(h[1:], sha256.Size)
	copy(h[3:], sig[:])

	var crc uint32
	if hasCRC && len(payload) >= crcCombineMin {
		crc = crcCombine(crc32.Update(0, crcTable, env[:bodyStart]), payloadCRC, len(payload))
	} else {
		crc = crcUpdate(0, env[:len(env)-4])
	}
	binary.BigEndian.PutUint32(env[len(env)-4:], crc)
}
