package eventstream

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"hash/crc32"
	"io"
	"math/rand/v2"
	"testing"
	"testing/iotest"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
	sges "github.com/aws/smithy-go/eventstream"
)

// Property tests against the AWS building blocks. Every test draws from a
// fixed seed, so a failure reproduces; the iteration counts keep the
// package well under 20 s with -race.

// TestPropertyOursToSmithy: messages encoded by AppendMessage decode to
// the same message with smithy-go's Decoder.
func TestPropertyOursToSmithy(t *testing.T) {
	r := newRand(1)
	dec := sges.NewDecoder()
	for i := range 300 {
		m := randMessage(r, 12, 70<<10)
		b, err := AppendMessage(nil, m)
		if err != nil {
			t.Fatalf("message %d: %v", i, err)
		}
		sm, err := dec.Decode(bytes.NewReader(b), nil)
		if err != nil {
			t.Fatalf("message %d: smithy-go cannot decode ours: %v", i, err)
		}
		got, err := fromSmithy(sm)
		if err != nil {
			t.Fatal(err)
		}
		assertMessageEqual(t, got, m)
	}
}

// TestPropertySmithyToOurs: messages encoded by smithy-go's Encoder decode
// to the same message with ours, and the two encoders agree byte for byte.
func TestPropertySmithyToOurs(t *testing.T) {
	r := newRand(2)
	enc := sges.NewEncoder()
	var buf bytes.Buffer
	for i := range 300 {
		m := randMessage(r, 12, 70<<10)
		buf.Reset()
		if err := enc.Encode(&buf, toSmithy(m)); err != nil {
			t.Fatalf("message %d: smithy-go: %v", i, err)
		}
		d := NewDecoder(bytes.NewReader(buf.Bytes()))
		got, err := d.Decode()
		if err != nil {
			t.Fatalf("message %d: ours cannot decode smithy-go's: %v", i, err)
		}
		assertMessageEqual(t, got, m)
		var um Message
		if err := Unmarshal(buf.Bytes(), &um); err != nil {
			t.Fatalf("message %d: Unmarshal: %v", i, err)
		}
		assertMessageEqual(t, &um, m)
		ours, err := AppendMessage(nil, m)
		if err != nil || !bytes.Equal(ours, buf.Bytes()) {
			t.Fatalf("message %d: encoders disagree (%v)", i, err)
		}
	}
}

// TestPropertyChunkedReads: the decoder gives the same messages whatever
// the reader's chunking.
func TestPropertyChunkedReads(t *testing.T) {
	r := newRand(3)
	var msgs []*Message
	var stream []byte
	for range 60 {
		m := randMessage(r, 8, 70<<10)
		if r.IntN(3) > 0 {
			m.Payload = m.Payload[:min(len(m.Payload), 64)]
		}
		msgs = append(msgs, m)
		var err error
		if stream, err = AppendMessage(stream, m); err != nil {
			t.Fatal(err)
		}
	}
	readers := map[string]func() io.Reader{
		"whole":      func() io.Reader { return bytes.NewReader(stream) },
		"onebyte":    func() io.Reader { return iotest.OneByteReader(bytes.NewReader(stream)) },
		"half":       func() io.Reader { return iotest.HalfReader(bytes.NewReader(stream)) },
		"dataerr":    func() io.Reader { return iotest.DataErrReader(bytes.NewReader(stream)) },
		"chunks7":    func() io.Reader { return &chunkReader{r: bytes.NewReader(stream), rand: newRand(4), max: 7} },
		"chunks4099": func() io.Reader { return &chunkReader{r: bytes.NewReader(stream), rand: newRand(5), max: 4099} },
	}
	for name, mk := range readers {
		t.Run(name, func(t *testing.T) {
			d := NewDecoder(mk())
			for i, want := range msgs {
				got, err := d.Decode()
				if err != nil {
					t.Fatalf("message %d: %v", i, err)
				}
				assertMessageEqual(t, got, want)
			}
			if _, err := d.Decode(); err != io.EOF {
				t.Fatalf("end: %v, want io.EOF", err)
			}
			if d.Offset() != int64(len(stream)) {
				t.Errorf("Offset %d, want %d", d.Offset(), len(stream))
			}
		})
	}
}

// randChain is a random signing setup with a sequence of events.
type randChain struct {
	creds           aws.Credentials
	region, service string
	seed            []byte
	times           []time.Time // one per envelope, end frame included
	events          []*Message
}

