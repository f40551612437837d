package eventstream

import (
	"bytes"
	"encoding/binary"
	"errors"
	"hash/crc32"
	"io"
	"math"
	"runtime"
	"strings"
	"testing"
	"testing/iotest"
	"time"
)

// Negative and limit tests: truncation, limits checked from the prelude,
// malformed headers, encoder limits, readers that misbehave.

// forgePrelude returns a 12-byte prelude with a valid CRC.
func forgePrelude(total, headersLen uint32) []byte {
	p := binary.BigEndian.AppendUint32(nil, total)
	p = binary.BigEndian.AppendUint32(p, headersLen)
	return binary.BigEndian.AppendUint32(p, crc32.ChecksumIEEE(p))
}

// rawMessage frames a raw header block and payload with valid lengths and
// CRCs, whatever the header block holds.
func rawMessage(headers, payload []byte) []byte {
	b := forgePrelude(uint32(Overhead+len(headers)+len(payload)), uint32(len(headers)))
	b = append(b, headers...)
	b = append(b, payload...)
	return binary.BigEndian.AppendUint32(b, crc32.ChecksumIEEE(b))
}

// testStream returns a few messages of different shapes, back to back, and
// the offsets where each one ends.
func testStream(t *testing.T) (stream []byte, ends []int) {
	s := NewSigner(sagemakerCreds, "us-west-2", "sagemaker", make([]byte, 32), fixedClock(sagemakerTime))
	msgs := []*Message{
		{},
		{Payload: []byte("payload only")},
		sagemakerEvents()[1],
	}
	for _, m := range msgs {
		var err error
		if stream, err = AppendMessage(stream, m); err != nil {
			t.Fatal(err)
		}
		ends = append(ends, len(stream))
	}
	stream, _ = s.AppendMessage(stream, sagemakerEvents()[0])
	ends = append(ends, len(stream))
	stream = s.AppendEnd(stream)
	ends = append(ends, len(stream))
	return stream, ends
}

// TestTruncatedEveryOffset: a stream cut anywhere inside a message ends in
// an error wrapping io.ErrUnexpectedEOF; io.EOF comes only at a message
// boundary.
func TestTruncatedEveryOffset(t *testing.T) {
	stream, ends := testStream(t)
	boundary := map[int]int{0: 0} // offset -> messages before it
	for i, e := range ends {
		boundary[e] = i + 1
	}
	for cut := range len(stream) {
		for _, reader := range []struct {
			name string
			r    io.Reader
		}{
			{"whole", bytes.NewReader(stream[:cut])},
			{"onebyte", iotest.OneByteReader(bytes.NewReader(stream[:cut]))},
			{"dataerr", iotest.DataErrReader(bytes.NewReader(stream[:cut]))},
		} {
			d := NewDecoder(reader.r)
			n := 0
			var err error
			for ; ; n++ {
				if _, err = d.Decode(); err != nil {
					break
				}
			}
			if want, ok := boundary[cut]; ok {
				if err != io.EOF || n != want {
					t.Fatalf("%s, cut at boundary %d: %d messages then %v, want %d then io.EOF", reader.name, cut, n, err, want)
				}
				continue
			}
			if err == io.EOF || !errors.Is(err, io.ErrUnexpectedEOF) {
				t.Fatalf("%s, cut at %d: %v, want an error wrapping io.ErrUnexpectedEOF", reader.name, cut, err)
			}
			if _, again := d.Decode(); !errors.Is(again, io.ErrUnexpectedEOF) {
				t.Fatalf("%s, cut at %d: second Decode: %v", reader.name, cut, again)
			}
		}
	}

	// Unmarshal of a cut message, including cuts inside the prelude.
	one := stream[ends[1]:ends[2]]
	for cut := range len(one) {
		var m Message
		if err := Unmarshal(one[:cut], &m); !errors.Is(err, io.ErrUnexpectedEOF) {
			t.Fatalf("Unmarshal cut at %d: %v", cut, err)
		}
	}
	var m Message
	if err := Unmarshal(append(bytes.Clone(one), 0), &m); !errors.Is(err, ErrInvalidLength) {
		t.Errorf("Unmarshal with a trailing byte: %v", err)
	}
}

