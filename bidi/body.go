package bidi

import (
	"errors"
	"io"
	"sync"

	"github.com/sagemaker-bidi/sagemaker-bidi/eventstream"
	"github.com/sagemaker-bidi/sagemaker-bidi/internal/bufpool"
	"github.com/sagemaker-bidi/sagemaker-bidi/internal/wire"
)

// Layout of a signed envelope (docs/wire.md §4.2): a 12-byte prelude, 67 bytes
// of :date and :chunk-signature headers, the inner message, a 4-byte CRC.
const (
	envelopeHeadersLen = 67
	envelopePrefix     = 12 + envelopeHeadersLen
	envelopeOverhead   = eventstream.Overhead + envelopeHeadersLen
)

// sendQueueBytes bounds the encoded parts waiting in a session's send
// queue for the transport. Send blocks while the queue is full, which is
// how HTTP/2 flow control reaches it. A part larger than the bound is
// admitted when the queue is empty.
const sendQueueBytes = 64 << 10

// errBodyDone is what a superseded or closed request body returns from
// ReadNow. The engine only sees it after it has given up on the body.
var errBodyDone = errors.New("bidi: request body closed")

// sendPipe is the request body side of a session: a bounded queue
// between Send and the connection's writer, in one of two modes.
//
// Before the response head (replay mode), the queue holds committed inner
// messages (encoded PayloadParts, unsigned). The engine reads through a
// reqBody, one per HTTP attempt, whose ReadNow signs as many queued parts
// as fit in the transport's buffer on that attempt's chain. Parts the
// transport took stay in the queue, as replay records, until the service
// answers: a retried attempt sends them again, re-signed on its own chain.
// If they exceed the replay limit they are dropped and the session can no
// longer be retried.
//
// Once the service answered (stopReplay), no attempt follows, so the
// signatures can be made ahead: stopReplay signs what is still queued, and
// from then on (framed mode) Send encodes and signs each part in place in
// the queue on its own goroutine (enqueueFramed), outside p.mu, and the
// writer's ReadNow only copies finished envelopes. The signing cost of a
// connection's streams is then spread over their senders instead of
// serialized on its writer.
//
// In both modes one read (one DATA frame) carries every envelope that fits,
// and the transport reads again only after writing, within HTTP/2 flow
// control, so when the service stops reading, the queue fills and Send
// blocks: at most sendQueueBytes wait here (or one larger part), plus one
// transport buffer.
type sendPipe struct {
	mu sync.Mutex

	body *reqBody // the current attempt's body; nil between attempts

	// q holds the committed parts in order; part i ends at ends[i]. The
	// first sent parts were taken by the current body.
	q    []byte
	qh   *[]byte // q's queuePool handle, if it came from the pool
	ends []int
	sent int

	retain      bool // keep taken parts for replay
	overflow    bool // taken parts were dropped: no replay possible
	replayLimit int

	// moved is the session's one broadcast: made by the first waiter
	// (waitLocked), closed and cleared (broadcastLocked) when what a
	// waiter waits for may have happened: the writer read the body for
	// the first time (dispatched: Open waits for it) or took parts (room
	// for a Send), or a turn with waiters was released (Session.sendTurn,
	// recvTurn). Every waiter looks again under mu after it is closed, so
	// a waiter woken for another's reason only looks twice; nobody
	// waiting, nothing is made or closed.
	moved broadcast

	ended bool  // CloseSend: after the parts, the end frame, then io.EOF
	err   error // the session failed: ReadNow returns err

	// Framed mode (see above), entered once by stopReplay: q holds signed
	// envelopes, which Send signs with signer while it holds the
	// session's send turn. filling is set while a Send writes an envelope
	// past len(q), outside mu: q is then neither compacted nor released.
	// roff counts the bytes of envelope sent that the writer took already.
	// In framed mode ended means that the end frame is queued.
	framed  bool
	signer  *eventstream.Signer
	filling bool
	roff    int

	dispatched bool // the writer has read the body: its request is on its way
}

func (p *sendPipe) init(replayLimit int) {
	p.retain = true
	p.replayLimit = max(replayLimit, 0)
}

// waitLocked returns the channel that the next broadcast closes, making
// it if nobody waits yet. p.mu is held.
func (p *sendPipe) waitLocked() <-chan struct{} { return p.moved.waitLocked() }

// broadcastLocked wakes every waiter, if there is one. p.mu is held.
func (p *sendPipe) broadcastLocked() { p.moved.wakeLocked() }

// markDispatchedLocked records that the transport has sent the request
// headers (it reads the body) and wakes Open. p.mu is held.
func (p *sendPipe) markDispatchedLocked() {
	if !p.dispatched {
		p.dispatched = true
		p.broadcastLocked()
	}
}

