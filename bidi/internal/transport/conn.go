package transport

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"
)

// conn is one HTTP/2 client connection. Its read loop (readLoop) owns the
// framer's read side and the connection's inbound window; its writer
// (writeLoop) owns the framer's write side, the buffered writer and the
// HPACK encoder. Everything shared is guarded by mu, except what a
// Stream guards itself.
//
// Lock order (doc.go): pool.mu and a Body's lock before mu; mu is never
// held with a Stream's mu, nor while a body or a notify callback runs
// (see unlock).
type conn struct {
	t     *Transport
	p     *pool // set once by the pool before the conn is shared
	e     endpoint
	nc    net.Conn
	br    *bufio.Reader
	guard frameGuard    // between br and the framer; owned by the read loop
	bw    *bufio.Writer // owned by the writer (by the handshake before)
	cork  *corkedConn   // under TLS, nil for h2c; corked by the writer
	fr    *http2.Framer
	henc  *hpack.Encoder // owned by the writer
	hbuf  bytes.Buffer   // owned by the writer
	epoch time.Time

	done    chan struct{} // closed when the connection is closed
	wakeW   chan struct{} // cap 1: the writer has work
	ctrlOut chan struct{} // cap 1: the writer drained the control queue

	lastRead atomic.Int64 // nanoseconds since epoch when bytes last arrived (see arrivals)
	// sendStalls counts the times the writer used up the connection's
	// send window or found it used up (written under mu, read without
	// it; see Stream.SendStalls).
	sendStalls atomic.Uint32

	// Owned by the read loop.
	recvWindow  int32 // what the peer may still send on the connection
	recvUnacked int32 // bytes received not yet given back

	mu             sync.Mutex
	streams        map[uint32]*Stream
	nextID         uint32
	slots          uint32 // open streams plus reservations
	peerMaxStreams uint32
	peerMaxFrame   uint32
	peerInitWindow int32
	peerTableSize  uint32 // HEADER_TABLE_SIZE to apply, if tableChanged
	tableChanged   bool
	sendWindow     int32 // connection-level send window
	connBlocked    bool  // the writer waits for a connection WINDOW_UPDATE
	ctrl           []ctrlItem
	ctrlSpare      []ctrlItem
	ready          []*Stream // streams queued for the writer since its last round
	readySpare     []*Stream
	rotationLen    int // streams in the writer's rotation at its last round (for tests)
	responses      int // PING and SETTINGS acknowledgements queued
	goingAway      bool
	goAwayLastID   uint32
	goAwayErr      *ConnError // the peer's GOAWAY: the error of streams it cuts off
	toClose        []Body     // bodies to close once cc.mu is released (see unlock)
	sendGoAway     bool       // a connection error: the writer sends GOAWAY(goAwayCode), then closes
	goAwayCode     http2.ErrCode
	processed      bool // some stream got a response head
	closing        bool // a graceful close is queued
	err            error
	idleTimer      *time.Timer
	pingTimer      *time.Timer
	pingPending    bool
	pingSent       int64
	pingData       [8]byte
}

type ctrlKind uint8

const (
	ctrlHeaders ctrlKind = iota
	ctrlWindowUpdate
	ctrlReset
	ctrlPing
	ctrlPingAck
	ctrlSettingsAck
	ctrlGoAway
)

type ctrlItem struct {
	kind ctrlKind
	s    *Stream
	id   uint32
	n    uint32 // increment, or error code
	data [8]byte
}