// preludeOnlyReader hands out a forged prelude, optionally followed by
// some bytes, in its first Read, and fails the test if Read is called
// again: the decoder must decide from the prelude alone.
type preludeOnlyReader struct {
	t     *testing.T
	data  []byte
	reads int
}

func (r *preludeOnlyReader) Read(p []byte) (int, error) {
	r.reads++
	if r.reads > 1 {
		r.t.Errorf("decoder read again after a forged prelude")
		return 0, io.EOF
	}
	if len(p) < len(r.data) {
		r.t.Fatalf("decoder offered %d bytes, want room for %d", len(p), len(r.data))
	}
	return copy(p, r.data), nil
}

func TestLimitsCheckedFromPrelude(t *testing.T) {
	opts := func(o *DecoderOptions) { o.MaxPayloadLen, o.MaxHeadersLen = 1000, 100 }
	tests := []struct {
		name      string
		total, hl uint32
		want      error
		length    int64
		limit     int64
	}{
		{"payload over limit", Overhead + 10 + 1001, 10, ErrPayloadTooLarge, 1001, 1000},
		{"headers over limit", Overhead + 101, 101, ErrHeadersTooLarge, 101, 100},
		{"4 GiB payload", math.MaxUint32, 0, ErrPayloadTooLarge, math.MaxUint32 - Overhead, 1000},
		{"4 GiB headers", math.MaxUint32, math.MaxUint32 - Overhead, ErrHeadersTooLarge, math.MaxUint32 - Overhead, 100},
		{"total below 16", 15, 0, ErrInvalidLength, 15, Overhead},
		{"total zero", 0, 0, ErrInvalidLength, 0, Overhead},
		{"headers past total", Overhead + 10, 11, ErrInvalidLength, 11, 10},
	}
	for _, tt := range tests {
		for _, extra := range []int{0, 100} {
			r := &preludeOnlyReader{t: t, data: append(forgePrelude(tt.total, tt.hl), make([]byte, extra)...)}
			_, err := NewDecoder(r, opts).Decode()
			var le *LengthError
			if !errors.As(err, &le) || !errors.Is(err, tt.want) || le.Length != tt.length || le.Limit != tt.limit {
				t.Errorf("%s: %v (%+v), want %v with length %d limit %d", tt.name, err, le, tt.want, tt.length, tt.limit)
			}
		}
	}

	// At the limits, the message decodes.
	m := &Message{Headers: Headers{{Name: "h", Value: BytesValue(make([]byte, 95))}}, Payload: make([]byte, 1000)}
	b, err := AppendMessage(nil, m)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := NewDecoder(bytes.NewReader(b), opts).Decode(); err != nil {
		t.Errorf("message at both limits: %v", err)
	}

	// Defaults: 24 MiB payload, 128 KiB headers.
	d := NewDecoder(nil)
	if d.opts.MaxPayloadLen != 24<<20 || d.opts.MaxHeadersLen != 128<<10 {
		t.Errorf("default limits %+v", d.opts)
	}
	for _, tt := range []struct {
		total, hl uint32
		ok        bool
	}{
		{Overhead + 24<<20, 0, true},
		{Overhead + 24<<20 + 1, 0, false},
		{Overhead + 128<<10, 128 << 10, true},
		{Overhead + 128<<10 + 1, 128<<10 + 1, false},
	} {
		_, _, err := checkPrelude(forgePrelude(tt.total, tt.hl), d.opts)
		if (err == nil) != tt.ok {
			t.Errorf("default limits, total %d headers %d: %v", tt.total, tt.hl, err)
		}
	}
}

