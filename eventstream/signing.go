package eventstream

import (
	"bytes"
	"crypto/sha256"
	"encoding"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"hash"
	"strings"
	"sync/atomic"
	"time"

	"github.com/sagemaker-bidi/sagemaker-bidi/internal/sigv4"
)

// Header names of a signed envelope.
const (
	DateHeader           = ":date"
	ChunkSignatureHeader = ":chunk-signature"
)

// envelopeHeadersLen is the encoded size of the :date header (15 bytes)
// and the 32-byte :chunk-signature header (52 bytes).
const envelopeHeadersLen = dateHeaderLen + 1 + len(ChunkSignatureHeader) + 1 + 2 + sha256.Size

const (
	dateHeaderLen = 1 + len(DateHeader) + 1 + 8
	stsAlgorithm  = "AWS4-HMAC-SHA256-PAYLOAD"
)

// chain holds what signing and verification share: the signing key for the
// current day, an HMAC keyed with it, the previous signature and a scratch
// buffer for the string to sign. The parts of the string to sign that only
// change once a second (the time stamp and the credential scope) are
// cached; the hash of the :date header, which changes once a millisecond,
// is shared by every chain (sharedDate). Nothing here allocates once the
// key for the day has been derived.
type chain struct {
	secret  string
	region  string
	service string

	day []byte            // yyyymmdd of the derived key; empty until one is
	key [sha256.Size]byte // the signing key for day
	pad [sha256.BlockSize]byte

	// HMAC-SHA256 keyed with the signing key for day, computed with two
	// SHA-256 states: inner starts from innerStart, the state after the
	// inner pad and the first blocks of the string to sign, which only
	// change once a second; outer starts from outerStart, the state after
	// the outer pad.
	inner, outer hash.Hash
	innerPad     []byte // marshaled state after the inner pad
	innerStart   []byte // marshaled state after the inner pad and sts[:startLen]
	outerStart   []byte // marshaled state after the outer pad
	startLen     int

	// sts[:prefixLen] is the string to sign up to the previous signature
	// for the second prefixSec.
	sts       []byte
	prefixLen int
	prefixSec int64
	hasPrefix bool

	prevHex []byte // hex of the previous signature; the seed at first
	sum     [sha256.Size]byte
	date    [dateHeaderLen]byte // the encoded :date header being hashed
}

func newChain(secret, region, service string, seed []byte) chain {
	c := chain{secret: secret, region: region, service: service}
	// Room for the string to sign, the three saved SHA-256 states (108
	// bytes each) and the day of the key, so that they never grow (the
	// first signature is no deeper than the others: no growslice).
	c.sts = make([]byte, 0, 256+len(region)+len(service)+hex.EncodedLen(len(seed)))
	states := make([]byte, 3*128+len("20060102"))
	c.innerPad, c.innerStart, c.outerStart = states[0:0:128], states[128:128:256], states[256:256:384]
	c.day = states[384:384]
	c.prevHex = make([]byte, hex.EncodedLen(len(seed)), max(hex.EncodedLen(len(seed)), 2*sha256.Size))
	hex.Encode(c.prevHex, seed)
	return c
}

// dateHeaderHash sets h to the SHA-256 of the encoded :date header for ms
// milliseconds since the epoch: the "header hash" of an event's string to
// sign.
func (c *chain) dateHeaderHash(ms int64, h *[sha256.Size]byte) {
	if sharedDate.get(ms, h) {
		return
	}
	encodeDateHeader(&c.date, ms) // the chain's array: a local would escape into the hash
	*h = c.sha256Of(c.date[:])
	sharedDate.put(ms, h)
}

// sha256Of returns the SHA-256 of b (a payload, or a :date header),
// hashed in the outer HMAC state, which compute restores before it uses
// it, preemptChunk bytes per call: the garbage collector need not wait
// for milliseconds (10 ms for 16 MiB) until the signing goroutine can be
// stopped. It is not sha256.Sum256, whose frame holds a whole
// digest (200 bytes) and lay on the deepest path of a Send (see "Stack
// depth" in docs/design.md).
func (c *chain) sha256Of(b []byte) [sha256.Size]byte {
	c.makeStates()
	h := c.outer
	h.Reset()
	for len(b) > preemptChunk {
		h.Write(b[:preemptChunk])
		b = b[preemptChunk:]
	}
	h.Write(b)
	h.Sum(c.sum[:0]) // into the chain's array: a local would escape
	return c.sum
}

// sharedDate holds the :date header hash of the latest millisecond, for
// every chain in the process: at a high rate of events, the signers of
// many streams sign within the same millisecond, and compute it once.
var sharedDate dateHashCache

// dateHashCache is one millisecond's :date hash behind a sequence lock:
// the sequence is odd while a writer changes the entry, and a reader
// that sees it change (or odd) computes the hash itself. A writer that
// finds another one at work leaves the entry alone. Every field is
// atomic, so readers never block and the race detector agrees.
type dateHashCache struct {
	seq  atomic.Uint64
	ms   atomic.Int64
	hash [sha256.Size / 8]atomic.Uint64
}