// dispatchWait returns nil once the transport has read the body, else a
// channel closed when that may have happened (look again then).
func (p *sendPipe) dispatchWait() <-chan struct{} {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.dispatched {
		return nil
	}
	return p.waitLocked()
}

// start returns the offset of part i in q.
func (p *sendPipe) start(i int) int {
	if i == 0 {
		return 0
	}
	return p.ends[i-1]
}

// enqueue queues part's PayloadPart event if the queue has room. When
// the queue is full it queues nothing and returns a channel closed when
// the writer may have made room (try again then); it returns nil, nil
// once the part is queued. In framed mode the caller holds the session's
// send turn (the part is signed: see enqueueFramed). p.mu is not held.
func (p *sendPipe) enqueue(part *wire.Part) (full <-chan struct{}, err error) {
	size := wire.PartMessageLen(part)
	p.mu.Lock()
	if p.err != nil {
		err := p.err
		p.mu.Unlock()
		return nil, err
	}
	if p.framed {
		return p.enqueueFramed(part, size) // unlocks
	}
	return p.enqueueUnframed(part, size) // unlocks
}

// enqueueUnframed queues part, whose message is size bytes, unsigned:
// before the service answers, the writer signs what it takes, on the
// current attempt's chain, and keeps it for a replay (see stopReplay).
// p.mu is held on entry and released on return. It returns as enqueue
// does. It is apart from enqueue so that the signing path through
// enqueueFramed, the deepest of Send, does not carry its frame (see
// "Stack depth" in docs/design.md).
func (p *sendPipe) enqueueUnframed(part *wire.Part, size int) (<-chan struct{}, error) {
	defer p.mu.Unlock()
	if waiting := len(p.q) - p.start(p.sent); waiting > 0 && waiting+size > sendQueueBytes {
		return p.waitLocked(), nil
	}
	if p.q == nil {
		p.q, p.qh = queuePool.Get()
	}
	q, err := wire.AppendPartMessage(p.q, part)
	if err != nil {
		return nil, err
	}
	p.q = q
	p.ends = append(p.ends, len(q))
	p.wake()
	return nil, nil
}

// enqueueFramed queues part, whose inner message is size bytes, as a
// signed envelope: it reserves room at the end of q, then, with p.mu
// released, encodes the message in place and signs it there, and commits
// it. The chain advances only for a part that is queued: room is decided
// first, and nothing fails once signing began. p.mu is held on entry and
// released on return; the caller holds the session's send turn, which
// makes it the only one signing or filling. It returns as enqueue does.
func (p *sendPipe) enqueueFramed(part *wire.Part, size int) (<-chan struct{}, error) {
	envLen := envelopeOverhead + size
	if waiting := p.waitingFramed(); waiting > 0 && waiting+envLen > sendQueueBytes {
		full := p.waitLocked()
		p.mu.Unlock()
		return full, nil
	}
	if cap(p.q)-len(p.q) < envLen {
		p.compact() // make room at the tail from what the writer took
	}
	if p.q == nil {
		p.q, p.qh = queuePool.Get()
	}
	start := len(p.q)
	p.q = bufpool.Grow(p.q, envLen)
	env := p.q[start : start+envLen]
	signer := p.signer
	p.filling = true
	p.mu.Unlock()

	inner, err := wire.AppendPartMessage(env[envelopePrefix:envelopePrefix], part)
	if err == nil && (len(inner) != size || &inner[0] != &env[envelopePrefix]) {
		err = errors.New("bidi: part encoded outside its envelope") // a bug, not an input
	}
	if err == nil {
		err = signer.SealMessage(env)
	}

	p.mu.Lock()
	defer p.mu.Unlock()
	p.filling = false
	if err != nil {
		return nil, err
	}
	p.q = p.q[:start+envLen]
	p.ends = append(p.ends, len(p.q))
	if p.sent == len(p.ends)-1 && p.roff == 0 {
		// The writer took everything before this part while it was
		// signed: drop that now, as it would have.
		p.compact()
	}
	p.wake()
	return nil, nil
}

// backlog returns how many bytes of queued parts the writer has yet to
// take.
func (p *sendPipe) backlog() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.framed {
		return p.waitingFramed()
	}
	return len(p.q) - p.start(p.sent)
}

// waitingFramed returns how many bytes of the queue the writer has yet
// to take, in framed mode. p.mu is held.
func (p *sendPipe) waitingFramed() int {
	return len(p.q) - p.start(p.sent) - p.roff
}

// taken records that the current body took parts up to p.sent: it drops
// them unless they are kept for replay, and wakes a Send waiting for
// room.
func (p *sendPipe) taken() {
	if p.retain && p.sent > 0 && p.ends[p.sent-1] > p.replayLimit {
		p.retain, p.overflow = false, true
	}
	if !p.retain && !p.filling {
		p.compact()
	}
	p.broadcastLocked()
}

