package eventstream

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"hash"
	"strings"
	"time"
)

// Header names of a signed envelope.
const (
	DateHeader           = ":date"
	ChunkSignatureHeader = ":chunk-signature"
)

// envelopeHeadersLen is the encoded size of the :date header (15 bytes)
// and the 32-byte :chunk-signature header (52 bytes).
const envelopeHeadersLen = 15 + 52

const (
	dateHeaderLen = 1 + len(DateHeader) + 1 + 8
	stsAlgorithm  = "AWS4-HMAC-SHA256-PAYLOAD"
)

// chain holds what signing and verification share: the signing key for the
// current day, an HMAC keyed with it, the previous signature and a scratch
// buffer for the string to sign. Nothing here allocates once the key for
// the day has been derived.
type chain struct {
	secret  string
	region  string
	service string

	keyDay  [8]byte // yyyymmdd of the derived key
	key     [sha256.Size]byte
	mac     hash.Hash
	prevHex []byte // hex of the previous signature; the seed at first
	sts     []byte
	sum     [sha256.Size]byte
}

func newChain(secret, region, service string, seed []byte) chain {
	c := chain{secret: secret, region: region, service: service}
	c.prevHex = make([]byte, hex.EncodedLen(len(seed)), max(hex.EncodedLen(len(seed)), 2*sha256.Size))
	hex.Encode(c.prevHex, seed)
	return c
}

// signature computes the chunk signature of an envelope whose :date is
// ms milliseconds since the epoch and whose payload hashes to payloadHash.
// It advances the chain.
func (c *chain) signature(ms int64, payloadHash *[sha256.Size]byte) [sha256.Size]byte {
	var dateHeader [dateHeaderLen]byte
	encodeDateHeader(&dateHeader, ms)
	dateHash := sha256.Sum256(dateHeader[:])
	return c.sign(time.UnixMilli(ms), &dateHash, payloadHash)
}

// sign computes the signature for STS time t (truncated to seconds), the
// hash of the envelope's :date header bytes and the hash of its payload,
// and advances the chain.
func (c *chain) sign(t time.Time, headerHash, payloadHash *[sha256.Size]byte) [sha256.Size]byte {
	t = t.UTC()
	var day [8]byte
	appendDay(day[:0], t)
	if c.mac == nil || day != c.keyDay {
		c.key = deriveKey(c.secret, day[:], c.region, c.service)
		c.keyDay = day
		c.mac = hmac.New(sha256.New, c.key[:])
	}

	s := c.sts[:0]
	s = append(s, stsAlgorithm...)
	s = append(s, '\n')
	s = appendISO8601(s, t)
	s = append(s, '\n')
	s = append(s, day[:]...)
	s = append(s, '/')
	s = append(s, c.region...)
	s = append(s, '/')
	s = append(s, c.service...)
	s = append(s, "/aws4_request\n"...)
	s = append(s, c.prevHex...)
	s = append(s, '\n')
	s = hex.AppendEncode(s, headerHash[:])
	s = append(s, '\n')
	s = hex.AppendEncode(s, payloadHash[:])
	c.sts = s

	c.mac.Reset()
	c.mac.Write(s)
	var sig [sha256.Size]byte
	c.mac.Sum(c.sum[:0])
	sig = c.sum
	c.prevHex = hex.AppendEncode(c.prevHex[:0], sig[:])
	return sig
}

// deriveKey computes the SigV4 signing key for one day, region and service.
func deriveKey(secret string, day []byte, region, service string) [sha256.Size]byte {
	k := hmacSum([]byte("AWS4"+secret), day)
	k = hmacSum(k[:], []byte(region))
	k = hmacSum(k[:], []byte(service))
	return hmacSum(k[:], []byte("aws4_request"))
}

func hmacSum(key, data []byte) [sha256.Size]byte {
	m := hmac.New(sha256.New, key)
	m.Write(data)
	var out [sha256.Size]byte
	m.Sum(out[:0])
	return out
}

func encodeDateHeader(b *[dateHeaderLen]byte, ms int64) {
	b[0] = byte(len(DateHeader))
	copy(b[1:], DateHeader)
	b[1+len(DateHeader)] = byte(TypeTimestamp)
	binary.BigEndian.PutUint64(b[2+len(DateHeader):], uint64(ms))
}

// appendDay appends t as yyyymmdd.
func appendDay(b []byte, t time.Time) []byte {
	y, m, d := t.Date()
	b = append4(b, y)
	b = append2(b, int(m))
	return append2(b, d)
}

// appendISO8601 appends t as yyyymmddThhmmssZ.
func appendISO8601(b []byte, t time.Time) []byte {
	b = appendDay(b, t)
	b = append(b, 'T')
	b = append2(b, t.Hour())
	b = append2(b, t.Minute())
	b = append2(b, t.Second())
	return append(b, 'Z')
}

func append2(b []byte, v int) []byte { return append(b, byte('0'+v/10), byte('0'+v%10)) }

func append4(b []byte, v int) []byte {
	return append(b, byte('0'+v/1000%10), byte('0'+v/100%10), byte('0'+v/10%10), byte('0'+v%10))
}

// SeedFromAuthorization returns the request signature carried by a SigV4
// Authorization header value: the seed of an event signature chain.
func SeedFromAuthorization(authorization string) ([]byte, error) {
	for part := range strings.SplitSeq(authorization, ",") {
		part = strings.TrimSpace(part)
		if i := strings.Index(part, "Signature="); i >= 0 {
			sig, err := hex.DecodeString(part[i+len("Signature="):])
			if err != nil || len(sig) != sha256.Size {
				return nil, errors.New("eventstream: malformed Signature in Authorization header")
			}
			return sig, nil
		}
	}
	return nil, errors.New("eventstream: no Signature in Authorization header")
}
