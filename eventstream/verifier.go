package eventstream

import (
	"crypto/hmac"
	"crypto/sha256"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
)

// VerifierOptions configures a [Verifier].
type VerifierOptions struct {
	// Now returns the current time, used with MaxSkew. Nil means time.Now.
	Now func() time.Time
	// MaxSkew, when positive, rejects envelopes whose :date is further
	// than this from Now, with a [*SignatureError] that matches
	// [ErrSignatureMismatch] (a stale date invalidates the signature, as
	// for SigV4 requests). Zero disables the check.
	MaxSkew time.Duration
}

// A Verifier checks a chain of signed envelopes, as a service does: each
// :chunk-signature must be the signature of its envelope chained from the
// previous one, starting at the seed. The STS time is the envelope's :date
// truncated to whole seconds.
//
// A Verifier is not safe for concurrent use.
type Verifier struct {
	chain chain
	opts  VerifierOptions
	index int
	ended bool
}

// NewVerifier returns a Verifier for the chain that starts at seed, signed
// with creds for region and service.
func NewVerifier(creds aws.Credentials, region, service string, seed []byte, optFns ...func(*VerifierOptions)) *Verifier {
	v := &Verifier{chain: newChain(creds.SecretAccessKey, region, service, seed)}
	for _, fn := range optFns {
		fn(&v.opts)
	}
	if v.opts.Now == nil {
		v.opts.Now = time.Now
	}
	return v
}

// Verify checks the envelope m and returns its payload: the encoded inner
// message, or an empty slice for the end frame, after which [Verifier.Ended]
// reports true and any further envelope is an error. A failure is a
// [*SignatureError]; a wrong signature matches [ErrSignatureMismatch].
// A rejected envelope does not advance the chain: the next call still
// expects the envelope that should have come.
func (v *Verifier) Verify(m *Message) ([]byte, error) {
	idx := v.index
	if v.ended {
		return nil, &SignatureError{Index: idx, Reason: "envelope after the end frame", Err: ErrStreamEnded}
	}
	date, ok := m.Headers.Get(DateHeader)
	if !ok || date.Type != TypeTimestamp {
		return nil, &SignatureError{Index: idx, Reason: "missing or mistyped :date header", Err: ErrInvalidHeader}
	}
	got, ok := m.Headers.Get(ChunkSignatureHeader)
	if !ok || got.Type != TypeBytes || len(got.Bytes) != sha256.Size {
		return nil, &SignatureError{Index: idx, Reason: "missing or malformed :chunk-signature header", Err: ErrInvalidHeader}
	}
	if len(m.Headers) != 2 {
		return nil, &SignatureError{Index: idx, Reason: fmt.Sprintf("envelope has %d headers, want :date and :chunk-signature", len(m.Headers)), Err: ErrInvalidHeader}
	}
	if v.opts.MaxSkew > 0 {
		if d := v.opts.Now().Sub(date.Time()); d > v.opts.MaxSkew || -d > v.opts.MaxSkew {
			return nil, &SignatureError{Index: idx, Reason: fmt.Sprintf(":date is %v away from the verifier's clock", d.Round(time.Second)), Err: ErrSignatureMismatch}
		}
	}
	hash := sha256.Sum256(m.Payload)
	want := v.chain.signature(date.Int, &hash)
	if !hmac.Equal(want[:], got.Bytes) {
		return nil, &SignatureError{Index: idx, Reason: "chunk signature does not match", Err: ErrSignatureMismatch}
	}
	v.chain.advance(&want)
	v.index++
	if len(m.Payload) == 0 {
		v.ended = true
	}
	return m.Payload, nil
}

// Ended reports whether the end frame has been verified.
func (v *Verifier) Ended() bool { return v.ended }

// Count returns the number of envelopes verified so far, end frame
// included.
func (v *Verifier) Count() int { return v.index }
