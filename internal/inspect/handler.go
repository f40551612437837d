package inspect

import (
	"encoding/hex"
	"encoding/json"
	"fmt"
	"html/template"
	"io"
	"net"
	"net/http"
	"os"
	"strconv"
	"time"
	"unicode/utf8"

	"github.com/sagemaker-bidi/sagemaker-bidi/bidi"
	"github.com/sagemaker-bidi/sagemaker-bidi/bidi/cassette"
)

// maxPage is the number of messages one API call returns.
const maxPage = 2000

// Handler returns the http.Handler of the page:
//
//	GET /                         the page (the session list rendered, then refreshed every second)
//	GET /api/sessions             the sessions, newest first (JSON)
//	GET /api/sessions/{id}?from=N a session and up to 2,000 of its messages from the N-th (JSON)
//	GET /sessions/{id}/cassette   the session as a cassette (JSON Lines)
//
// Requests from other hosts than loopback, or naming another Host, get
// 403 unless Options.AllowRemote is set.
func (st *Store) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /{$}", st.servePage)
	mux.HandleFunc("GET /api/sessions", st.serveSessions)
	mux.HandleFunc("GET /api/sessions/{id}", st.serveSession)
	mux.HandleFunc("GET /sessions/{id}/cassette", st.serveCassette)
	if st.opts.AllowRemote {
		return mux
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !loopbackAddr(r.RemoteAddr) || !loopbackHost(r.Host) {
			http.Error(w, "inspect: loopback clients only", http.StatusForbidden)
			return
		}
		w.Header().Set("X-Content-Type-Options", "nosniff")
		w.Header().Set("Cache-Control", "no-store")
		mux.ServeHTTP(w, r)
	})
}

