package transport

import (
	"bytes"
	"errors"
	"net"
	"testing"
)

// recordingConn records each Write as one system call would be.
type recordingConn struct {
	net.Conn
	writes [][]byte
	err    error
}

func (c *recordingConn) Write(p []byte) (int, error) {
	if c.err != nil {
		return 0, c.err
	}
	c.writes = append(c.writes, bytes.Clone(p))
	return len(p), nil
}

// TestCork: uncorked writes go straight through; corked ones collect, in
// order, into one write at uncork, or one per corkLimit bytes; a failed
// batch write is reported to the batch's later writes and to uncork.
func TestCork(t *testing.T) {
	rc := &recordingConn{}
	c := &corkedConn{Conn: rc}
	c.Write([]byte("a"))
	if len(rc.writes) != 1 {
		t.Fatalf("uncorked write: %d writes", len(rc.writes))
	}
	c.cork()
	for _, s := range []string{"b", "c", "d"} {
		if n, err := c.Write([]byte(s)); n != 1 || err != nil {
			t.Fatalf("corked Write = %d, %v", n, err)
		}
	}
	if len(rc.writes) != 1 {
		t.Fatalf("corked writes reached the socket: %q", rc.writes)
	}
	if err := c.uncork(); err != nil || len(rc.writes) != 2 || string(rc.writes[1]) != "bcd" {
		t.Fatalf("uncork = %v, writes %q", err, rc.writes)
	}

	c.cork()
	big := make([]byte, corkLimit/2+1)
	c.Write(big)
	c.Write(big) // crosses corkLimit: written at once
	if len(rc.writes) != 3 || len(rc.writes[2]) != 2*len(big) {
		t.Fatalf("%d writes after crossing corkLimit", len(rc.writes))
	}
	c.uncork()
	if len(rc.writes) != 3 {
		t.Fatal("an empty batch was written")
	}

	boom := errors.New("boom")
	rc.err = boom
	c.cork()
	c.Write(big)
	c.Write(big)
	if _, err := c.Write([]byte("x")); !errors.Is(err, boom) {
		t.Fatalf("Write after a failed batch write = %v", err)
	}
	if err := c.uncork(); !errors.Is(err, boom) {
		t.Fatalf("uncork after a failed write = %v", err)
	}
}

// TestCorkBufferKept: between batches a connection holds at most
// corkKeep bytes of batch buffer, whatever the batch carried (a large
// buffer goes back to the pool), and the batch after one that gave its
// buffer back is written whole.
func TestCorkBufferKept(t *testing.T) {
	rc := &recordingConn{}
	c := &corkedConn{Conn: rc}
	for _, sizes := range [][]int{{100}, {100, 3 * corkKeep}, {10}, {corkLimit + 1}, {5}} {
		c.cork()
		total := 0
		for _, n := range sizes {
			c.Write(bytes.Repeat([]byte{'x'}, n))
			total += n
		}
		if err := c.uncork(); err != nil {
			t.Fatal(err)
		}
		if cap(c.buf) > corkKeep {
			t.Errorf("after a batch of %v bytes the connection keeps %d", sizes, cap(c.buf))
		}
		if w := rc.writes[len(rc.writes)-1]; len(w) != total && total <= corkLimit {
			t.Errorf("batch of %v bytes written as %d", sizes, len(w))
		}
	}
}