// TestForgedLengthAllocatesNothingBig: a prelude that claims 4 GiB costs
// no memory, whether the limits reject it at once or allow it and the
// bytes never come.
func TestForgedLengthAllocatesNothingBig(t *testing.T) {
	prelude := forgePrelude(math.MaxUint32, 0)
	r := bytes.NewReader(prelude)
	d := NewDecoder(r)
	d.Decode() // warm up: the decoder's 4 KiB buffer
	allocs := testing.AllocsPerRun(100, func() {
		r.Reset(prelude)
		d.Reset(r)
		if _, err := d.Decode(); !errors.Is(err, ErrPayloadTooLarge) {
			t.Fatal(err)
		}
	})
	if allocs > 1 { // the *LengthError
		t.Errorf("%v allocations per rejected prelude", allocs)
	}
	if n := allocatedBy(func() {
		for range 100 {
			r.Reset(prelude)
			d.Reset(r)
			d.Decode()
		}
	}); n > 64<<10 {
		t.Errorf("100 rejected 4 GiB preludes allocated %d bytes", n)
	}

	// Limits raised to allow it: memory follows the bytes that arrive.
	body := append(bytes.Clone(prelude), make([]byte, 10000)...)
	n := allocatedBy(func() {
		d := NewDecoder(bytes.NewReader(body), func(o *DecoderOptions) { o.MaxPayloadLen = math.MaxInt })
		if _, err := d.Decode(); !errors.Is(err, io.ErrUnexpectedEOF) {
			t.Errorf("forged 4 GiB message cut after 10000 bytes: %v", err)
		}
	})
	if n > 64<<10 {
		t.Errorf("a forged 4 GiB message of which 10000 bytes arrived allocated %d bytes", n)
	}
}

func allocatedBy(f func()) uint64 {
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	f()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}

func TestInvalidHeaders(t *testing.T) {
	str := func(name, value string) []byte {
		b := append([]byte{byte(len(name))}, name...)
		b = append(b, byte(TypeString))
		b = binary.BigEndian.AppendUint16(b, uint16(len(value)))
		return append(b, value...)
	}
	good := str("ok", "fine")
	tests := []struct {
		name   string
		block  []byte
		offset int
		reason string
	}{
		{"unknown type 10", append(bytes.Clone(good), 1, 'x', 10), len(good), "unknown value type 10"},
		{"unknown type 255", []byte{1, 'x', 255, 0, 0}, 0, "unknown value type 255"},
		{"empty name", append(bytes.Clone(good), 0, byte(TypeBoolTrue)), len(good), "empty name"},
		{"name past block", []byte{5, 'a', 'b'}, 0, "name runs past"},
		{"no type byte", []byte{2, 'a', 'b'}, 0, "name runs past"},
		{"string length past block", []byte{1, 'a', byte(TypeString), 0}, 0, "value length runs past"},
		{"string past block", str("a", "xyz")[:6], 0, "value runs past"},
		{"int32 past block", []byte{1, 'a', byte(TypeInt32), 0, 0, 0}, 0, "value runs past"},
		{"int64 past block", []byte{1, 'a', byte(TypeInt64), 0}, 0, "value runs past"},
		{"timestamp past block", []byte{1, 'a', byte(TypeTimestamp)}, 0, "value runs past"},
		{"uuid past block", append([]byte{1, 'a', byte(TypeUUID)}, make([]byte, 15)...), 0, "value runs past"},
		{"byte past block", []byte{1, 'a', byte(TypeByte)}, 0, "value runs past"},
	}
	for _, tt := range tests {
		msg := rawMessage(tt.block, []byte("payload"))
		for how, decode := range map[string]func() error{
			"Decoder":   func() error { _, err := NewDecoder(bytes.NewReader(msg)).Decode(); return err },
			"Unmarshal": func() error { var m Message; return Unmarshal(msg, &m) },
		} {
			err := decode()
			var he *HeaderError
			if !errors.As(err, &he) || !errors.Is(err, ErrInvalidHeader) {
				t.Errorf("%s, %s: %v, want *HeaderError", tt.name, how, err)
				continue
			}
			if he.Offset != tt.offset || !strings.Contains(he.Reason, tt.reason) {
				t.Errorf("%s, %s: %+v, want offset %d, reason %q", tt.name, how, he, tt.offset, tt.reason)
			}
		}
	}
}

