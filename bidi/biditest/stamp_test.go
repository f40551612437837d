package biditest

import (
	"bytes"
	"errors"
	"testing"
	"time"
)

func TestParseStampRoundTrip(t *testing.T) {
	s := Stamp{Clock: 1500 * time.Millisecond, Seq: 7, Offset: 4480, Data: []byte("frame")}
	got, err := ParseStamp(s.append(nil))
	if err != nil || got.Clock != s.Clock || got.Seq != s.Seq || got.Offset != s.Offset || !bytes.Equal(got.Data, s.Data) {
		t.Fatalf("ParseStamp: %+v, %v; want %+v", got, err, s)
	}
	if _, err := ParseStamp([]byte("short")); !errors.Is(err, errNotStamp) {
		t.Fatalf("ParseStamp of 5 bytes: %v, want errNotStamp", err)
	}
}

// FuzzParseStamp: ParseStamp never panics, and what it accepts encodes
// back to its input.
func FuzzParseStamp(f *testing.F) {
	f.Add(Stamp{Clock: time.Second, Seq: 1, Offset: 640, Data: make([]byte, 640)}.append(nil))
	f.Add([]byte{})
	f.Add(bytes.Repeat([]byte{0xff}, 24))
	f.Fuzz(func(t *testing.T, b []byte) {
		s, err := ParseStamp(b)
		if err != nil {
			if !errors.Is(err, errNotStamp) {
				t.Fatalf("error %v is not errNotStamp", err)
			}
			return
		}
		if !bytes.Equal(s.append(nil), b) {
			t.Fatalf("%+v does not encode back to %x", s, b)
		}
	})
}
