package bidi

import (
	"context"
	"io"
	"testing"
	"testing/synctest"
)

// TestRotatingRecvWakesWhenSettled: a Recv that took the last stream's
// end and waits to learn whether a successor follows returns the end of
// the call once the stream is settled with none (CloseSend meanwhile),
// woken by the session's broadcast; and a Recv waiting on the receive
// turn behind it gets the same sticky end once the first returns.
func TestRotatingRecvWakesWhenSettled(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx, cancel := context.WithCancelCause(context.Background())
		defer cancel(nil)
		g := &generation{n: 1, recvEnd: io.EOF}
		rs := &RotatingSession{ctx: ctx, cancel: cancel, items: make(chan rotItem), ended: g, announced: g}
		first, second := make(chan error, 1), make(chan error, 1)
		go func() { _, err := rs.Recv(context.Background()); first <- err }()
		synctest.Wait()
		go func() { _, err := rs.Recv(context.Background()); second <- err }()
		synctest.Wait()
		select {
		case err := <-first:
			t.Fatalf("Recv returned %v before the stream was settled", err)
		default:
		}
		if got := rs.recvTurn.waiters.Load(); got != 1 {
			t.Fatalf("%d Recvs wait for the receive turn, want 1", got)
		}
		if !rs.settle(g, nil) {
			t.Fatal("settle of an unsettled stream did nothing")
		}
		if err := <-first; err != io.EOF {
			t.Fatalf("Recv after the last stream settled = %v, want io.EOF", err)
		}
		if err := <-second; err != io.EOF {
			t.Fatalf("the Recv behind it = %v, want io.EOF", err)
		}
		if rs.settle(g, nil) {
			t.Fatal("a second settle of the same stream counted")
		}
	})
}