func TestEncoderRejects(t *testing.T) {
	long := strings.Repeat("n", MaxNameLen+1)
	tests := []struct {
		name string
		h    Header
	}{
		{"empty name", Header{"", BoolValue(true)}},
		{"256-byte name", Header{long, BoolValue(true)}},
		{"32768-byte string", Header{"s", StringValue(strings.Repeat("v", MaxValueLen+1))}},
		{"32768-byte bytes", Header{"b", BytesValue(make([]byte, MaxValueLen+1))}},
		{"15-byte uuid", Header{"u", Value{Type: TypeUUID, Bytes: make([]byte, 15)}}},
		{"unknown type", Header{"t", Value{Type: 10}}},
		{"byte 300", Header{"b", Value{Type: TypeByte, Int: 300}}},
		{"int16 -40000", Header{"s", Value{Type: TypeInt16, Int: -40000}}},
		{"int32 1<<31", Header{"i", Value{Type: TypeInt32, Int: 1 << 31}}},
	}
	s := NewSigner(sagemakerCreds, "us-west-2", "sagemaker", nil)
	for _, tt := range tests {
		m := &Message{Headers: Headers{{"fine", BoolValue(false)}, tt.h}}
		dst := []byte("prefix")
		for how, encode := range map[string]func() ([]byte, error){
			"AppendMessage":        func() ([]byte, error) { return AppendMessage(dst, m) },
			"AppendHeaders":        func() ([]byte, error) { return AppendHeaders(dst, m.Headers) },
			"Signer.AppendMessage": func() ([]byte, error) { return s.AppendMessage(dst, m) },
		} {
			got, err := encode()
			var he *HeaderError
			if !errors.As(err, &he) || !errors.Is(err, ErrInvalidHeader) || he.Offset != 6 {
				t.Errorf("%s, %s: %v (%+v), want *HeaderError at offset 6", tt.name, how, err, he)
			}
			if string(got) != "prefix" {
				t.Errorf("%s, %s: dst changed to %q", tt.name, how, got)
			}
		}
		var buf bytes.Buffer
		if err := NewEncoder(&buf).Encode(m); !errors.Is(err, ErrInvalidHeader) || buf.Len() != 0 {
			t.Errorf("%s, Encoder: %v, wrote %d bytes", tt.name, err, buf.Len())
		}
	}
	if s.PrevSignature() != "" {
		t.Error("a rejected message advanced the signer's chain")
	}

	// The longest name and values are fine.
	m := &Message{Headers: Headers{
		{strings.Repeat("n", MaxNameLen), StringValue(strings.Repeat("v", MaxValueLen))},
		{"b", BytesValue(make([]byte, MaxValueLen))},
	}}
	if _, err := AppendMessage(nil, m); err != nil {
		t.Errorf("longest name and values: %v", err)
	}

	// Headers above 128 KiB, payloads above 24 MiB.
	var big Headers
	for i := range 5 {
		big = append(big, Header{string(rune('a' + i)), BytesValue(make([]byte, MaxValueLen))})
	}
	payload := make([]byte, DefaultMaxPayloadLen+1)
	for how, err := range map[string]error{
		"AppendMessage headers":         second(AppendMessage(nil, &Message{Headers: big})),
		"AppendMessage payload":         second(AppendMessage(nil, &Message{Payload: payload})),
		"Signer.AppendMessage headers":  second(s.AppendMessage(nil, &Message{Headers: big})),
		"Signer.AppendMessage payload":  second(s.AppendMessage(nil, &Message{Payload: payload[:DefaultMaxPayloadLen-Overhead+1]})),
		"Signer.AppendPayload payload":  second(s.AppendPayload(nil, payload)),
		"Signer.AppendMessage at limit": second(s.AppendMessage(nil, &Message{Payload: payload[:DefaultMaxPayloadLen-Overhead]})),
	} {
		var le *LengthError
		switch {
		case strings.HasSuffix(how, "at limit"):
			if err != nil {
				t.Errorf("%s: %v", how, err)
			}
		case strings.HasSuffix(how, "headers"):
			if !errors.As(err, &le) || !errors.Is(err, ErrHeadersTooLarge) {
				t.Errorf("%s: %v", how, err)
			}
		default:
			if !errors.As(err, &le) || !errors.Is(err, ErrPayloadTooLarge) {
				t.Errorf("%s: %v", how, err)
			}
		}
	}
}