func newRandChain(r *rand.Rand, events int) *randChain {
	c := &randChain{
		creds:   aws.Credentials{AccessKeyID: "AKID", SecretAccessKey: string(randBytes(r, 1+r.IntN(100)))},
		region:  []string{"us-west-2", "eu-central-1", "ap-southeast-1", "x"}[r.IntN(4)],
		service: []string{"sagemaker", "transcribe", "bedrock"}[r.IntN(3)],
		seed:    randBytes(r, sha256.Size),
	}
	// Start anywhere in 1970..2100, step by 0 ms to a few hours, so that
	// envelopes share milliseconds and seconds, and cross midnight.
	t := time.UnixMilli(r.Int64N(4102444800000))
	for range events + 1 {
		switch r.IntN(4) {
		case 0:
		case 1:
			t = t.Add(time.Duration(r.IntN(1000)) * time.Millisecond)
		case 2:
			t = t.Add(time.Duration(r.IntN(5000)) * time.Millisecond)
		default:
			t = t.Add(time.Duration(r.Int64N(int64(8 * time.Hour))))
		}
		c.times = append(c.times, t)
	}
	for range events {
		c.events = append(c.events, randMessage(r, 6, 20<<10))
	}
	return c
}

func (c *randChain) signer(tb testing.TB) *Signer {
	return NewSigner(c.creds, c.region, c.service, c.seed, steppingClock(tb, c.times...))
}

// stream signs the events with our Signer, alternating AppendMessage and
// AppendPayload, and returns the envelopes and the encoded inner messages.
func (c *randChain) stream(tb testing.TB) (envelopes, inners [][]byte) {
	s := c.signer(tb)
	var buf []byte
	for i, ev := range c.events {
		inner, err := AppendMessage(nil, ev)
		if err != nil {
			tb.Fatal(err)
		}
		start := len(buf)
		if i%2 == 0 {
			buf, err = s.AppendMessage(buf, ev)
		} else {
			buf, err = s.AppendPayload(buf, inner)
		}
		if err != nil {
			tb.Fatal(err)
		}
		envelopes = append(envelopes, buf[start:len(buf):len(buf)])
		inners = append(inners, inner)
	}
	start := len(buf)
	buf = s.AppendEnd(buf)
	envelopes = append(envelopes, buf[start:])
	inners = append(inners, []byte{})
	return envelopes, inners
}

// TestPropertySignerMatchesStreamSigner: random event sequences signed by
// ours match v4.StreamSigner signature for signature, where the headers
// StreamSigner hashes are the encoded :date header, as in aws-sdk-go-v2.
func TestPropertySignerMatchesStreamSigner(t *testing.T) {
	r := newRand(6)
	var hdr bytes.Buffer
	for n := range 40 {
		c := newRandChain(r, 1+r.IntN(12))
		envelopes, inners := c.stream(t)
		ref := v4.NewStreamSigner(c.creds, c.service, c.region, c.seed)
		for i, env := range envelopes {
			var m Message
			if err := Unmarshal(env, &m); err != nil {
				t.Fatalf("chain %d envelope %d: %v", n, i, err)
			}
			if len(m.Headers) != 2 || m.Headers[0].Name != DateHeader || m.Headers[1].Name != ChunkSignatureHeader {
				t.Fatalf("chain %d envelope %d: headers %s", n, i, describe(&m))
			}
			if !bytes.Equal(m.Payload, inners[i]) {
				t.Fatalf("chain %d envelope %d: payload is not the inner message", n, i)
			}
			date := m.Headers[0].Value
			if date.Type != TypeTimestamp || date.Int != c.times[i].UnixMilli() {
				t.Fatalf("chain %d envelope %d: :date %v, want %v", n, i, date, c.times[i])
			}
			// The :date header exactly as smithy-go's SigningWriter encodes it.
			hdr.Reset()
			if err := sges.EncodeHeaders(&hdr, sges.Headers{{Name: DateHeader, Value: sges.TimestampValue(c.times[i])}}); err != nil {
				t.Fatal(err)
			}
			want, err := ref.GetSignature(context.Background(), hdr.Bytes(), inners[i], c.times[i])
			if err != nil {
				t.Fatal(err)
			}
			if got := m.Headers[1].Value.Bytes; !bytes.Equal(got, want) {
				t.Fatalf("chain %d envelope %d at %v: signature %x, v4.StreamSigner %x", n, i, c.times[i], got, want)
			}
		}
	}
}

