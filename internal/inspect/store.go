package inspect

import (
	"sync"
	"time"

	"github.com/sagemaker-bidi/sagemaker-bidi/bidi"
	"github.com/sagemaker-bidi/sagemaker-bidi/bidi/cassette"
)

// Defaults of the Options whose zero value means "default".
const (
	DefaultMaxSessions = 1000
	DefaultMaxMessages = 1_000_000
	// PreviewLimit is the largest payload preview kept per message.
	PreviewLimit = 32
	// maxErrors bounds the error texts kept per session.
	maxErrors = 8
	// maxErrorLen bounds each error text.
	maxErrorLen = 512
	// maxCloseReason bounds a close reason: a WebSocket close frame holds
	// at most 123 bytes of it.
	maxCloseReason = 123
	// chunkLen is the number of messages per storage chunk.
	chunkLen = 256
)

// The documented memory bound: what one message and one session cost.
const (
	// MessageBytes is the memory a stored message takes.
	MessageBytes = 64
	// SessionBytes bounds the memory of a session beyond its messages:
	// its fields, strings (endpoint, request id, variant, error type,
	// close reason, file: at most 1 KiB together) and error texts.
	SessionBytes = 1024 + 256 + maxErrors*maxErrorLen
)

// Options configure a [Store]. The zero value is ready to use.
type Options struct {
	// MaxSessions is the number of sessions kept. 0 means
	// DefaultMaxSessions.
	MaxSessions int
	// MaxMessages is the number of messages kept over all sessions. 0
	// means DefaultMaxMessages.
	MaxMessages int
	// Preview is the number of payload bytes shown per message, at most
	// PreviewLimit. 0 means PreviewLimit; a negative value keeps none.
	Preview int
	// AllowRemote serves the page to clients on other hosts.
	AllowRemote bool
}

// Message kinds as stored.
const (
	kindSend uint8 = iota + 1
	kindRecv
	kindSendEnd
	kindException
	kindError
)

// message is one stored event of a session: exactly MessageBytes.
type message struct {
	t          int64  // µs since the session started
	size       uint32 // payload length
	pad        int32  // padding length, -1 unknown
	fragment   uint32 // the part's index within its message, from 0
	kind       uint8
	utf8       bool
	complete   bool
	redacted   bool
	previewLen uint8
	_          [3]byte
	preview    [PreviewLimit]byte
}

// session is one session's record. Its fields are guarded by the
// store's mu.
type session struct {
	id        uint64
	started   time.Time
	file      string // the cassette file, "" when none
	endpoint  string
	variant   string
	requestID string
	status    int
	errorType string
	ended     bool
	evicted   bool // dropped from the store: its sink stores nothing more
	endReason string
	closeCode int
	closeWhy  string // the close reason, at most maxCloseReason bytes
	lastT     int64  // µs of the latest event

	chunks  []*[chunkLen]message
	n       int // messages stored
	dropped int // messages over the bound, not stored
	sent    int
	recvd   int
	sentB   int64
	recvdB  int64
	fragUp  uint32 // index of the next part in the message being sent
	fragDn  uint32
	errs    []string
}

func (s *session) at(i int) *message { return &s.chunks[i/chunkLen][i%chunkLen] }

// A Store keeps the sessions the page shows. It is safe for concurrent
// use.
type Store struct {
	opts Options

	mu       sync.Mutex // guards the fields below and every session's
	sessions []*session // oldest first
	messages int        // stored over all sessions
	nextID   uint64
}

// NewStore returns an empty store. nil opts means the defaults.
func NewStore(opts *Options) *Store {
	var o Options
	if opts != nil {
		o = *opts
	}
	if o.MaxSessions <= 0 {
		o.MaxSessions = DefaultMaxSessions
	}
	if o.MaxMessages <= 0 {
		o.MaxMessages = DefaultMaxMessages
	}
	switch {
	case o.Preview == 0 || o.Preview > PreviewLimit:
		o.Preview = PreviewLimit
	case o.Preview < 0:
		o.Preview = 0
	}
	return &Store{opts: o}
}

