package bidi

import (
	"bytes"
	"context"
	"errors"
	"io"
	"sort"
	"strings"
	"sync"
	"testing"
)

// bucketBoundaries lists the padded sizes BucketPadding may produce up to
// limit, computed independently of the implementation.
func bucketBoundaries(limit int) []int {
	var b []int
	for s := 64; s <= 1024; s += 64 {
		b = append(b, s)
	}
	for p := 1024; p < limit; p *= 2 {
		step := min(p/8, 16<<10)
		for s := p + step; s <= 2*p; s += step {
			b = append(b, s)
		}
	}
	return b
}

func TestPaddingBucketEveryLength(t *testing.T) {
	const maxLen = 70000
	bounds := bucketBoundaries(4 * maxLen)
	distinct := map[int]bool{}
	prev := 0
	for n := 0; n <= maxLen; n++ {
		pad := BucketPadding(n)
		if pad < 1 || pad > maxPadding {
			t.Fatalf("PadLen(%d) = %d, want 1..%d", n, pad, maxPadding)
		}
		total := n + pad
		// The padded size is the smallest bucket boundary that leaves at
		// least one byte of padding.
		i := sort.SearchInts(bounds, n+1)
		if total != bounds[i] {
			t.Fatalf("PadLen(%d): padded size %d, want bucket %d", n, total, bounds[i])
		}
		if total < prev {
			t.Fatalf("padded size not monotonic at %d: %d < %d", n, total, prev)
		}
		if n >= 1024 && float64(pad) > float64(n)/8+1 {
			t.Fatalf("PadLen(%d) = %d: overhead above 12.5%%", n, pad)
		}
		prev = total
		distinct[total] = true
	}
	if len(distinct) > 70 {
		t.Errorf("%d distinct padded sizes for 0..%d, want few", len(distinct), maxLen)
	}
	t.Logf("%d distinct padded sizes for payloads 0..%d", len(distinct), maxLen)
}

func TestPaddingBucketSpotValues(t *testing.T) {
	cases := []struct{ n, pad int }{
		{0, 64}, {1, 63}, {63, 1}, {64, 64}, {200, 56}, {1023, 1}, {1024, 128},
		{1151, 1}, {1152, 128}, {2047, 1}, {2048, 256}, {65535, 1}, {65536, 8192},
		{16 << 20, 16 << 10}, {-5, 64},
	}
	for _, tc := range cases {
		if got := BucketPadding(tc.n); got != tc.pad {
			t.Errorf("BucketPadding.PadLen(%d) = %d, want %d", tc.n, got, tc.pad)
		}
	}
	// Large parts: padding always fits in P.
	for n := 100000; n <= maxPartSizeLimit; n = n*3/2 + 7 {
		if pad := BucketPadding(n); pad < 1 || pad > maxPadding {
			t.Fatalf("PadLen(%d) = %d", n, pad)
		}
	}
}

// noPadding and fixedBucket are the two policies Options.Padding's doc
// comment spells out.
func noPadding(int) int { return 0 }

func fixedBucket(size int) func(int) int {
	return func(n int) int { return (n/size+1)*size - n }
}

func TestPaddingPolicies(t *testing.T) {
	for n := 0; n < 1000; n++ {
		if got := padLen(noPadding, n); got != 0 {
			t.Fatalf("no padding: padLen(%d) = %d", n, got)
		}
		for _, size := range []int{1, 100, maxPadding} {
			if p := padLen(fixedBucket(size), n); p < 1 || p > size || (n+p)%size != 0 {
				t.Fatalf("fixed bucket %d: padLen(%d) = %d", size, n, p)
			}
		}
	}
	cases := []struct {
		p    func(int) int
		n    int
		want int
	}{
		{nil, 10, 54},
		{noPadding, 10, 0},
		{func(int) int { return -5 }, 10, 0},
		{func(int) int { return 1 << 20 }, 10, maxPadding},
		{func(n int) int { return n }, 7, 7},
	}
	for i, tc := range cases {
		if got := padLen(tc.p, tc.n); got != tc.want {
			t.Errorf("case %d: padLen(%d) = %d, want %d", i, tc.n, got, tc.want)
		}
	}
}