// TestPropertyVerifier: the Verifier accepts every chain the Signer makes
// and rejects any change to it.
func TestPropertyVerifier(t *testing.T) {
	r := newRand(7)
	for n := range 25 {
		c := newRandChain(r, 1+r.IntN(6))
		envelopes, _ := c.stream(t)
		newVerifier := func() *Verifier { return NewVerifier(c.creds, c.region, c.service, c.seed) }

		// verifyAll runs envelopes through a fresh verifier and returns the
		// index of the first rejected one, or -1.
		verifyAll := func(v *Verifier, envs [][]byte) (int, error) {
			var m Message
			for i, env := range envs {
				if err := Unmarshal(env, &m); err != nil {
					return i, err
				}
				if _, err := v.Verify(&m); err != nil {
					return i, err
				}
			}
			return -1, nil
		}

		v := newVerifier()
		if i, err := verifyAll(v, envelopes); err != nil {
			t.Fatalf("chain %d: envelope %d rejected: %v", n, i, err)
		}
		if !v.Ended() || v.Count() != len(envelopes) {
			t.Fatalf("chain %d: Ended %v Count %d", n, v.Ended(), v.Count())
		}
		var m Message
		if err := Unmarshal(envelopes[0], &m); err != nil {
			t.Fatal(err)
		}
		if _, err := v.Verify(&m); !errors.Is(err, ErrStreamEnded) {
			t.Errorf("chain %d: envelope after the end frame: %v", n, err)
		}

		// Any flipped bit in the bytes: the decoder or the verifier
		// rejects the chain at that envelope.
		for range 20 {
			k := r.IntN(len(envelopes))
			bad := bytes.Clone(envelopes[k])
			bad[r.IntN(len(bad))] ^= 1 << r.IntN(8)
			envs := append(append(append([][]byte{}, envelopes[:k]...), bad), envelopes[k+1:]...)
			if i, err := verifyAll(newVerifier(), envs); i != k || err == nil {
				t.Fatalf("chain %d: flipped bit in envelope %d: rejected at %d (%v)", n, k, i, err)
			}
		}

		// A flipped bit in the payload, :date or signature, with valid
		// CRCs: the verifier itself rejects it, and the chain does not
		// advance, so the genuine envelope still verifies.
		for field := range 3 {
			k := r.IntN(len(envelopes))
			v := newVerifier()
			if _, err := verifyAll(v, envelopes[:k]); err != nil {
				t.Fatal(err)
			}
			var m Message
			if err := Unmarshal(bytes.Clone(envelopes[k]), &m); err != nil {
				t.Fatal(err)
			}
			switch field {
			case 0:
				if len(m.Payload) == 0 {
					m.Payload = []byte{0}
				} else {
					m.Payload[r.IntN(len(m.Payload))] ^= 1 << r.IntN(8)
				}
			case 1:
				m.Headers[0].Value.Int ^= 1 << r.IntN(63)
			case 2:
				m.Headers[1].Value.Bytes[r.IntN(32)] ^= 1 << r.IntN(8)
			}
			if _, err := v.Verify(&m); !errors.Is(err, ErrSignatureMismatch) {
				t.Fatalf("chain %d: tampered field %d of envelope %d: %v", n, field, k, err)
			}
			if i, err := verifyAll(v, envelopes[k:]); err != nil {
				t.Fatalf("chain %d: after a rejected envelope, genuine envelope %d: %v", n, k+i, err)
			}
		}

		// Reordered envelopes.
		if len(envelopes) > 2 {
			k := r.IntN(len(envelopes) - 1)
			envs := append([][]byte{}, envelopes...)
			envs[k], envs[k+1] = envs[k+1], envs[k]
			if i, err := verifyAll(newVerifier(), envs); i != k || !errors.Is(err, ErrSignatureMismatch) {
				t.Fatalf("chain %d: swapped envelopes %d and %d: rejected at %d (%v)", n, k, k+1, i, err)
			}
		}
		// A dropped envelope.
		if len(envelopes) > 1 {
			k := r.IntN(len(envelopes) - 1)
			envs := append(append([][]byte{}, envelopes[:k]...), envelopes[k+1:]...)
			if i, err := verifyAll(newVerifier(), envs); i != k || !errors.Is(err, ErrSignatureMismatch) {
				t.Fatalf("chain %d: dropped envelope %d: rejected at %d (%v)", n, k, i, err)
			}
		}

		// Wrong seed, wrong key, wrong region or service.
		wrongSeed := bytes.Clone(c.seed)
		wrongSeed[r.IntN(len(wrongSeed))] ^= 1 << r.IntN(8)
		wrongCreds := c.creds
		wrongCreds.SecretAccessKey += "x"
		for name, v := range map[string]*Verifier{
			"seed":    NewVerifier(c.creds, c.region, c.service, wrongSeed),
			"key":     NewVerifier(wrongCreds, c.region, c.service, c.seed),
			"region":  NewVerifier(c.creds, c.region+"-1", c.service, c.seed),
			"service": NewVerifier(c.creds, c.region, c.service+"s", c.seed),
		} {
			if i, err := verifyAll(v, envelopes); i != 0 || !errors.Is(err, ErrSignatureMismatch) {
				t.Fatalf("chain %d: wrong %s: rejected at %d (%v)", n, name, i, err)
			}
		}
	}
}