// Sink starts a session and returns the sink that feeds it. file names
// the cassette the session is also recorded to, if any: the page's
// download then serves that file, which holds the payloads; otherwise a
// download is rebuilt from the store, payloads marked redacted.
func (st *Store) Sink(file string) cassette.Sink {
	st.mu.Lock()
	defer st.mu.Unlock()
	st.nextID++
	s := &session{id: st.nextID, started: time.Now(), file: file}
	st.sessions = append(st.sessions, s)
	st.evictLocked()
	return &sink{st: st, s: s}
}

// evictLocked drops the oldest sessions, ended ones first, while a bound
// is exceeded.
func (st *Store) evictLocked() {
	for len(st.sessions) > st.opts.MaxSessions || st.messages > st.opts.MaxMessages {
		i := 0
		for i < len(st.sessions) && !st.sessions[i].ended {
			i++
		}
		if i == len(st.sessions) {
			if len(st.sessions) <= st.opts.MaxSessions {
				return // only running sessions: they stop storing instead
			}
			i = 0
		}
		st.messages -= st.sessions[i].n
		st.sessions[i].evicted = true
		st.sessions = append(st.sessions[:i], st.sessions[i+1:]...)
	}
}

type sink struct {
	st *Store
	s  *session
}

func clip(s string, n int) string {
	if len(s) > n {
		return s[:n]
	}
	return s
}

// Write stores e.
func (k *sink) Write(e *cassette.Event) error {
	st, s := k.st, k.s
	st.mu.Lock()
	defer st.mu.Unlock()
	if s.evicted {
		return nil
	}
	s.lastT = e.T.Microseconds()
	m := message{t: s.lastT, pad: -1}
	switch e.Kind {
	case cassette.KindOpen:
		s.endpoint = clip(e.Endpoint, 256)
		return nil
	case cassette.KindResponse:
		s.status, s.variant, s.requestID, s.errorType = e.Status, clip(e.Variant, 256), clip(e.RequestID, 128), clip(e.ErrorType, 128)
		if e.Status != 200 {
			s.addErr(e.ErrorType + ": " + e.Body)
		}
		return nil
	case cassette.KindEnd:
		s.ended, s.endReason, s.closeCode, s.closeWhy = true, clip(e.Reason, 32), e.CloseCode, clip(e.CloseReason, maxCloseReason)
		if e.Err != "" {
			s.addErr(e.Err)
		}
		st.evictLocked()
		return nil
	case cassette.KindSend, cassette.KindRecv:
		m.size, m.pad, m.utf8, m.complete, m.redacted = uint32(e.Size), int32(e.Padding), e.Type == bidi.DataTypeUTF8, e.Complete, e.Redacted
		frag := &s.fragDn
		m.kind = kindRecv
		if e.Kind == cassette.KindSend {
			frag, m.kind = &s.fragUp, kindSend
			s.sent++
			s.sentB += int64(e.Size)
		} else {
			s.recvd++
			s.recvdB += int64(e.Size)
		}
		m.fragment = *frag
		if e.Complete {
			*frag = 0
		} else {
			*frag++
		}
		if !e.Redacted {
			m.previewLen = uint8(copy(m.preview[:st.opts.Preview], e.Data))
		}
	case cassette.KindSendEnd:
		m.kind = kindSendEnd
	case cassette.KindException:
		m.kind = kindException
		m.previewLen = uint8(copy(m.preview[:], e.ExceptionType))
		s.addErr(e.ExceptionType + " " + e.Body)
	case cassette.KindError:
		m.kind = kindError
		m.previewLen = uint8(copy(m.preview[:], e.Code))
		s.addErr(e.Code + ": " + e.Message)
	default:
		return nil
	}
	if st.messages >= st.opts.MaxMessages {
		st.evictLocked()
		if st.messages >= st.opts.MaxMessages {
			s.dropped++
			return nil
		}
	}
	if s.n%chunkLen == 0 {
		s.chunks = append(s.chunks, new([chunkLen]message))
	}
	*s.at(s.n) = m
	s.n++
	st.messages++
	return nil
}

// addErr keeps an error text, within the bounds.
func (s *session) addErr(text string) {
	if len(s.errs) < maxErrors {
		s.errs = append(s.errs, clip(text, maxErrorLen))
	}
}

// Close marks the session ended if its end was not recorded.
func (k *sink) Close() error {
	k.st.mu.Lock()
	defer k.st.mu.Unlock()
	if !k.s.ended {
		k.s.ended, k.s.endReason = true, cassette.EndReset
		k.st.evictLocked()
	}
	return nil
}
