package biditest

import (
	"bytes"
	"errors"
	"io"
	"testing"
	"testing/synctest"
	"time"

	"github.com/sagemaker-bidi/sagemaker-bidi/bidi"
	"github.com/sagemaker-bidi/sagemaker-bidi/internal/memnet"
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

// StampedEcho drops the replies not yet sent when the input ends, unless
// the stream's ModelQueryString has drain=true: then every message sent
// before the end is answered, when due, before the response ends. On a
// synctest clock over memnet, so that "not yet sent" is exact: the end
// frame follows the messages at once, before any reply is due.
func TestStampedEchoDrain(t *testing.T) {
	for _, tc := range []struct {
		query   string
		replies int
	}{{"", 0}, {"drain=false", 0}, {"drain=true", 3}, {"mode=x&drain=true", 3}} {
		t.Run(tc.query, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				l := memnet.Listen()
				srv := newTestServer(t, StampedEcho(time.Second, nil), func(s *Server) { s.Listener = l })
				ctx := t.Context()
				sess, err := srv.Client(func(o *bidi.Options) { o.DialContext = l.DialContext }).Open(ctx, &bidi.OpenInput{EndpointName: "e", ModelQueryString: tc.query})
				if err != nil {
					t.Fatal(err)
				}
				defer sess.Close()
				start := time.Now()
				for i := range 3 {
					if err := sess.Send(ctx, bidi.Binary([]byte{byte(i)})); err != nil {
						t.Fatal(err)
					}
				}
				if err := sess.CloseSend(); err != nil {
					t.Fatal(err)
				}
				var got []Stamp
				for {
					m, err := sess.Recv(ctx)
					if err == io.EOF {
						break
					}
					if err != nil {
						t.Fatalf("Recv after %d replies: %v", len(got), err)
					}
					s, err := ParseStamp(m.Data)
					if err != nil {
						t.Fatal(err)
					}
					got = append(got, s)
				}
				if len(got) != tc.replies {
					t.Fatalf("%d replies, want %d", len(got), tc.replies)
				}
				for i, s := range got {
					if s.Seq != i || len(s.Data) != 1 || s.Data[0] != byte(i) {
						t.Errorf("reply %d: %+v", i, s)
					}
				}
				if tc.replies > 0 && time.Since(start) < time.Second {
					t.Errorf("replies sent after %v, before they were due", time.Since(start))
				}
			})
		})
	}
}
