// Package echoserver holds the echo servers the benchmarks and the load
// program measure the client against: a raw HTTP/2 echo (the transport
// floor) and a minimal event-stream echo (no signature checks) as
// net/http handlers, and the same event-stream echo on a minimal HTTP/2
// server of its own (FrameEcho) for many streams on one connection, so
// that both measure against the same servers.
package echoserver

import (
	"encoding/binary"
	"net/http"
	"sync"
)

// bufs recycles the handlers' buffers, so that a stream costs the server
// no large allocation.
var bufs = sync.Pool{New: func() any { b := make([]byte, 64<<10); return &b }}

// Raw writes every chunk of the request body back at once.
func Raw(w http.ResponseWriter, r *http.Request) {
	w.WriteHeader(200)
	f := w.(http.Flusher)
	f.Flush()
	bp := bufs.Get().(*[]byte)
	defer bufs.Put(bp)
	buf := *bp
	for {
		n, err := r.Body.Read(buf)
		if n > 0 {
			if _, werr := w.Write(buf[:n]); werr != nil {
				return
			}
			f.Flush()
		}
		if err != nil {
			return
		}
	}
}

// Event is a minimal event-stream echo: it returns the inner message of
// every complete signed envelope it has read, all in one write, without
// checking signatures (the end frame's empty inner message returns
// nothing).
func Event(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "application/vnd.amazon.eventstream")
	w.WriteHeader(200)
	f := w.(http.Flusher)
	f.Flush()
	bs := [3]*[]byte{bufs.Get().(*[]byte), bufs.Get().(*[]byte), bufs.Get().(*[]byte)}
	defer func() {
		for _, b := range bs {
			bufs.Put(b)
		}
	}()
	chunk, in, out := *bs[0], (*bs[1])[:0], (*bs[2])[:0]
	for {
		n, err := r.Body.Read(chunk)
		in = append(in, chunk[:n]...)
		out = out[:0]
		off := 0
		for len(in)-off >= 12 {
			total := int(binary.BigEndian.Uint32(in[off:]))
			if total < 16 || len(in)-off < total {
				break
			}
			env := in[off : off+total]
			out = append(out, env[12+int(binary.BigEndian.Uint32(env[4:])):total-4]...)
			off += total
		}
		in = in[:copy(in, in[off:])]
		if len(out) > 0 {
			if _, werr := w.Write(out); werr != nil {
				return
			}
			f.Flush()
		}
		if err != nil {
			return
		}
	}
}
