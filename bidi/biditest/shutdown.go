package biditest

import (
	"context"
	"sync"
)

// Shutdown shuts the server down gracefully, in the manner of
// http.Server.Shutdown: it stops accepting connections, sends every
// connection an HTTP/2 GOAWAY so that clients open no new stream on it,
// and waits until the running streams have finished (their handlers
// returned and their connections closed) or ctx ends. It returns nil once
// every stream finished, or ctx's error if some were still running; they
// keep running until they finish or [Server.Close] ends them, which is
// what to call next either way, to release the server.
func (s *Server) Shutdown(ctx context.Context) error {
	s.mu.Lock()
	if !s.started || s.closed {
		s.mu.Unlock()
		return nil
	}
	gens := append([]*generation(nil), s.gens...)
	s.stopping.Store(true)
	s.bg.Add(1) // the waiter below; Close waits for it
	s.mu.Unlock()

	s.Listener.Close()
	var wg sync.WaitGroup
	for _, g := range gens {
		wg.Add(1)
		go func() {
			defer wg.Done()
			// Closes the generation's listener, sends GOAWAY on its
			// connections and waits for them to close, or for ctx.
			g.srv.Shutdown(ctx)
		}()
	}
	done := make(chan struct{})
	go func() {
		defer s.bg.Done()
		wg.Wait()
		s.handlers.Wait()
		close(done)
	}()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