// compact drops the parts the current body took.
func (p *sendPipe) compact() {
	if p.sent == 0 {
		return
	}
	off := p.ends[p.sent-1]
	p.q = p.q[:copy(p.q, p.q[off:])]
	n := copy(p.ends, p.ends[p.sent:])
	p.ends = p.ends[:n]
	for i := range p.ends {
		p.ends[i] -= off
	}
	p.sent = 0
	queuePool.Release(&p.q, &p.qh)
}

// attach makes b the current body; it starts with the first queued part,
// so it replays what earlier bodies sent. It fails when those parts were
// not all kept.
func (p *sendPipe) attach(b *reqBody) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.overflow || (!p.retain && p.sent > 0) {
		return errCannotReplay
	}
	if p.body != nil {
		p.body.kill()
	}
	p.body = b
	p.sent = 0
	return nil
}

// detach ends the current body.
func (p *sendPipe) detach() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.body != nil {
		p.body.kill()
		p.body = nil
	}
}

// fail makes every ReadNow and enqueue return err.
func (p *sendPipe) fail(err error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.failLocked(err)
}

// failLocked is fail with p.mu held (the session's end holds it).
func (p *sendPipe) failLocked(err error) {
	if p.err == nil {
		p.err = err
	}
	if p.body != nil {
		p.body.kill()
	}
}

// stopReplay drops the replay records, the service having answered, so
// that the session will never be retried, and enters framed mode: what is
// queued is signed now, on the current body's chain, which Send continues.
func (p *sendPipe) stopReplay() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.retain = false
	p.compact()
	if b := p.body; b != nil && !b.killed && p.err == nil && !p.framed {
		if err := p.frame(b); err != nil {
			p.err = wrapEncodeError(err)
			b.kill()
		}
	}
}

// frame enters framed mode with body b: the rest of an envelope b was
// handing out, the queued parts (signed now) and a requested end frame
// become the signed queue. p.mu is held; nothing is filling.
func (p *sendPipe) frame(b *reqBody) error {
	p.framed, p.signer = true, b.signer
	pending := p.sent < len(p.ends) || len(b.rest) > 0 || (p.ended && !b.endSent)
	if !pending {
		return nil // the common case: nothing waits; Send signs from here on
	}
	fq, fh := queuePool.Get()
	var fends []int
	if len(b.rest) > 0 {
		fq = append(fq, b.rest...)
		fends = append(fends, len(fq))
		if b.restPart {
			p.sent++ // that part is in fq
		}
		b.rest = nil
		b.releaseEnv()
	}
	for i := p.sent; i < len(p.ends); i++ {
		var err error
		if fq, err = b.signer.AppendPayload(fq, p.q[p.start(i):p.ends[i]]); err != nil {
			return err
		}
		fends = append(fends, len(fq))
	}
	if p.ended && !b.endSent {
		b.endSent = true
		fq = b.signer.AppendEnd(fq)
		fends = append(fends, len(fq))
	}
	p.q = p.q[:0]
	queuePool.Release(&p.q, &p.qh)
	p.q, p.qh = fq, fh
	p.ends = append(p.ends[:0], fends...)
	p.sent, p.roff = 0, 0
	return nil
}

// canReplay reports whether a new attempt could send again everything
// sent so far.
func (p *sendPipe) canReplay() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.retain && !p.overflow
}

// end asks for the end frame once every queued part is sent; in framed
// mode it signs and queues it. The caller holds the session's send turn.
func (p *sendPipe) end() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.ended {
		return
	}
	p.ended = true
	if p.framed && p.err == nil {
		p.compact()
		p.q = p.signer.AppendEnd(p.q)
		p.ends = append(p.ends, len(p.q))
	}
	p.wake()
}

func (p *sendPipe) wake() {
	if p.body != nil && p.body.ready != nil {
		p.body.ready()
	}
}

// reqBody is the request body of one HTTP attempt.
type reqBody struct {
	p      *sendPipe
	signer *eventstream.Signer
	ready  func() // the engine's callback (see Bind); guarded by p.mu
	killed bool   // guarded by p.mu

	rest     []byte // unread bytes of an envelope that did not fit a ReadNow
	restPart bool   // rest belongs to part p.sent (else to the end frame)
	env      []byte // holds that envelope
	endSent  bool
}

func newReqBody(p *sendPipe, signer *eventstream.Signer) *reqBody {
	return &reqBody{p: p, signer: signer}
}

// kill ends the body; p.mu is held.
func (b *reqBody) kill() {
	b.killed = true
}