func newConn(t *Transport, e endpoint, nc net.Conn) *conn {
	cc := &conn{
		t:              t,
		e:              e,
		nc:             nc,
		bw:             bufio.NewWriterSize(nc, writeBufferSize),
		epoch:          time.Now(),
		done:           make(chan struct{}),
		wakeW:          make(chan struct{}, 1),
		ctrlOut:        make(chan struct{}, 1),
		streams:        make(map[uint32]*Stream),
		nextID:         1,
		peerMaxStreams: math.MaxUint32,
		peerMaxFrame:   defaultMaxFrameSize,
		peerInitWindow: 65535,
		sendWindow:     65535,
		recvWindow:     t.cfg.connWindow(),
	}
	cc.br = bufio.NewReaderSize(arrivals{cc}, readBufferSize)
	cc.guard.r = cc.br
	cc.fr = http2.NewFramer(cc.bw, &cc.guard)
	cc.fr.SetMaxReadFrameSize(defaultMaxFrameSize)
	cc.fr.SetReuseFrames() // DATA payloads are copied out before the next read
	cc.fr.MaxHeaderListSize = DefaultMaxHeaderListSize
	cc.fr.ReadMetaHeaders = hpack.NewDecoder(4096, nil)
	cc.henc = hpack.NewEncoder(&cc.hbuf)
	return cc
}

// handshake writes the client preface and SETTINGS and reads the server's
// SETTINGS, which must be its first frame.
func (cc *conn) handshake() error {
	cfg := &cc.t.cfg
	if _, err := cc.bw.WriteString(http2.ClientPreface); err != nil {
		return err
	}
	cc.fr.WriteSettings(
		http2.Setting{ID: http2.SettingEnablePush, Val: 0},
		http2.Setting{ID: http2.SettingInitialWindowSize, Val: uint32(cfg.streamWindow())},
		http2.Setting{ID: http2.SettingMaxHeaderListSize, Val: DefaultMaxHeaderListSize},
	)
	if inc := cfg.connWindow() - 65535; inc > 0 {
		cc.fr.WriteWindowUpdate(0, uint32(inc))
	}
	if err := cc.bw.Flush(); err != nil {
		return err
	}
	if head, err := cc.br.Peek(9); err != nil {
		if isTimeout(err) || isTLSAlert(err) {
			// Silent, or TLS refused the session (a client certificate
			// required, say): not another protocol. dial labels it.
			return err
		}
		hint := ""
		if cc.e.scheme == "http" {
			hint = "; if it serves TLS, use an https:// URL"
		}
		return fmt.Errorf("%w: %s closed the connection before its SETTINGS (%v)%s", ErrNotHTTP2, cc.e.addr, err, hint)
	} else if bytes.HasPrefix(head, []byte("HTTP/")) {
		return fmt.Errorf("%w: %s answered in HTTP/1", ErrNotHTTP2, cc.e.addr)
	} else if head[0] == 0x15 || head[0] == 0x16 {
		return fmt.Errorf("%w: %s speaks TLS (use an https:// URL)", ErrNotHTTP2, cc.e.addr)
	}
	f, err := cc.fr.ReadFrame()
	cc.guard.n = 0
	if err != nil {
		if isTimeout(err) || isTLSAlert(err) {
			return err
		}
		return fmt.Errorf("%w: %s: reading the server's SETTINGS: %v", ErrNotHTTP2, cc.e.addr, err)
	}
	sf, ok := f.(*http2.SettingsFrame)
	if !ok || sf.IsAck() {
		return fmt.Errorf("%w: %s sent %v before SETTINGS", ErrNotHTTP2, cc.e.addr, f.Header().Type)
	}
	if err := cc.applySettings(sf); err != nil {
		return err
	}
	cc.fr.WriteSettingsAck()
	return cc.bw.Flush()
}

// frameGuard bounds the bytes one call of the framer's ReadFrame may
// consume. A header block is read whole inside that call, CONTINUATION
// after CONTINUATION; the framer bounds the decoded header list but not a
// flood of empty CONTINUATION frames, which would hold the read loop
// forever.
type frameGuard struct {
	r io.Reader
	n int // bytes read since the last ReadFrame returned
}

// maxFrameReadBytes is more than a header block of
// DefaultMaxHeaderListSize takes, with its frame headers.
const maxFrameReadBytes = 2*DefaultMaxHeaderListSize + 64<<10

var errHeaderBlockTooLong = errors.New("header block longer than the header list limit allows (CONTINUATION flood)")

// arrivals is the connection as br reads it: it notes when bytes last
// arrived, for the health check. Under br, it runs once per buffer fill
// rather than once per frame.
type arrivals struct{ cc *conn }