func loopbackAddr(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		host = addr
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

func loopbackHost(host string) bool {
	if h, _, err := net.SplitHostPort(host); err == nil {
		host = h
	}
	if host == "localhost" {
		return true
	}
	if len(host) > 1 && host[0] == '[' {
		host = host[1 : len(host)-1]
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// SessionInfo is a session as the API lists it.
type SessionInfo struct {
	ID         uint64  `json:"id"`
	Started    string  `json:"started"` // UTC, hh:mm:ss.mmm
	Endpoint   string  `json:"endpoint"`
	State      string  `json:"state"` // "open" or "ended"
	Status     int     `json:"status,omitempty"`
	Variant    string  `json:"variant,omitempty"`
	RequestID  string  `json:"request_id,omitempty"`
	DurationMS float64 `json:"duration_ms"`
	Sent       int     `json:"sent"`
	Received   int     `json:"received"`
	SentB      int64   `json:"sent_bytes"`
	ReceivedB  int64   `json:"received_bytes"`
	Messages   int     `json:"messages"`
	Dropped    int     `json:"dropped,omitempty"`
	EndReason  string  `json:"end_reason,omitempty"`
	CloseCode  int     `json:"close_code,omitempty"`
	// CloseReason is the reason of the WebSocket close, where known.
	CloseReason string   `json:"close_reason,omitempty"`
	Errors      []string `json:"errors,omitempty"`
	// Cassette says what a download holds: "file", the session's cassette
	// file with its payloads, or "redacted", a cassette rebuilt from the
	// store with sizes but no payloads (every part marked redacted).
	Cassette string `json:"cassette"`
}

// What a session's download holds (SessionInfo.Cassette).
const (
	CassetteFile     = "file"
	CassetteRedacted = "redacted"
)

// MessageInfo is a message as the API lists it.
type MessageInfo struct {
	TMS      float64 `json:"t_ms"`
	Dir      string  `json:"dir"`  // "→ model", "← model" or ""
	Kind     string  `json:"kind"` // the cassette kind
	Type     string  `json:"type,omitempty"`
	Size     int     `json:"size"`
	Fragment int     `json:"fragment"`
	Complete bool    `json:"complete"`
	Padding  int     `json:"padding"` // -1 unknown
	Bucket   int     `json:"bucket,omitempty"`
	Redacted bool    `json:"redacted,omitempty"`
	Preview  string  `json:"preview,omitempty"`
}

func (s *session) info() SessionInfo {
	state := "open"
	if s.ended {
		state = "ended"
	}
	return SessionInfo{
		ID: s.id, Started: s.started.UTC().Format("15:04:05.000"), Endpoint: s.endpoint, State: state,
		Status: s.status, Variant: s.variant, RequestID: s.requestID, DurationMS: float64(s.lastT) / 1000,
		Sent: s.sent, Received: s.recvd, SentB: s.sentB, ReceivedB: s.recvdB, Messages: s.n, Dropped: s.dropped,
		EndReason: s.endReason, CloseCode: s.closeCode, CloseReason: s.closeWhy, Errors: append([]string(nil), s.errs...),
		Cassette: s.cassette(),
	}
}

// cassette returns what the session's download holds.
func (s *session) cassette() string {
	if s.file != "" {
		return CassetteFile
	}
	return CassetteRedacted
}

func (m *message) info() MessageInfo {
	mi := MessageInfo{TMS: float64(m.t) / 1000, Size: int(m.size), Fragment: int(m.fragment), Complete: m.complete, Padding: int(m.pad), Redacted: m.redacted}
	p := m.preview[:m.previewLen]
	switch m.kind {
	case kindSend, kindRecv:
		mi.Dir, mi.Kind = "→ model", string(cassette.KindSend)
		if m.kind == kindRecv {
			mi.Dir, mi.Kind = "← model", string(cassette.KindRecv)
		}
		mi.Type = bidi.DataTypeBinary.String()
		if m.utf8 {
			mi.Type = bidi.DataTypeUTF8.String()
		}
		if m.pad >= 0 {
			mi.Bucket = int(m.size) + int(m.pad)
		}
		if len(p) > 0 {
			if utf8.Valid(p) {
				mi.Preview = string(p)
			} else {
				mi.Preview = "0x" + hex.EncodeToString(p)
			}
		}
	case kindSendEnd:
		mi.Dir, mi.Kind = "→ model", string(cassette.KindSendEnd)
	case kindException:
		mi.Dir, mi.Kind, mi.Preview = "← model", string(cassette.KindException), string(p)
	case kindError:
		mi.Dir, mi.Kind, mi.Preview = "← model", string(cassette.KindError), string(p)
	}
	return mi
}

// list returns the sessions, newest first.
func (st *Store) list() []SessionInfo {
	st.mu.Lock()
	defer st.mu.Unlock()
	out := make([]SessionInfo, len(st.sessions))
	for i, s := range st.sessions {
		out[len(out)-1-i] = s.info()
	}
	return out
}

func (st *Store) find(id uint64) *session {
	for _, s := range st.sessions {
		if s.id == id {
			return s
		}
	}
	return nil
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(v)
}

func (st *Store) serveSessions(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, st.list())
}

// lockSession finds the session of the request's {id} and returns it
// with st.mu held, for the caller to unlock. When the id is malformed
// (400) or unknown (404), it answers the request and returns false,
// with st.mu not held.
func (st *Store) lockSession(w http.ResponseWriter, r *http.Request) (s *session, id uint64, ok bool) {
	id, err := strconv.ParseUint(r.PathValue("id"), 10, 64)
	if err != nil {
		http.Error(w, "inspect: bad session id", http.StatusBadRequest)
		return nil, 0, false
	}
	st.mu.Lock()
	if s = st.find(id); s == nil {
		st.mu.Unlock()
		http.NotFound(w, r)
		return nil, 0, false
	}
	return s, id, true
}

func (st *Store) serveSession(w http.ResponseWriter, r *http.Request) {
	from, _ := strconv.Atoi(r.URL.Query().Get("from"))
	s, _, ok := st.lockSession(w, r)
	if !ok {
		return
	}
	out := struct {
		Session  SessionInfo   `json:"session"`
		Messages []MessageInfo `json:"messages"`
		Next     int           `json:"next"`
	}{Session: s.info(), Messages: []MessageInfo{}}
	from = max(0, min(from, s.n))
	end := min(s.n, from+maxPage)
	for i := from; i < end; i++ {
		out.Messages = append(out.Messages, s.at(i).info())
	}
	out.Next = end
	st.mu.Unlock()
	writeJSON(w, out)
}

// serveCassette serves the session's cassette file, or rebuilds one
// from the store: the store keeps no payloads, so every part of it is
// marked redacted, its header's recorder is RedactedRecorder, and its
// name ends in "-redacted.jsonl".
func (st *Store) serveCassette(w http.ResponseWriter, r *http.Request) {
	s, id, ok := st.lockSession(w, r)
	if !ok {
		return
	}
	w.Header().Set("Content-Type", "application/x-ndjson")
	name := fmt.Sprintf("session-%d.jsonl", id)
	if s.file == "" {
		name = fmt.Sprintf("session-%d-redacted.jsonl", id)
	}
	w.Header().Set("Content-Disposition", `attachment; filename="`+name+`"`)
	if s.file != "" {
		file := s.file
		st.mu.Unlock()
		f, err := os.Open(file)
		if err != nil {
			http.Error(w, "inspect: the cassette file cannot be read", http.StatusInternalServerError)
			return
		}
		defer f.Close()
		io.Copy(w, f)
		return
	}
	events := s.events()
	started := s.started
	st.mu.Unlock()
	cw, err := cassette.NewWriter(w, &cassette.WriterOptions{Recorder: RedactedRecorder, Recorded: started})
	if err != nil {
		return
	}
	for i := range events {
		cw.Write(&events[i])
	}
	cw.Close()
}

// RedactedRecorder is the Header.Recorder of a cassette the inspector
// rebuilt from its store: sizes, timings and ends, no payloads.
const RedactedRecorder = "inspect (payloads redacted)"

// events rebuilds the session's events from the store. st.mu is held.
func (s *session) events() []cassette.Event {
	out := []cassette.Event{{Kind: cassette.KindOpen, Endpoint: s.endpoint}}
	if s.status != 0 {
		out = append(out, cassette.Event{Kind: cassette.KindResponse, Status: s.status, Variant: s.variant, RequestID: s.requestID, ErrorType: s.errorType})
	}
	for i := 0; i < s.n; i++ {
		m := s.at(i)
		e := cassette.Event{T: time.Duration(m.t) * time.Microsecond}
		switch m.kind {
		case kindSend, kindRecv:
			e.Kind = cassette.KindRecv
			if m.kind == kindSend {
				e.Kind = cassette.KindSend
			}
			e.Type = bidi.DataTypeBinary
			if m.utf8 {
				e.Type = bidi.DataTypeUTF8
			}
			e.Complete, e.Size, e.Padding, e.Redacted, e.Data = m.complete, int(m.size), int(m.pad), true, []byte{}
		case kindSendEnd:
			e.Kind = cassette.KindSendEnd
		case kindException:
			e.Kind, e.ExceptionType = cassette.KindException, string(m.preview[:m.previewLen])
		case kindError:
			e.Kind, e.Code = cassette.KindError, string(m.preview[:m.previewLen])
		}
		out = append(out, e)
	}
	if s.ended {
		out = append(out, cassette.Event{Kind: cassette.KindEnd, T: time.Duration(s.lastT) * time.Microsecond, Reason: s.endReason, CloseCode: s.closeCode, CloseReason: s.closeWhy})
	}
	return out
}

func (st *Store) servePage(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Content-Security-Policy", "default-src 'self'; script-src 'unsafe-inline' 'self'; style-src 'unsafe-inline'")
	list := st.list()
	page.Execute(w, struct {
		Rows  []SessionInfo
		Total int
	}{list[:min(len(list), firstRows)], len(list)})
}

// firstRows is the number of sessions the page's HTML holds: more than a
// screenful. The script renders the others.
const firstRows = 60

var page = template.Must(template.New("page").Parse(pageHTML))