// TestVerifierSkewAndShape covers the Verifier's checks other than the
// signature.
func TestVerifierSkewAndShape(t *testing.T) {
	s := NewSigner(sagemakerCreds, "us-west-2", "sagemaker", make([]byte, 32), fixedClock(sagemakerTime))
	env, _ := s.AppendPayload(nil, []byte("x"))
	var m Message
	if err := Unmarshal(env, &m); err != nil {
		t.Fatal(err)
	}
	newV := func(now time.Time) *Verifier {
		return NewVerifier(sagemakerCreds, "us-west-2", "sagemaker", make([]byte, 32), func(o *VerifierOptions) {
			o.Now = func() time.Time { return now }
			o.MaxSkew = 5 * time.Minute
		})
	}
	if _, err := newV(sagemakerTime.Add(4 * time.Minute)).Verify(&m); err != nil {
		t.Errorf("within skew: %v", err)
	}
	for _, d := range []time.Duration{6 * time.Minute, -6 * time.Minute} {
		var se *SignatureError
		if _, err := newV(sagemakerTime.Add(d)).Verify(&m); !errors.As(err, &se) || se.Index != 0 {
			t.Errorf("skew %v: %v", d, err)
		}
	}

	shapes := map[string]Headers{
		"no :date":             {m.Headers[1]},
		"no signature":         {m.Headers[0]},
		"string :date":         {{DateHeader, StringValue("x")}, m.Headers[1]},
		"short signature":      {m.Headers[0], {ChunkSignatureHeader, BytesValue(m.Headers[1].Value.Bytes[:31])}},
		"string signature":     {m.Headers[0], {ChunkSignatureHeader, StringBytesValue(m.Headers[1].Value.Bytes)}},
		"extra header":         {m.Headers[0], m.Headers[1], {"x", BoolValue(true)}},
		"repeated :date first": {m.Headers[0], m.Headers[0], m.Headers[1]},
	}
	for name, h := range shapes {
		v := newV(sagemakerTime)
		bad := Message{Headers: h, Payload: m.Payload}
		if _, err := v.Verify(&bad); !errors.Is(err, ErrInvalidHeader) {
			t.Errorf("%s: %v, want ErrInvalidHeader", name, err)
		}
		if _, err := v.Verify(&m); err != nil {
			t.Errorf("%s: genuine envelope after the malformed one: %v", name, err)
		}
	}
}

// TestPropertyCRCCombine checks crcCombine against a direct CRC.
func TestPropertyCRCCombine(t *testing.T) {
	r := newRand(8)
	for range 300 {
		a := randBytes(r, randLen(r, 300))
		b := randBytes(r, randLen(r, 70000))
		want := crc32.ChecksumIEEE(append(bytes.Clone(a), b...))
		if got := crcCombine(crc32.ChecksumIEEE(a), crc32.ChecksumIEEE(b), len(b)); got != want {
			t.Fatalf("crcCombine(len %d, len %d) = %#x, want %#x", len(a), len(b), got, want)
		}
	}
}

// TestPropertyHex checks the word-at-a-time hex encoder.
func TestPropertyHex(t *testing.T) {
	r := newRand(9)
	for i := range 1000 {
		var h [sha256.Size]byte
		copy(h[:], randBytes(r, len(h)))
		if i < 256 {
			for j := range h {
				h[j] = byte(i) // every byte value in every position
			}
		}
		got := []byte("x" + string(make([]byte, 2*sha256.Size)) + "y")
		putHex32(got[1:], &h)
		if string(got) != "x"+hex.EncodeToString(h[:])+"y" {
			t.Fatalf("putHex32(%x) = %s", h, got)
		}
	}
}