func second[T any](_ T, err error) error { return err }

// zeroReader returns (0, nil) forever.
type zeroReader struct{ prefix []byte }

func (z *zeroReader) Read(p []byte) (int, error) {
	n := copy(p, z.prefix)
	z.prefix = z.prefix[n:]
	return n, nil
}

func TestNoProgressReader(t *testing.T) {
	stream, _ := testStream(t)
	for _, prefix := range [][]byte{nil, stream[:5], stream[:40]} {
		done := make(chan error, 1)
		go func() {
			d := NewDecoder(&zeroReader{prefix: prefix})
			var err error
			for err == nil {
				_, err = d.Decode()
			}
			done <- err
		}()
		select {
		case err := <-done:
			if !errors.Is(err, io.ErrNoProgress) {
				t.Errorf("prefix %d bytes: %v, want io.ErrNoProgress", len(prefix), err)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("prefix %d bytes: Decode hangs on a reader that returns (0, nil)", len(prefix))
		}
	}
}

// TestReadErrorAndReset: a reader's own error comes back as is, and the
// decoder is usable again after Reset.
func TestReadErrorAndReset(t *testing.T) {
	stream, ends := testStream(t)
	boom := errors.New("boom")
	for _, cut := range []int{0, ends[1], ends[1] + 7, ends[1] + 20} {
		d := NewDecoder(io.MultiReader(bytes.NewReader(stream[:cut]), iotest.ErrReader(boom)))
		var err error
		for err == nil {
			_, err = d.Decode()
		}
		if !errors.Is(err, boom) {
			t.Errorf("cut %d: %v, want the reader's error", cut, err)
		}
		d.Reset(bytes.NewReader(stream))
		for i := range ends {
			if _, err := d.Decode(); err != nil {
				t.Fatalf("after Reset, message %d: %v", i, err)
			}
		}
		if _, err := d.Decode(); err != io.EOF || d.Offset() != int64(len(stream)) {
			t.Errorf("after Reset: %v at offset %d", err, d.Offset())
		}
	}

	// A CRC error stays put; Reset recovers.
	bad := bytes.Clone(stream)
	bad[ends[0]+13] ^= 1
	d := NewDecoder(bytes.NewReader(bad))
	if _, err := d.Decode(); err != nil {
		t.Fatal(err)
	}
	for range 2 {
		var ce *ChecksumError
		if _, err := d.Decode(); !errors.As(err, &ce) || ce.Checksum != MessageChecksum {
			t.Fatalf("corrupted message: %v", err)
		}
	}
	d.Reset(bytes.NewReader(stream))
	if _, err := d.Decode(); err != nil {
		t.Errorf("after Reset: %v", err)
	}
}

// TestDecoderZeroAllocs: decoding a stream of repeated event shapes
// allocates nothing once the buffer has grown.
func TestDecoderZeroAllocs(t *testing.T) {
	for _, n := range []int{0, 256, 70000} {
		stream := responseStream(t, n, 16)
		r := &replayReader{data: stream}
		d := NewDecoder(r)
		decodeAll := func() {
			r.off = 0
			d.Reset(r)
			for {
				if _, err := d.Decode(); err == io.EOF {
					return
				} else if err != nil {
					t.Fatal(err)
				}
			}
		}
		decodeAll()
		if a := testing.AllocsPerRun(20, decodeAll); a != 0 && !(raceEnabled && n > keepBufferLen) {
			t.Errorf("payload %d: %v allocations per stream of 16 events", n, a)
		}

		var m Message
		one := stream[:len(stream)/16]
		if a := testing.AllocsPerRun(100, func() { Unmarshal(one, &m) }); a != 0 {
			t.Errorf("payload %d: %v allocations per Unmarshal into a reused Message", n, a)
		}
	}
}

// TestSignerZeroAllocs: signing and verifying allocate nothing in steady
// state, the clock moving on included.
func TestSignerZeroAllocs(t *testing.T) {
	now := sagemakerTime
	clock := func(o *SignerOptions) {
		o.Now = func() time.Time { now = now.Add(1500 * time.Microsecond); return now }
	}
	s := NewSigner(sagemakerCreds, "us-west-2", "sagemaker", make([]byte, 32), clock)
	m := sagemakerEvents()[1]
	buf, _ := s.AppendMessage(nil, m)
	if a := testing.AllocsPerRun(1000, func() { buf, _ = s.AppendMessage(buf[:0], m) }); a != 0 {
		t.Errorf("Signer.AppendMessage: %v allocations", a)
	}
	if a := testing.AllocsPerRun(1000, func() { buf, _ = s.AppendPayload(buf[:0], m.Payload) }); a != 0 {
		t.Errorf("Signer.AppendPayload: %v allocations", a)
	}
	if a := testing.AllocsPerRun(1000, func() { buf = s.AppendEnd(buf[:0]) }); a != 0 {
		t.Errorf("Signer.AppendEnd: %v allocations", a)
	}

	// A new signer's first envelope derives the day's key: a handful of
	// allocations, not the dozens of crypto/hmac.
	if a := testing.AllocsPerRun(100, func() {
		s := NewSigner(sagemakerCreds, "us-west-2", "sagemaker", make([]byte, 32), clock)
		buf, _ = s.AppendMessage(buf[:0], m)
	}); a > 12 && !raceEnabled {
		t.Errorf("NewSigner + first AppendMessage: %v allocations", a)
	}

	now = sagemakerTime
	s = NewSigner(sagemakerCreds, "us-west-2", "sagemaker", make([]byte, 32), clock)
	v := NewVerifier(sagemakerCreds, "us-west-2", "sagemaker", make([]byte, 32))
	var env Message
	if a := testing.AllocsPerRun(1000, func() {
		buf, _ = s.AppendMessage(buf[:0], m)
		if err := Unmarshal(buf, &env); err != nil {
			t.Fatal(err)
		}
		if _, err := v.Verify(&env); err != nil {
			t.Fatal(err)
		}
	}); a != 0 {
		t.Errorf("sign + Unmarshal + Verify: %v allocations", a)
	}
}

// TestTooManyHeaders checks the header-count bound: a header block of
// 1-byte-named boolean headers, the densest there is, is refused past
// MaxHeaders, and accepted at the limit.
func TestTooManyHeaders(t *testing.T) {
	frame := func(n int) []byte {
		m := Message{}
		for i := range n {
			m.Headers = append(m.Headers, Header{Name: string(rune('a' + i%26)), Value: BoolValue(true)})
		}
		b, err := AppendMessage(nil, &m)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	d := NewDecoder(bytes.NewReader(frame(10)), func(o *DecoderOptions) { o.MaxHeaders = 10 })
	if m, err := d.Decode(); err != nil || len(m.Headers) != 10 {
		t.Fatalf("10 headers at MaxHeaders 10: %v", err)
	}
	d = NewDecoder(bytes.NewReader(frame(11)), func(o *DecoderOptions) { o.MaxHeaders = 10 })
	_, err := d.Decode()
	var le *LengthError
	if !errors.Is(err, ErrTooManyHeaders) || !errors.As(err, &le) || le.Limit != 10 {
		t.Fatalf("11 headers at MaxHeaders 10: %v", err)
	}
	var m Message
	if err := Unmarshal(frame(DefaultMaxHeaders+1), &m); !errors.Is(err, ErrTooManyHeaders) {
		t.Fatalf("Unmarshal of %d headers: %v", DefaultMaxHeaders+1, err)
	}
	if err := Unmarshal(frame(DefaultMaxHeaders), &m); err != nil {
		t.Fatalf("Unmarshal of %d headers: %v", DefaultMaxHeaders, err)
	}
}