// get sets h to the cached hash if it is ms's, and reports whether it did.
func (c *dateHashCache) get(ms int64, h *[sha256.Size]byte) bool {
	seq := c.seq.Load()
	if seq&1 != 0 || seq == 0 || c.ms.Load() != ms {
		return false
	}
	for i := range c.hash {
		binary.BigEndian.PutUint64(h[8*i:], c.hash[i].Load())
	}
	return c.seq.Load() == seq
}

// put caches h as ms's hash, unless another writer is at work.
func (c *dateHashCache) put(ms int64, h *[sha256.Size]byte) {
	seq := c.seq.Load()
	if seq&1 != 0 || !c.seq.CompareAndSwap(seq, seq+1) {
		return
	}
	c.ms.Store(ms)
	for i := range c.hash {
		c.hash[i].Store(binary.BigEndian.Uint64(h[8*i:]))
	}
	c.seq.Store(seq + 2)
}

// signature computes the chunk signature of an envelope whose :date is ms
// milliseconds since the epoch and whose payload hashes to payloadHash,
// without advancing the chain.
func (c *chain) signature(ms int64, payloadHash *[sha256.Size]byte) [sha256.Size]byte {
	var dateHash [sha256.Size]byte
	c.dateHeaderHash(ms, &dateHash)
	return c.compute(time.UnixMilli(ms), &dateHash, payloadHash)
}

// sign computes the signature for STS time t (truncated to seconds), the
// hash of the envelope's header bytes and the hash of its payload, and
// advances the chain.
func (c *chain) sign(t time.Time, headerHash, payloadHash *[sha256.Size]byte) [sha256.Size]byte {
	sig := c.compute(t, headerHash, payloadHash)
	c.advance(&sig)
	return sig
}

// advance makes sig the previous signature of the next event.
func (c *chain) advance(sig *[sha256.Size]byte) {
	c.prevHex = c.prevHex[:2*sha256.Size]
	putHex32(c.prevHex, sig)
}

// compute returns the signature for STS time t, the header hash and the
// payload hash, chained from the previous signature. The string to sign is
// left in c.sts.
func (c *chain) compute(t time.Time, headerHash, payloadHash *[sha256.Size]byte) [sha256.Size]byte {
	if sec := t.Unix(); !c.hasPrefix || sec != c.prefixSec {
		c.setPrefix(t)
		c.prefixSec, c.hasPrefix = sec, true
	}
	// prefix, previous signature, header hash, payload hash.
	n := c.prefixLen + len(c.prevHex) + 2*(1+2*sha256.Size)
	if cap(c.sts) < n {
		c.sts = append(c.sts[:c.prefixLen], make([]byte, n-c.prefixLen)...)
	}
	s := c.sts[:n]
	off := c.prefixLen + copy(s[c.prefixLen:], c.prevHex)
	s[off] = '\n'
	putHex32(s[off+1:], headerHash)
	off += 1 + 2*sha256.Size
	s[off] = '\n'
	putHex32(s[off+1:], payloadHash)
	c.sts = s

	restore(c.inner, c.innerStart)
	c.inner.Write(s[c.startLen:])
	c.inner.Sum(c.sum[:0])
	restore(c.outer, c.outerStart)
	c.outer.Write(c.sum[:])
	c.outer.Sum(c.sum[:0])
	return c.sum
}

// snapshot appends the marshaled state of h to b.
func snapshot(b []byte, h hash.Hash) []byte {
	b, err := h.(encoding.BinaryAppender).AppendBinary(b)
	if err != nil {
		panic("eventstream: cannot save SHA-256 state: " + err.Error())
	}
	return b
}

// restore sets the state of h to one saved by snapshot.
func restore(h hash.Hash, state []byte) {
	if err := h.(encoding.BinaryUnmarshaler).UnmarshalBinary(state); err != nil {
		panic("eventstream: cannot restore SHA-256 state: " + err.Error())
	}
}

// setKey takes the signing key for day (from internal/sigv4, which
// derives it once for every chain and request signer of the process) and
// prepares the HMAC states.
func (c *chain) setKey(day []byte) {
	c.day = append(c.day[:0], day...)
	c.makeStates()
	c.key = sigv4.SigningKey(c.secret, c.day, c.region, c.service)
	c.setPads(c.key[:])
	c.innerPad = snapshot(c.innerPad[:0], c.inner)
	c.outerStart = snapshot(c.outerStart[:0], c.outer)
}

// makeStates makes the two SHA-256 states, once.
func (c *chain) makeStates() {
	if c.inner == nil {
		c.inner, c.outer = sha256.New(), sha256.New()
	}
}