func (a arrivals) Read(p []byte) (int, error) {
	n, err := a.cc.nc.Read(p)
	if n > 0 {
		a.cc.lastRead.Store(int64(time.Since(a.cc.epoch)))
	}
	return n, err
}

func (g *frameGuard) Read(p []byte) (int, error) {
	if g.n > maxFrameReadBytes {
		return 0, errHeaderBlockTooLong
	}
	n, err := g.r.Read(p)
	g.n += n
	return n, err
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

// isTLSAlert reports whether err is an alert the TLS peer sent (crypto/tls
// reports one as a *net.OpError with Op "remote error").
func isTLSAlert(err error) bool {
	var oe *net.OpError
	return errors.As(err, &oe) && oe.Op == "remote error"
}

// start runs the read loop and the writer and arms the health check.
func (cc *conn) start() {
	cc.lastRead.Store(int64(time.Since(cc.epoch)))
	go cc.readLoop()
	go cc.writeLoop()
	if iv := cc.t.cfg.PingInterval; iv > 0 {
		cc.mu.Lock()
		cc.pingTimer = time.AfterFunc(iv, cc.healthCheck)
		cc.mu.Unlock()
	}
}

// capacityLocked returns how many more streams the conn takes. cc.mu is
// held.
func (cc *conn) capacityLocked() uint32 {
	if cc.err != nil || cc.goingAway || cc.closing {
		return 0
	}
	max := min(cc.t.cfg.maxStreams(), cc.peerMaxStreams)
	if cc.slots >= max {
		return 0
	}
	// Stream IDs are finite: leave the conn before they run out.
	if cc.nextID > math.MaxInt32-2*max {
		return 0
	}
	return max - cc.slots
}

// reserveLocked takes a slot. cc.mu is held.
func (cc *conn) reserveLocked() {
	cc.slots++
	if cc.idleTimer != nil {
		cc.idleTimer.Stop()
		cc.idleTimer = nil
	}
}

// releaseSlot gives back a reservation that was not used.
func (cc *conn) releaseSlot() {
	cc.mu.Lock()
	cc.slots--
	cc.slotFreedLocked()
	cc.mu.Unlock()
	cc.p.changed()
}

// slotFreedLocked arms the idle timer or closes a drained conn. cc.mu is
// held.
func (cc *conn) slotFreedLocked() {
	if cc.slots > 0 || cc.err != nil {
		return
	}
	if cc.goingAway {
		cc.closeGracefullyLocked()
		return
	}
	if d := cc.t.cfg.idleTimeout(); d > 0 && cc.idleTimer == nil {
		cc.idleTimer = time.AfterFunc(d, cc.closeIfIdle)
	}
}

// closeIfIdle closes the conn if it has no stream.
func (cc *conn) closeIfIdle() {
	cc.mu.Lock()
	defer cc.mu.Unlock()
	if cc.slots == 0 {
		cc.closeGracefullyLocked()
	}
}

// closeGracefullyLocked queues a GOAWAY after which the writer closes the
// conn. cc.mu is held.
func (cc *conn) closeGracefullyLocked() {
	if cc.closing || cc.err != nil {
		return
	}
	cc.closing = true
	cc.queueLocked(ctrlItem{kind: ctrlGoAway})
}

// openStream registers s on a reserved slot and queues its HEADERS.
func (cc *conn) openStream(s *Stream) error {
	cc.mu.Lock()
	defer cc.mu.Unlock()
	if cc.err != nil {
		cc.slots--
		return &refusedError{reason: "connection closed before the stream started: " + cc.err.Error()}
	}
	if cc.goingAway {
		cc.slots--
		cc.slotFreedLocked()
		return &refusedError{reason: "connection going away"}
	}
	s.id = cc.nextID
	cc.nextID += 2
	s.sendWindow = cc.peerInitWindow
	cc.streams[s.id] = s
	cc.queueLocked(ctrlItem{kind: ctrlHeaders, s: s})
	return nil
}

// queueLocked queues a control frame for the writer and wakes it. cc.mu
// is held.
func (cc *conn) queueLocked(it ctrlItem) {
	cc.ctrl = append(cc.ctrl, it)
	cc.wakeWriter()
}

// endLocked ends s on both sides, with nothing more to send or receive,
// and drops it from the conn. cc.mu is held.
func (cc *conn) endLocked(s *Stream) {
	s.localDone, s.remoteDone = true, true
	cc.removeLocked(s)
}

func (cc *conn) wakeWriter() {
	select {
	case cc.wakeW <- struct{}{}:
	default:
	}
}

// bodyReady marks s as having body bytes ready for the writer.
func (cc *conn) bodyReady(s *Stream) {
	cc.mu.Lock()
	if !s.queued && s.headersSent && !s.localDone && !s.flowBlocked {
		s.queued = true
		cc.ready = append(cc.ready, s)
		cc.wakeWriter()
	}
	cc.mu.Unlock()
}

// queueWindowUpdate gives inc bytes of window back to the peer on s.
func (cc *conn) queueWindowUpdate(s *Stream, inc uint32) {
	cc.mu.Lock()
	if !s.remoteDone && cc.err == nil {
		cc.queueLocked(ctrlItem{kind: ctrlWindowUpdate, id: s.id, n: inc})
	}
	cc.mu.Unlock()
}

// resetStream ends s from this side with code, unless it is over.
func (cc *conn) resetStream(s *Stream, code http2.ErrCode) {
	cc.mu.Lock()
	if s.removed || s.id == 0 {
		cc.mu.Unlock()
		return
	}
	if !s.localDone || !s.remoteDone {
		// HEADERS were queued when s was registered: written or not yet,
		// they go out before this reset (the writer keeps the order), so
		// the server never sees a stream that is left open.
		cc.queueLocked(ctrlItem{kind: ctrlReset, s: s, id: s.id, n: uint32(code)})
	}
	cc.endLocked(s)
	cc.unlock()
	cc.p.changed()
}

// removeLocked drops s from the conn and frees its slot; its body is
// closed by cc.unlock. cc.mu is held.
func (cc *conn) removeLocked(s *Stream) {
	if s.removed {
		return
	}
	s.removed = true
	delete(cc.streams, s.id)
	cc.slots--
	cc.closeBodyLocked(s)
	cc.slotFreedLocked()
}

// closeBodyLocked has cc.unlock close s's body, once. cc.mu is held.
func (cc *conn) closeBodyLocked(s *Stream) {
	if !s.bodyClosed {
		s.bodyClosed = true
		cc.toClose = append(cc.toClose, s.body)
	}
}

// unlock releases cc.mu, then closes the bodies that streams left under
// it: a body's Close may take the body's own lock, which comes before
// cc.mu (see the lock order in doc.go).
func (cc *conn) unlock() {
	bodies := cc.toClose
	cc.toClose = nil
	cc.mu.Unlock()
	for _, b := range bodies {
		b.Close()
	}
}

// endedLocally records that the writer sent END_STREAM on s.
func (cc *conn) endedLocally(s *Stream) {
	cc.mu.Lock()
	s.localDone = true
	removed := false
	if s.remoteDone {
		cc.removeLocked(s)
		removed = true
	} else {
		cc.closeBodyLocked(s)
	}
	cc.unlock()
	if removed {
		cc.p.changed()
	}
}

// fail closes the connection with err and fails its streams: those the
// server never saw with a refusal (safe to send again), the others with
// err.
func (cc *conn) fail(err error) {
	cc.mu.Lock()
	if cc.err != nil {
		cc.mu.Unlock()
		return
	}
	cc.err = err
	close(cc.done)
	streams := make([]*Stream, 0, len(cc.streams))
	errs := make([]error, 0, len(cc.streams))
	for _, s := range cc.streams {
		serr := err
		if !s.headersSent {
			serr = &refusedError{reason: "connection closed before the stream started: " + err.Error()}
		}
		streams, errs = append(streams, s), append(errs, serr)
	}
	for _, s := range streams {
		cc.endLocked(s)
	}
	if cc.idleTimer != nil {
		cc.idleTimer.Stop()
	}
	if cc.pingTimer != nil {
		cc.pingTimer.Stop()
	}
	goAway := cc.sendGoAway
	cc.unlock()
	// The streams fail, and their notify callbacks run, with no lock of
	// the engine held.
	for i, s := range streams {
		s.fail(errs[i])
	}
	if goAway {
		// The writer sends the GOAWAY and closes the socket as it exits
		// (it sees done); the deadline bounds its last writes against a
		// peer that does not read.
		cc.nc.SetWriteDeadline(time.Now().Add(goAwayGrace))
	} else {
		cc.closeSocket()
	}
	if cc.p != nil {
		cc.p.remove(cc)
	}
}

// closeSocket closes the TCP connection, under TLS without a
// close_notify: a peer that stopped reading would hold that alert for
// TLS's 5 s close timeout, behind the writer's blocked write (the alert
// waits on the cork's lock). Closing the socket unblocks the writer and
// the read loop at once; a graceful close has said goodbye with GOAWAY.
// It never blocks, whatever the peer does.
func (cc *conn) closeSocket() {
	if cc.cork != nil {
		cc.cork.Conn.Close()
		return
	}
	cc.nc.Close()
}

// connError closes the connection after a protocol violation of the
// peer: its streams fail at once with a *ConnError, and the writer sends
// GOAWAY with code before it closes the socket.
func (cc *conn) connError(code http2.ErrCode, reason string) {
	cc.mu.Lock()
	if cc.err == nil {
		cc.sendGoAway, cc.goAwayCode = true, code
	}
	cc.mu.Unlock()
	cc.fail(&ConnError{Code: code, Reason: reason})
}

// applySettings applies a (non-ACK) SETTINGS frame of the peer.
func (cc *conn) applySettings(sf *http2.SettingsFrame) error {
	cc.mu.Lock()
	defer cc.mu.Unlock()
	return sf.ForeachSetting(func(st http2.Setting) error {
		// Out-of-range values (a zero MAX_FRAME_SIZE, a window above
		// 2^31-1) are connection errors, never applied.
		if err := st.Valid(); err != nil {
			code := http2.ErrCodeProtocol
			var ce http2.ConnectionError
			if errors.As(err, &ce) {
				code = http2.ErrCode(ce)
			}
			return &ConnError{Code: code, Reason: fmt.Sprintf("invalid setting %v", st)}
		}
		switch st.ID {
		case http2.SettingMaxConcurrentStreams:
			cc.peerMaxStreams = st.Val
		case http2.SettingMaxFrameSize:
			cc.peerMaxFrame = st.Val
		case http2.SettingHeaderTableSize:
			cc.peerTableSize, cc.tableChanged = st.Val, true
		case http2.SettingInitialWindowSize:
			delta := int64(st.Val) - int64(cc.peerInitWindow)
			for _, s := range cc.streams {
				w := int64(s.sendWindow) + delta
				if w > math.MaxInt32 {
					return &ConnError{Code: http2.ErrCodeFlowControl, Reason: "SETTINGS_INITIAL_WINDOW_SIZE overflows a stream window"}
				}
				s.sendWindow = int32(w)
				if s.sendWindow > 0 && s.flowBlocked {
					s.flowBlocked = false
					cc.markReadyLocked(s)
				}
			}
			cc.peerInitWindow = int32(st.Val)
		}
		return nil
	})
}

// markReadyLocked queues s for the writer. cc.mu is held.
func (cc *conn) markReadyLocked(s *Stream) {
	if !s.queued && s.headersSent && !s.localDone {
		s.queued = true
		cc.ready = append(cc.ready, s)
		cc.wakeWriter()
	}
}

// responseOf returns the status and header fields of a HEADERS frame.
func responseOf(f *http2.MetaHeadersFrame) (int, http.Header, error) {
	status := f.PseudoValue("status")
	code, err := strconv.Atoi(status)
	if err != nil || len(status) != 3 || code < 100 {
		return 0, nil, errors.New("malformed :status in response")
	}
	regular := f.RegularFields()
	h := make(http.Header, len(regular))
	for _, hf := range regular {
		k := http.CanonicalHeaderKey(hf.Name)
		h[k] = append(h[k], hf.Value)
	}
	return code, h, nil
}
