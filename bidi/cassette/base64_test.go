package cassette

import (
	"bytes"
	"encoding/base64"
	"math/rand/v2"
	"testing"
)

// appendBase64 appends what encoding/base64 appends, for every length
// around the round and load sizes and every byte value in every
// position of a round.
func TestAppendBase64MatchesStd(t *testing.T) {
	r := rand.New(rand.NewPCG(21, 4))
	for n := range 200 {
		src := make([]byte, n)
		for i := range src {
			src[i] = byte(r.Uint32())
		}
		prefix := []byte(`"b64":"`)
		want := base64.StdEncoding.AppendEncode(bytes.Clone(prefix), src)
		if got := appendBase64(bytes.Clone(prefix), src); !bytes.Equal(got, want) {
			t.Fatalf("%d bytes:\n got %s\nwant %s", n, got, want)
		}
	}
	src := make([]byte, 26)
	for pos := range src {
		for v := range 256 {
			src[pos] = byte(v)
			want := base64.StdEncoding.EncodeToString(src)
			if got := appendBase64(nil, src); string(got) != want {
				t.Fatalf("byte %d = %#x: got %s, want %s", pos, v, got, want)
			}
		}
		src[pos] = 0
	}
}

// FuzzAppendBase64 checks appendBase64 against encoding/base64.
func FuzzAppendBase64(f *testing.F) {
	f.Add([]byte{}, []byte("hello, world, twenty-six b"))
	f.Add([]byte("x"), []byte{0xff, 0xfe, 0, 1, 2, 3, 4, 5, 6})
	f.Fuzz(func(t *testing.T, prefix, src []byte) {
		want := base64.StdEncoding.AppendEncode(bytes.Clone(prefix), src)
		if got := appendBase64(bytes.Clone(prefix), src); !bytes.Equal(got, want) {
			t.Fatalf("got %q, want %q", got, want)
		}
	})
}

// BenchmarkBase64 encodes a 4 KiB part with encoding/base64 and with
// appendBase64, side by side.
func BenchmarkBase64(b *testing.B) {
	src := make([]byte, 4096)
	r := rand.New(rand.NewPCG(1, 2))
	for i := range src {
		src[i] = byte(r.Uint32())
	}
	buf := make([]byte, 0, 8<<10)
	for _, c := range []struct {
		name string
		enc  func(dst, src []byte) []byte
	}{{"std", base64.StdEncoding.AppendEncode}, {"cassette", appendBase64}} {
		b.Run(c.name, func(b *testing.B) {
			b.SetBytes(int64(len(src)))
			b.ReportAllocs()
			for range b.N {
				buf = c.enc(buf[:0], src)
			}
		})
	}
}