// setPads resets the inner and outer states and feeds them the HMAC-SHA256
// inner and outer pads of key.
func (c *chain) setPads(key []byte) {
	pad := &c.pad
	*pad = [sha256.BlockSize]byte{}
	if len(key) > sha256.BlockSize {
		c.inner.Reset()
		c.inner.Write(key)
		c.inner.Sum(pad[:0])
	} else {
		copy(pad[:], key)
	}
	for i := range pad {
		pad[i] ^= 0x36
	}
	c.inner.Reset()
	c.inner.Write(pad[:])
	for i := range pad {
		pad[i] ^= 0x36 ^ 0x5c
	}
	c.outer.Reset()
	c.outer.Write(pad[:])
}

// setPrefix formats the part of the string to sign that depends on the
// second of t, and derives the signing key when the day changes. Times are
// formatted as time.Format does, as the AWS SDK for Go does, even for years
// outside 0..9999.
func (c *chain) setPrefix(t time.Time) {
	t = t.UTC()
	s := append(c.sts[:0], stsAlgorithm...)
	s = append(s, '\n')
	s = appendAmzDate(s, t, true)
	s = append(s, '\n')
	dayStart := len(s)
	s = appendAmzDate(s, t, false)
	if day := s[dayStart:]; len(c.day) == 0 || !bytes.Equal(day, c.day) {
		c.setKey(day)
	}
	s = append(s, '/')
	s = append(s, c.region...)
	s = append(s, '/')
	s = append(s, c.service...)
	s = append(s, "/aws4_request\n"...)
	c.prefixLen = len(s)
	c.sts = s

	// Hash the whole blocks of the prefix once for this second.
	c.startLen = len(s) / sha256.BlockSize * sha256.BlockSize
	restore(c.inner, c.innerPad)
	c.inner.Write(s[:c.startLen])
	c.innerStart = snapshot(c.innerStart[:0], c.inner)
}

// appendAmzDate appends t, a UTC time, as SigV4 writes one
// ("20060102T150405Z"), or its date alone ("20060102") when withTime is
// false. It takes t apart with Date and Clock rather than AppendFormat,
// whose frames (about 700 bytes) would lie once a second under the
// deepest call of a Send (see "Stack depth" in docs/design.md). A year
// outside 0–9999 is left to AppendFormat.
func appendAmzDate(b []byte, t time.Time, withTime bool) []byte {
	y, m, d := t.Date()
	if y < 0 || y > 9999 {
		return appendAmzDateSlow(b, t, withTime)
	}
	b = appendDigits(b, y, 4)
	b = appendDigits(b, int(m), 2)
	b = appendDigits(b, d, 2)
	if !withTime {
		return b
	}
	h, mi, sec := t.Clock()
	b = append(b, 'T')
	b = appendDigits(b, h, 2)
	b = appendDigits(b, mi, 2)
	b = appendDigits(b, sec, 2)
	return append(b, 'Z')
}

//go:noinline
func appendAmzDateSlow(b []byte, t time.Time, withTime bool) []byte {
	if withTime {
		return t.AppendFormat(b, "20060102T150405Z")
	}
	return t.AppendFormat(b, "20060102")
}

// appendDigits appends the n lowest decimal digits of v ≥ 0.
func appendDigits(b []byte, v, n int) []byte {
	start := len(b)
	for range n {
		b = append(b, '0')
	}
	for i := len(b) - 1; i >= start; i-- {
		b[i] = byte('0' + v%10)
		v /= 10
	}
	return b
}

func encodeDateHeader(b *[dateHeaderLen]byte, ms int64) {
	b[0] = byte(len(DateHeader))
	copy(b[1:], DateHeader)
	b[1+len(DateHeader)] = byte(TypeTimestamp)
	binary.BigEndian.PutUint64(b[2+len(DateHeader):], uint64(ms))
}

// putHex32 writes the lowercase hexadecimal form of a SHA-256 sum into
// the first 64 bytes of dst. It converts four bytes at a time with integer
// arithmetic, which is several times faster than a table lookup per byte.
func putHex32(dst []byte, src *[sha256.Size]byte) {
	dst = dst[:2*sha256.Size]
	for i := 0; i < sha256.Size; i += 4 {
		binary.BigEndian.PutUint64(dst[2*i:], hexDigits(binary.BigEndian.Uint32(src[i:])))
	}
}

// hexDigits returns the eight ASCII hex digits of v, most significant
// first when stored big-endian.
func hexDigits(v uint32) uint64 {
	// Spread the four bytes into 16-bit lanes, then each byte's two
	// nibbles into the two bytes of its lane.
	x := uint64(v)
	x = (x | x<<16) & 0x0000ffff0000ffff
	x = (x | x<<8) & 0x00ff00ff00ff00ff
	x = (x | x<<4) & 0x0f0f0f0f0f0f0f0f
	// Each byte n in 0..15 becomes '0'+n, plus 'a'-'0'-10 when n > 9.
	letters := ((x + 0x0606060606060606) >> 4) & 0x0101010101010101
	return x + 0x3030303030303030 + letters*('a'-'0'-10)
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
