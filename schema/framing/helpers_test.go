package framing

import (
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"strings"
	"testing"
)

// record is one outcome of Next, in a comparable form.
type record struct {
	Data   string
	Done   bool
	Type   string
	ID     string
	Retry  int64
	Offset int64
	Err    string
}

func (r record) String() string {
	if r.Err != "" {
		return "error: " + r.Err
	}
	if r.Done {
		return fmt.Sprintf("[DONE]@%d type=%q id=%q", r.Offset, r.Type, r.ID)
	}
	return fmt.Sprintf("%s@%d type=%q id=%q retry=%d", r.Data, r.Offset, r.Type, r.ID, r.Retry)
}

func toRecord(ev Event, err error) record {
	if err != nil {
		return record{Err: err.Error()}
	}
	return record{Data: string(ev.Data), Done: ev.Done, Type: ev.Type, ID: ev.ID, Retry: ev.Retry.Milliseconds(), Offset: ev.Offset}
}

// maxRecords guards against a framer that never ends.
const maxRecords = 100000

// readAll frames input with a Reader and returns every outcome up to and
// including io.EOF or the first final error.
func readAll(input []byte, optFns ...func(*Options)) []record {
	return readAllFrom(strings.NewReader(string(input)), optFns...)
}

func readAllFrom(src io.Reader, optFns ...func(*Options)) []record {
	r := NewReader(src, optFns...)
	resync := buildOptions(optFns).Resync
	var out []record
	for len(out) < maxRecords {
		ev, err := r.Next()
		out = append(out, toRecord(ev, err))
		if err == io.EOF || err != nil && (!resync || isTruncation(err)) {
			break
		}
	}
	return out
}

// pushAll frames input with a new Decoder, written in the given
// fragments.
func pushAll(fragments [][]byte, optFns ...func(*Options)) []record {
	return pushAllTo(NewDecoder(), fragments, optFns...)
}

// pushAllTo is pushAll with d, first Reset with optFns: a decoder used
// again keeps its buffers, which spares a test that frames thousands of
// inputs as many allocations.
func pushAllTo(d *Decoder, fragments [][]byte, optFns ...func(*Options)) []record {
	d.Reset(optFns...)
	resync := buildOptions(optFns).Resync
	var out []record
	drain := func() bool {
		for len(out) < maxRecords {
			ev, err := d.Next()
			if err == ErrNeedInput {
				return true
			}
			out = append(out, toRecord(ev, err))
			if err == io.EOF || err != nil && (!resync || isTruncation(err)) {
				return false
			}
		}
		return false
	}
	for _, p := range fragments {
		buf := append([]byte(nil), p...)
		if _, err := d.Write(buf); err != nil {
			panic(err)
		}
		clear(buf) // the decoder must have copied what it needs
		if !drain() {
			return out
		}
	}
	d.Close()
	drain()
	return out
}

func isTruncation(err error) bool { return errors.Is(err, io.ErrUnexpectedEOF) }

// randomSplit cuts b into fragments of random sizes, many of them tiny.
func randomSplit(rng *rand.Rand, b []byte) [][]byte {
	var out [][]byte
	for len(b) > 0 {
		var n int
		switch rng.IntN(4) {
		case 0:
			n = 1
		case 1:
			n = 1 + rng.IntN(4)
		case 2:
			n = 1 + rng.IntN(32)
		default:
			n = 1 + rng.IntN(512)
		}
		n = min(n, len(b))
		out = append(out, b[:n])
		b = b[n:]
	}
	return out
}

// oneByteReader returns at most one byte per Read.
type oneByteReader struct{ s string }

func (r *oneByteReader) Read(p []byte) (int, error) {
	if r.s == "" {
		return 0, io.EOF
	}
	if len(p) == 0 {
		return 0, nil
	}
	p[0] = r.s[0]
	r.s = r.s[1:]
	return 1, nil
}

// checkSplitInvariance frames input whole, byte by byte, and in many
// random fragmentations, and fails unless every outcome is identical.
func checkSplitInvariance(t *testing.T, input []byte, seeds int, optFns ...func(*Options)) []record {
	t.Helper()
	want := readAll(input, optFns...)
	if got := readAllFrom(&oneByteReader{string(input)}, optFns...); !equalRecords(got, want) {
		t.Fatalf("one byte per Read differs:\n got %v\nwant %v", got, want)
	}
	for seed := range seeds {
		rng := rand.New(rand.NewPCG(uint64(seed), 42))
		frags := randomSplit(rng, input)
		if got := pushAll(frags, optFns...); !equalRecords(got, want) {
			t.Fatalf("seed %d: fragments %q:\n got %v\nwant %v", seed, frags, got, want)
		}
	}
	return want
}

func equalRecords(a, b []record) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func withFormat(f Format) func(*Options) { return func(o *Options) { o.Format = f } }

func withResync(o *Options) { o.Resync = true }

func withMax(n int) func(*Options) { return func(o *Options) { o.MaxEventSize = n } }