// Close is called by the transport when it stops reading the body.
func (b *reqBody) Close() error {
	b.p.mu.Lock()
	b.kill()
	b.p.mu.Unlock()
	return nil
}

// Bind implements the engine's pull interface: ready is called whenever
// parts or the end frame are queued.
func (b *reqBody) Bind(ready func()) {
	b.p.mu.Lock()
	b.ready = ready
	b.p.mu.Unlock()
}

// ReadNow gives the engine's writer the next envelopes: every queued part
// that fits in dst, signed (already, in framed mode), or the rest of one
// that did not fit; after CloseSend, the end frame and io.EOF. It never
// blocks, and returns eventstream.ErrWouldBlock when nothing is queued
// (the engine never passes an empty dst; one gets 0, nil).
func (b *reqBody) ReadNow(dst []byte) (int, error) {
	if len(dst) == 0 {
		return 0, nil
	}
	p := b.p
	p.mu.Lock()
	defer p.mu.Unlock()
	p.markDispatchedLocked()
	switch {
	case b.killed:
		return 0, errBodyDone
	case p.err != nil:
		return 0, p.err
	case p.framed:
		return b.readFramed(dst)
	}
	return b.readLocked(dst)
}

// readFramed copies signed envelopes into dst: every whole one that fits,
// or a piece of the first; io.EOF follows the end frame. p.mu is held.
func (b *reqBody) readFramed(dst []byte) (int, error) {
	p := b.p
	n := 0
	for p.sent < len(p.ends) {
		env := p.q[p.start(p.sent)+p.roff : p.ends[p.sent]]
		if len(env) > len(dst)-n {
			if n == 0 {
				n = copy(dst, env)
				p.roff += n
			}
			break
		}
		n += copy(dst[n:], env)
		p.sent++
		p.roff = 0
	}
	if n > 0 {
		p.taken()
	}
	switch {
	case p.ended && p.sent == len(p.ends):
		return n, io.EOF
	case n == 0:
		return 0, eventstream.ErrWouldBlock
	}
	return n, nil
}

// readLocked is one read in replay mode: it signs what it hands out.
// p.mu is held.
func (b *reqBody) readLocked(dst []byte) (n int, err error) {
	p := b.p
	switch {
	case len(b.rest) > 0:
		n := copy(dst, b.rest)
		b.rest = b.rest[n:]
		if len(b.rest) > 0 {
			return n, nil
		}
		b.releaseEnv()
		if b.restPart {
			p.sent++
			p.taken()
			return n, nil
		}
		return n, io.EOF // the end frame
	case b.endSent:
		return 0, io.EOF
	case p.sent < len(p.ends):
		return b.readParts(dst)
	case p.ended:
		b.endSent = true
		if len(dst) >= envelopeOverhead {
			return len(b.signer.AppendEnd(dst[:0])), io.EOF
		}
		b.env = b.signer.AppendEnd(b.env[:0])
		n := copy(dst, b.env)
		b.rest, b.restPart = b.env[n:], false
		return n, nil
	}
	return 0, eventstream.ErrWouldBlock
}

// releaseEnv gives the envelope buffer back to envPool once its bytes
// are read, so that an idle session keeps no buffer for the largest part
// it ever sent, and a busy one reuses pooled buffers without allocating.
func (b *reqBody) releaseEnv() {
	if b.env != nil {
		buf := b.env[:0]
		envPool.Put(&buf)
		b.env = nil
	}
}

// envPool holds envelope buffers between parts too large for one
// transport read.
var envPool sync.Pool

// envBuffer returns a pooled buffer (empty, any capacity) for b.env.
func envBuffer() []byte {
	if p, ok := envPool.Get().(*[]byte); ok {
		return (*p)[:0]
	}
	return nil
}

// readParts signs queued parts into dst, as many as fit; a first part
// that does not fit is signed into b.env and copied in pieces. p.mu is
// held.
func (b *reqBody) readParts(dst []byte) (int, error) {
	p := b.p
	n := 0
	for p.sent < len(p.ends) {
		inner := p.q[p.start(p.sent):p.ends[p.sent]]
		if size := len(inner) + envelopeOverhead; size > len(dst)-n {
			if n > 0 {
				break
			}
			if b.env == nil {
				b.env = envBuffer()
			}
			env, err := b.signer.AppendPayload(b.env[:0], inner)
			if err != nil {
				return 0, err
			}
			b.env = env
			n = copy(dst, env)
			b.rest, b.restPart = env[n:], true
			return n, nil
		}
		env, err := b.signer.AppendPayload(dst[n:n], inner)
		if err != nil {
			return 0, err
		}
		n += len(env)
		p.sent++
	}
	p.taken()
	return n, nil
}