func TestPaddingAppend(t *testing.T) {
	src := bytes.NewReader([]byte{0, 1, 25, 26, 51, 52, 61, 62, 63, 64, 255, 128})
	got, err := appendPad([]byte("hdr:"), 12, src)
	if err != nil {
		t.Fatal(err)
	}
	if want := "hdr:ABZaz09-_A_A"; string(got) != want {
		t.Errorf("fillPadding = %q, want %q", got, want)
	}

	// Every output byte is printable ASCII, whatever the input.
	all := make([]byte, 256)
	for i := range all {
		all[i] = byte(i)
	}
	out, err := appendPad(nil, 256, bytes.NewReader(all))
	if err != nil {
		t.Fatal(err)
	}
	for i, c := range out {
		if c <= ' ' || c >= 0x7f {
			t.Fatalf("byte %d = %#x is not printable ASCII", i, c)
		}
	}

	// n == 0 reads nothing.
	if out, err := appendPad([]byte("x"), 0, failingReader{}); err != nil || string(out) != "x" {
		t.Errorf("fillPadding(n=0) = %q, %v", out, err)
	}

	// The default source works.
	if out, err := fillPadding(context.Background(), nil, 32, pooledPad{}); err != nil || len(out) != 32 {
		t.Errorf("fillPadding(pooledPad) = %q, %v", out, err)
	}
}

type failingReader struct{}

var errBrokenSource = errors.New("broken source")

func (failingReader) Read([]byte) (int, error) { return 0, errBrokenSource }

func TestPaddingAppendError(t *testing.T) {
	dst := []byte("keep")
	out, err := appendPad(dst, 8, failingReader{})
	if !errors.Is(err, errBrokenSource) {
		t.Fatalf("err = %v, want wrapping errBrokenSource", err)
	}
	if string(out) != "keep" {
		t.Errorf("dst changed on error: %q", out)
	}
	if !strings.HasPrefix(err.Error(), "bidi: ") {
		t.Errorf("error %q lacks the package prefix", err)
	}
	// A short source is an error too.
	out, err = appendPad(dst, 8, bytes.NewReader([]byte{1, 2}))
	if !errors.Is(err, io.ErrUnexpectedEOF) || string(out) != "keep" {
		t.Errorf("short source: %q, %v", out, err)
	}
}

// zeroReader is an allocation-free source.
type zeroReader struct{}

func (zeroReader) Read(p []byte) (int, error) { clear(p); return len(p), nil }

func TestPaddingAppendNoAlloc(t *testing.T) {
	buf := make([]byte, 0, 2048)
	var src padSource = readerPad{zeroReader{}}
	ctx := context.Background()
	allocs := testing.AllocsPerRun(1000, func() {
		out, err := fillPadding(ctx, buf[:10], 1000, src)
		if err != nil || len(out) != 1010 {
			t.Fatal("bad append")
		}
	})
	if allocs != 0 {
		t.Errorf("fillPadding allocates %.1f times per call with spare capacity", allocs)
	}
	// Without capacity it grows and keeps the prefix.
	out, _ := fillPadding(ctx, []byte("ab"), 100, src)
	if len(out) != 102 || string(out[:2]) != "ab" {
		t.Errorf("grow: len %d prefix %q", len(out), out[:2])
	}
}

// readerPad is a padding source over r, for the tests.
type readerPad struct{ r io.Reader }

func (p readerPad) fill(_ context.Context, b []byte) error {
	_, err := io.ReadFull(p.r, b)
	return err
}

// appendPad appends n padding bytes read from r to dst, through
// fillPadding.
func appendPad(dst []byte, n int, r io.Reader) ([]byte, error) {
	return fillPadding(context.Background(), dst, n, readerPad{r})
}

// TestPooledPad: the default source's fills draw fresh random bytes (two
// fills of 64 bytes never agree), concurrent Sends may fill at once (run
// with -race), and a fill allocates nothing once the pool holds a
// generator.
func TestPooledPad(t *testing.T) {
	ctx := context.Background()
	seen := map[string]bool{}
	for range 100 {
		out, err := fillPadding(ctx, nil, 64, pooledPad{})
		if err != nil || len(out) != 64 {
			t.Fatalf("fillPadding = %q, %v", out, err)
		}
		if seen[string(out)] {
			t.Fatalf("padding %q drawn twice", out)
		}
		seen[string(out)] = true
	}

	var wg sync.WaitGroup
	results := make([][]byte, 8)
	for i := range results {
		wg.Go(func() {
			var out []byte
			for range 200 {
				out, _ = fillPadding(ctx, out[:0], 64, pooledPad{})
			}
			results[i] = out
		})
	}
	wg.Wait()
	for i, out := range results {
		if len(out) != 64 || seen[string(out)] {
			t.Errorf("goroutine %d: last padding %q", i, out)
		}
		seen[string(out)] = true
	}

	buf := make([]byte, 0, 1024)
	if allocs := testing.AllocsPerRun(1000, func() {
		fillPadding(ctx, buf, 1000, pooledPad{})
	}); allocs != 0 {
		t.Errorf("a fill from the pool allocates %.1f times", allocs)
	}
}
