// Package transport is bidi's HTTP/2 client connection engine: the layer
// between a session and the network. It is built on golang.org/x/net/http2's
// Framer and hpack over crypto/tls (ALPN "h2" only) or prior-knowledge h2c,
// for thousands of long-lived bidirectional streams per process.
//
// The layers, each in its own file:
//
//   - [Transport] (pool.go) keeps one pool of connections per endpoint. A
//     session asks it for a stream; it is served from a connection with a
//     free slot, or waits (bounded by its context) while at most one dial
//     per endpoint is in flight. Connections are capped by the client
//     (Config.MaxStreamsPerConn) and by the server's
//     SETTINGS_MAX_CONCURRENT_STREAMS, which is never exceeded. Failed
//     dials and refusing servers back off with jitter.
//   - conn (conn.go, dial.go, health.go) is one HTTP/2 connection, with
//     two goroutines: a read loop (read.go) that checks every frame the
//     peer sends (RFC 9113) and a writer.
//   - The writer (write.go) is the connection's only writer goroutine. It
//     drains a queue of control frames and the request bodies of the
//     connection's streams into one buffered TLS writer, one DATA frame
//     per stream in turn (a ring holding each stream with bytes ready
//     once, rotation.go), and flushes only when it has nothing more to
//     write, so that many small frames cost one system call; the TCP
//     connection under TLS is corked meanwhile (cork.go), so that a batch
//     of TLS records is one write. On a connection with many streams it
//     also flushes at most every 500 µs, so that their frames share a
//     write and a wake-up.
//   - [Stream] (stream.go, buffer.go) is one request/response exchange.
//     Its request body is pulled by the writer, never pushed by a
//     goroutine of its own: the body says when it has bytes ready (the
//     function given to [Body].Bind) and hands them over without blocking
//     ([Body].ReadNow). Its response body is a bounded buffer filled by
//     the read loop (pooled chunks, 2 KiB for a small frame and 16 KiB
//     for a larger one, held only while bytes wait),
//     read without blocking with [Stream.Read] (eventstream.ErrWouldBlock
//     until something is ready, [Stream.SetNotify] saying when to try
//     again), or borrowed in place with [Stream.Peek] and consumed with
//     [Stream.Discard]: a Stream is an eventstream.Peeker, which is how
//     bidi's decoder reads it. [Stream.ReadAll] waits for a short body.
//   - Flow control: a stream waits only for its own window (the writer
//     sets it aside until a WINDOW_UPDATE reopens it); the writer stops
//     for the connection window, and inbound windows are given back as the
//     application reads (streams) or as frames arrive (the connection), so
//     one slow reader never stalls the others.
//
// A stream costs no goroutine: each connection has two (read loop and
// writer), and package bidi adds one per session.
//
// # Lock order
//
// Take Transport.mu before pool.mu, pool.mu before conn.mu. A Body's own
// lock (bidi's sendPipe.mu) comes before conn.mu: a body calls its ready
// callback (conn.bodyReady) under it. So conn.mu is never held while a
// body is called: the writer calls ReadNow with no lock held, and bodies
// are closed by conn.unlock after conn.mu is released. conn.mu and
// Stream.mu are never held together. corkedConn.mu is innermost: only
// writes to the socket take it, under no other lock. Callbacks (a
// stream's notify function, a body's Close) run with no lock of the
// engine held; streams are failed after conn.mu is released.
package transport
