package model

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"time"

	"github.com/coder/websocket"

	"github.com/sagemaker-bidi/sagemaker-bidi/internal/demomodel"
)

// garbage is the payload of the garbage_after message: a text message that
// is not UTF-8 (a lone continuation byte, an overlong encoding, and bytes
// that never occur in UTF-8).
var garbage = []byte{'g', 'a', 'r', 'b', 'a', 'g', 'e', ':', 0x80, 0xc0, 0xaf, 0xfe, 0xff}

// session is one WebSocket connection. Two goroutines serve it: readLoop
// reads messages (and so answers pings and the close handshake, which
// coder/websocket does only inside Read) and queues them; run answers them
// in order and is the only writer of data messages.
type session struct {
	h    *Handler
	conn *websocket.Conn
	b    behavior
	path string
	raw  string // the raw query string

	in      chan message
	readErr error // set by readLoop before it closes in

	sent        int // data messages sent; only run touches it
	garbageSent bool
}

type message struct {
	typ  websocket.MessageType
	data []byte
}

func (h *Handler) serveSession(w http.ResponseWriter, r *http.Request, b behavior) {
	noPong := b.noPong
	conn, err := websocket.Accept(w, r, &websocket.AcceptOptions{
		CompressionMode: websocket.CompressionDisabled, // one Write, one frame
		OnPingReceived: func(context.Context, []byte) bool {
			return !noPong
		},
	})
	if err != nil {
		h.log.Info("upgrade failed", "path", r.URL.Path, "err", err)
		return // Accept has written the response
	}
	conn.SetReadLimit(h.opts.ReadLimit)
	if !h.track(conn) {
		conn.Close(websocket.StatusGoingAway, "container shutting down")
		return
	}
	defer h.untrack(conn)

	s := &session{h: h, conn: conn, b: b, path: r.URL.Path, raw: r.URL.RawQuery, in: make(chan message, 16)}
	ctx, cancel := context.WithCancel(h.ctx)
	readDone := make(chan struct{})
	go func() {
		defer close(readDone)
		s.readLoop(ctx)
	}()

	h.log.Info("session open", "remote", r.RemoteAddr, "path", s.path, "query", s.raw)
	err = s.run(ctx)
	cancel()
	conn.CloseNow()
	<-readDone
	h.logEnd(r.RemoteAddr, s.sent, err)
}

// logEnd logs the end of a session: a close handshake with 1000 (normal)
// or 1001 (going away) is a clean end, logged with its code; anything
// else is logged as a warning with its error.
func (h *Handler) logEnd(remote string, sent int, err error) {
	switch code := websocket.CloseStatus(err); {
	case err == nil:
		h.log.Info("session end", "remote", remote, "sent", sent)
	case code == websocket.StatusNormalClosure || code == websocket.StatusGoingAway:
		h.log.Info("session end", "remote", remote, "sent", sent, "close_code", int(code))
	default:
		h.log.Warn("session end", "remote", remote, "sent", sent, "err", err)
	}
}

// readLoop queues received messages for run until the connection fails or
// deaf_after is reached; then it holds the connection, reading nothing,
// until hold expires or ctx ends.
func (s *session) readLoop(ctx context.Context) {
	defer close(s.in)
	for n := 0; ; n++ {
		if s.b.deafAfter != never && n >= s.b.deafAfter {
			s.h.log.Info("deaf: not reading any more", "path", s.path, "hold", s.b.hold)
			t := time.NewTimer(s.b.hold)
			defer t.Stop()
			select {
			case <-t.C:
				s.readErr = errors.New("model: deaf session held for its hold time")
			case <-ctx.Done():
				s.readErr = ctx.Err()
			}
			return
		}
		typ, data, err := s.conn.Read(ctx)
		if err != nil {
			s.readErr = err
			return
		}
		select {
		case s.in <- message{typ, data}:
		case <-ctx.Done():
			s.readErr = ctx.Err()
			return
		}
	}
}

