package memnet_test

import (
	"context"
	"errors"
	"io"
	"net"
	"testing"
	"testing/synctest"
	"time"

	"github.com/sagemaker-bidi/sagemaker-bidi/internal/memnet"
)

// A dial reaches Accept, bytes flow both ways, and a read deadline fires
// on the bubble's clock, exactly when due.
func TestDialAcceptDeadline(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := memnet.Listen()
		defer l.Close()
		c, s := dialAccept(t, l, "anywhere:1")
		defer c.Close()
		defer s.Close()
		go c.Write([]byte("ping"))
		buf := make([]byte, 4)
		if _, err := io.ReadFull(s, buf); err != nil || string(buf) != "ping" {
			t.Fatalf("read %q, %v", buf, err)
		}
		start := time.Now()
		s.SetReadDeadline(start.Add(time.Hour))
		if _, err := s.Read(buf); !errors.Is(err, context.DeadlineExceeded) && !isTimeout(err) {
			t.Fatalf("read past the deadline: %v", err)
		}
		if d := time.Since(start); d != time.Hour {
			t.Fatalf("the deadline fired after %v, want 1h", d)
		}
		if a := l.Addr().String(); a != "127.0.0.1:8443" {
			t.Fatalf("Addr %s", a)
		}
	})
}

// After Close, Accept and DialContext fail with net.ErrClosed; a dial
// nobody accepts ends with its context.
func TestClosedAndCancelled(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := memnet.Listen()
		ctx, cancel := context.WithTimeout(t.Context(), time.Second)
		defer cancel()
		if _, err := l.DialContext(ctx, "tcp", "x:1"); !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("dial nobody accepts: %v", err)
		}
		l.Close()
		if _, err := l.Accept(); !errors.Is(err, net.ErrClosed) {
			t.Fatalf("Accept after Close: %v", err)
		}
		if _, err := l.DialContext(t.Context(), "tcp", "x:1"); !errors.Is(err, net.ErrClosed) {
			t.Fatalf("dial after Close: %v", err)
		}
	})
}

// Both ends may write first (up to the buffer) without a reader; a
// writer whose peer stops reading waits once 256 KiB are unread, and
// goes on as the peer reads; after Close the peer reads what was written,
// then io.EOF, and its writes fail.
func TestBufferedLikeASocket(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := memnet.Listen()
		defer l.Close()
		c, s := dialAccept(t, l, "")
		// Both write first.
		if _, err := c.Write([]byte("preface")); err != nil {
			t.Fatal(err)
		}
		if _, err := s.Write([]byte("settings")); err != nil {
			t.Fatal(err)
		}
		// A full buffer holds the writer until the reader reads.
		big := make([]byte, 300<<10)
		wrote := make(chan int, 1)
		go func() {
			n, _ := c.Write(big)
			wrote <- n
		}()
		synctest.Wait()
		select {
		case n := <-wrote:
			t.Fatalf("a write of %d bytes past the 256 KiB buffer returned (%d) with nothing read", len(big), n)
		default:
		}
		got, err := io.ReadAll(io.LimitReader(s, int64(len("preface")+len(big))))
		if err != nil || len(got) != len("preface")+len(big) || string(got[:7]) != "preface" {
			t.Fatalf("read %d bytes, %v", len(got), err)
		}
		if n := <-wrote; n != len(big) {
			t.Fatalf("wrote %d of %d", n, len(big))
		}
		buf := make([]byte, 8)
		if _, err := io.ReadFull(c, buf); err != nil || string(buf) != "settings" {
			t.Fatalf("read %q, %v", buf, err)
		}
		// A write deadline ends a write the peer does not read, exactly
		// when due, with what fitted written.
		start := time.Now()
		c.SetWriteDeadline(start.Add(time.Second))
		n, err := c.Write(big)
		if !isTimeout(err) || n != 256<<10 || time.Since(start) != time.Second {
			t.Fatalf("write past a full buffer: %d bytes, %v after %v; want 256 KiB and a timeout after 1s", n, err, time.Since(start))
		}
		if _, err := io.ReadFull(s, make([]byte, n)); err != nil {
			t.Fatal(err)
		}
		c.SetWriteDeadline(time.Time{})
		// Close: the peer reads the rest, then io.EOF; its writes fail.
		c.Write([]byte("last"))
		c.Close()
		if got, err := io.ReadAll(s); err != nil || string(got) != "last" {
			t.Fatalf("after Close: %q, %v", got, err)
		}
		if _, err := s.Write([]byte("x")); err == nil {
			t.Fatal("a write to a closed peer succeeded")
		}
		if _, err := c.Read(buf); !errors.Is(err, net.ErrClosed) {
			t.Fatalf("read on the closed end: %v", err)
		}
		if _, err := c.Write(buf); !errors.Is(err, net.ErrClosed) {
			t.Fatalf("write on the closed end: %v", err)
		}
		s.Close()
	})
}

// dialAccept dials l at addr and returns both ends.
func dialAccept(t *testing.T, l *memnet.Listener, addr string) (client, server net.Conn) {
	t.Helper()
	accepted := make(chan net.Conn, 1)
	go func() {
		c, err := l.Accept()
		if err != nil {
			t.Error(err)
		}
		accepted <- c
	}()
	client, err := l.DialContext(t.Context(), "tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	return client, <-accepted
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}
