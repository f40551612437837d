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
		accepted := make(chan net.Conn, 1)
		go func() {
			c, err := l.Accept()
			if err != nil {
				t.Error(err)
			}
			accepted <- c
		}()
		c, err := l.DialContext(t.Context(), "tcp", "anywhere:1")
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		s := <-accepted
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

func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}