// run sends the hello, applies the count triggers at zero, then answers
// each received message. It returns when the reader stops, a write fails or
// a trigger closed the connection.
func (s *session) run(ctx context.Context) error {
	if s.b.hello {
		hello, _ := json.Marshal(map[string]string{
			"hello": "sagemaker-bidi sample container",
			"path":  s.path,
			"query": s.raw,
			"mode":  s.b.mode,
		})
		if err := s.send(ctx, websocket.MessageText, hello, s.b.fragmentText); err != nil {
			return err
		}
	} else if err := s.afterSend(ctx); err != nil {
		return err
	}
	for m := range s.in {
		if err := s.handle(ctx, m); err != nil {
			return err
		}
	}
	return s.readErr
}

func (s *session) handle(ctx context.Context, m message) error {
	if m.typ == websocket.MessageBinary {
		return s.send(ctx, websocket.MessageBinary, m.data, true)
	}
	if s.b.mode == modeChat {
		if req, ok := demomodel.ParseChatRequest(m.data); ok {
			return s.chat(ctx, req)
		}
	}
	return s.send(ctx, websocket.MessageText, m.data, s.b.fragmentText)
}

// chat answers one chat request: one chat.completion message, or an SSE
// stream with one event per message (or re-cut by split).
func (s *session) chat(ctx context.Context, req demomodel.ChatRequest) error {
	c := demomodel.NewCompletion(req, s.h.newID(), s.h.opts.Now().Unix())
	if !req.Stream {
		return s.send(ctx, websocket.MessageText, c.Message(), s.b.fragmentText)
	}
	emit := func(p []byte) error {
		return s.send(ctx, websocket.MessageText, p, s.b.fragmentText)
	}
	sp := &splitter{n: s.b.split, emit: emit}
	for i, ev := range c.Events() {
		if i > 0 {
			if err := sleep(ctx, s.b.delay); err != nil {
				return err
			}
		}
		var err error
		if s.b.split > 0 {
			err = sp.write(ev)
		} else {
			err = emit(ev)
		}
		if err != nil {
			return err
		}
	}
	return sp.flush()
}

// send writes one data message, as a fragmented message of fragment-byte
// frames if fragmented is set, then applies the count triggers.
//
// coder/websocket writes one frame per Writer.Write (FIN=0) and a final
// empty frame (FIN=1) at Close, so a fragmented message of n bytes is
// ceil(n/fragment) data frames and one empty closing frame. It flushes the
// socket only at the final frame, so the fragments of one message leave
// together unless they overflow its 4 KiB write buffer.
func (s *session) send(ctx context.Context, typ websocket.MessageType, p []byte, fragmented bool) error {
	if !fragmented {
		if err := s.conn.Write(ctx, typ, p); err != nil {
			return err
		}
	} else {
		w, err := s.conn.Writer(ctx, typ)
		if err != nil {
			return err
		}
		for off := 0; off < len(p); off += s.b.fragment {
			if _, err := w.Write(p[off:min(off+s.b.fragment, len(p))]); err != nil {
				return err
			}
		}
		if err := w.Close(); err != nil {
			return err
		}
	}
	s.sent++
	return s.afterSend(ctx)
}

// afterSend applies garbage_after and close_after once enough messages were
// sent. The garbage message counts as sent.
func (s *session) afterSend(ctx context.Context) error {
	if s.b.garbageAfter != never && !s.garbageSent && s.sent >= s.b.garbageAfter {
		s.garbageSent = true
		if err := s.conn.Write(ctx, websocket.MessageText, garbage); err != nil {
			return err
		}
		s.sent++
	}
	if s.b.closeAfter != never && s.sent >= s.b.closeAfter {
		if s.b.abrupt {
			s.conn.CloseNow()
		} else {
			// Waits up to 5 s for the peer's close frame, which readLoop (or
			// Close itself, when deaf) reads.
			s.conn.Close(s.b.closeCode, s.b.closeReason)
		}
		return errHookClosed
	}
	return nil
}

// sleep waits d or until ctx ends.
func sleep(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
