package bidi_test

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"math/rand/v2"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"

	"github.com/sagemaker-bidi/sagemaker-bidi/bidi"
	"github.com/sagemaker-bidi/sagemaker-bidi/bidi/biditest"
)

// The acceptance tests of issue 19 run paced audio calls against
// biditest.StampedEcho: 640-byte frames (20 ms of 16 kHz 16-bit mono)
// every 20 ms, answered by the model 60 ms after they arrive with a stamp
// of its stream clock, and lost if the stream's input ends first (as
// SageMaker closes the container's connection). Time is compressed: a
// stream is rotated after 1 s instead of 29 minutes, under a cap of 5 s
// instead of 30 minutes (the cap stays above After plus the default
// FinishQuiet of 2 s), so the 250 frames of 5 s stand for a two-hour
// call.
//
// The calls run in a testing/synctest bubble, client and server talking
// over memnet: their clock is the bubble's, which moves only when every
// goroutine of the call waits. So a call takes the CPU time its work
// needs, not the seconds it stands for, and no scheduling delay shows in
// its figures: a reply gap is the pace unless the code itself holds a
// reply back, and each assertion on gaps and clocks is exact.
//
// Except TestRotationManyCalls, on the real clock: its 50 calls in one
// bubble, acting at the same instants, crashed the race detector's
// runtime under load (ThreadSanitizer "CHECK failed: tsan_rtl.cpp:346",
// or a fault in the runtime; go1.26.8 and go1.26.11, 4 of 24 runs of
// 10 beside two CPU hogs), which the same calls spread over real time
// never did.
const (
	acceptPace  = 20 * time.Millisecond
	acceptDelay = 60 * time.Millisecond
	acceptCap   = 5 * time.Second
	acceptAfter = time.Second
	frameLen    = 640
)

// stampReply is one binary reply of a call: the generation Recv said it
// came from, the frame it answers, its stamp, and its place in the items.
type stampReply struct {
	gen   int
	frame uint32
	stamp biditest.Stamp
	at    time.Time
	index int
}

// callLog is what the receiver of a call saw.
type callLog struct {
	items   []rotItem
	replies []stampReply
	texts   map[int][]string // generation -> its UTF-8 messages, in order
	events  []bidi.RotationEvent
	ends    map[int]error // generation -> how it ended
	endAt   map[int]int   // generation -> index of its end in items
	final   error         // Recv's terminal error
	finish  error         // Finish's result
	elapsed time.Duration // of the sending
}

// pacedCall sends frames frames at the pace on rs (before(i), if set, runs
// before frame i), ends it with Finish(ctx, quiet) and
// collects everything the receiver saw.
func pacedCall(t *testing.T, ctx context.Context, rs *bidi.RotatingSession, items <-chan rotItem, frames int, quiet time.Duration, before func(i int)) *callLog {
	t.Helper()
	ticker := time.NewTicker(acceptPace)
	defer ticker.Stop()
	began := time.Now()
	for i := 0; i < frames; i++ {
		<-ticker.C
		if before != nil {
			before(i)
		}
		if err := rs.Send(ctx, bidi.Binary(audioFrame(uint32(i)))); err != nil {
			t.Errorf("Send frame %d: %v", i, err) // not Fatal: pacedCall may run on other goroutines
			break
		}
	}
	log := &callLog{elapsed: time.Since(began), ends: map[int]error{}, endAt: map[int]int{}, texts: map[int][]string{}}
	finished := make(chan error, 1)
	go func() { finished <- rs.Finish(ctx, quiet) }()
	for it := range items {
		idx := len(log.items)
		log.items = append(log.items, it)
		switch {
		case it.ev != nil:
			log.events = append(log.events, *it.ev)
		case it.end > 0:
			log.ends[it.end] = it.endErr
			log.endAt[it.end] = idx
		case it.err != nil:
			log.final = it.err
		case it.msg.Type == bidi.DataTypeUTF8:
			log.texts[it.gen] = append(log.texts[it.gen], string(it.msg.Data))
		case it.msg.Type == bidi.DataTypeBinary:
			st, err := biditest.ParseStamp(it.msg.Data)
			if err != nil || len(st.Data) != frameLen {
				t.Errorf("reply %d: %v (%d bytes)", idx, err, len(it.msg.Data))
				continue
			}
			log.replies = append(log.replies, stampReply{gen: it.gen, frame: binary.BigEndian.Uint32(st.Data), stamp: st, at: it.at, index: idx})
		}
	}
	log.finish = <-finished
	return log
}

// starts returns each generation's StreamStart: the first's is zero.
func (l *callLog) starts() map[int]bidi.StreamStart {
	m := map[int]bidi.StreamStart{1: {}}
	for _, ev := range l.events {
		m[ev.To] = ev.Start
	}
	return m
}

// checkClean fails unless the call ended with io.EOF, Finish returned nil
// and every stream ended cleanly.
func (l *callLog) checkClean(t *testing.T) {
	t.Helper()
	if l.final != io.EOF || l.finish != nil {
		t.Errorf("Recv ended with %v, Finish returned %v; want io.EOF and nil", l.final, l.finish)
	}
	for gen, err := range l.ends {
		if err != nil {
			t.Errorf("stream %d ended with %v", gen, err)
		}
	}
}

// checkTimeline rebases every stamp with its stream's start: the audio
// position (Start.Bytes + Stamp.Offset) must be the frame's exactly, and
// the stream clock (Start.Offset + Stamp.Clock), taken in the order Recv
// returned the replies, must never go back by more than tolerance. It
// returns the largest step back.
func (l *callLog) checkTimeline(t *testing.T, tolerance time.Duration) time.Duration {
	t.Helper()
	starts := l.starts()
	var high, back time.Duration
	for _, r := range l.replies {
		s := starts[r.gen]
		if pos := s.Bytes + r.stamp.Offset; pos != int64(r.frame)*frameLen {
			t.Errorf("frame %d of stream %d: rebased audio position %d, want %d", r.frame, r.gen, pos, int64(r.frame)*frameLen)
		}
		at := s.Offset + r.stamp.Clock
		high = max(high, at)
		back = max(back, high-at)
	}
	if back > tolerance {
		t.Errorf("the rebased call timeline went back by %v, want at most %v", back, tolerance)
	}
	return back
}

// gaps returns the reply gap at each planned rotation (the larger of the
// gap before the successor's first reply and the one after it) and the
// 90th percentile of the other gaps between replies, the steady state.
func (l *callLog) gaps() (atRotations []time.Duration, steady time.Duration) {
	seen := map[int]bool{1: true}
	var others []time.Duration
	for i := 1; i < len(l.replies); i++ {
		gap := l.replies[i].at.Sub(l.replies[i-1].at)
		if g := l.replies[i].gen; !seen[g] {
			seen[g] = true
			if i+1 < len(l.replies) {
				gap = max(gap, l.replies[i+1].at.Sub(l.replies[i].at))
				i++
			}
			atRotations = append(atRotations, gap)
			continue
		}
		others = append(others, gap)
	}
	slices.Sort(others)
	if len(others) > 0 {
		steady = others[len(others)*9/10]
	}
	slices.Sort(atRotations)
	return atRotations, steady
}

// The acceptance test of seamless rotation and the graceful end: a paced
// call of "two hours" under a "30-minute" cap, FinishQuiet at its
// default. Every frame is answered exactly once, in order within each
// stream; the streams are rotated by age, never by the cap; at each
// rotation the successor's replies come before the old stream's end (no
// wait for its quiet period), and the largest reply gap there is at most
// 3 times the steady state's; Finish loses nothing; the timeline rebased
// with the rotation events is continuous: exact in audio position, within
// 20 ms (plus the run's jitter) in stream clock time.
func TestRotationPacedAudioTwoHours(t *testing.T) { synctest.Test(t, pacedAudioTwoHours) }

func pacedAudioTwoHours(t *testing.T) {
	const frames = 250
	echo := biditest.StampedEcho(acceptDelay, nil)
	var (
		mu      sync.Mutex
		clocks  = map[*biditest.Stream]time.Time{} // when each stream's clock started
		started = biditest.HandlerFunc(func(st *biditest.Stream) {
			// StampedEcho starts its stream clock right after Accept,
			// which is a no-op on an accepted stream.
			st.Accept()
			mu.Lock()
			clocks[st] = time.Now()
			mu.Unlock()
			echo.ServeBidi(st)
		})
	)
	srv, dial := newMemServer(t, started, func(s *biditest.Server) { s.MaxStreamAge = acceptCap })
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var preambles, finishes atomic.Int32
	r := &bidi.Rotation{After: acceptAfter, Preamble: textPreamble("config", &preambles), Finish: textPreamble("finalize", &finishes)}
	start, items := receiveAll(r, 1<<14)
	rs, err := srv.Client(dial).OpenRotating(ctx, &bidi.OpenInput{EndpointName: "audio"}, r)
	if err != nil {
		t.Fatalf("OpenRotating: %v", err)
	}
	defer rs.Close()
	start(ctx, rs)
	log := pacedCall(t, ctx, rs, items, frames, 2*time.Second, nil)

	log.checkClean(t)
	count := make([]int, frames)
	last := map[int]int64{}
	for _, r := range log.replies {
		count[r.frame]++
		if prev, ok := last[r.gen]; ok && int64(r.frame) <= prev {
			t.Errorf("stream %d: frame %d after frame %d", r.gen, r.frame, prev)
		}
		last[r.gen] = int64(r.frame)
	}
	for f, n := range count {
		if n != 1 {
			t.Errorf("frame %d answered %d times, want once", f, n)
		}
	}
	if len(log.events) < 4 {
		t.Errorf("%d rotations in %v with After %v, want at least 4", len(log.events), log.elapsed, acceptAfter)
	}
	for i, ev := range log.events {
		if ev.From != i+1 || ev.To != i+2 || ev.Reason != bidi.RotationAge || ev.Err != nil || ev.Replayed != 0 {
			t.Errorf("rotation %d: %+v, want %d -> %d by age, clean", i, ev, i+1, i+2)
		}
	}
	// Seamless: the successor's first reply is returned before the end
	// of the stream it replaced (which waits FinishQuiet, 2 s, after its
	// last reply). A rotation that began after the last frame was sent
	// leaves its successor no frame to answer: every frame answered once
	// (checked above) by the streams before it shows that this is so.
	for i, ev := range log.events {
		first := -1
		for _, r := range log.replies {
			if r.gen == ev.To {
				first = r.index
				break
			}
		}
		if first < 0 && i == len(log.events)-1 && !slices.Contains(count, 0) {
			t.Logf("rotation %d -> %d began after the last frame was sent", ev.From, ev.To)
			continue
		}
		if end, ok := log.endAt[ev.From]; first < 0 || !ok || first > end {
			t.Errorf("rotation %d -> %d: the successor's first reply at item %d, the old stream's end at %d (ended: %v)", ev.From, ev.To, first, end, ok)
		}
	}
	// The gap at a rotation is compared with the steady state. On the
	// bubble's clock the steady state is the pace itself, and a rotation
	// that held a reply back by any time at all would show: every gap at
	// a rotation must be the pace too.
	gaps, steady := log.gaps()
	atRot, median := gaps[len(gaps)-1], gaps[len(gaps)/2]
	if steady != acceptPace || atRot > steady {
		t.Errorf("reply gaps at rotations %v, steady state (p90) %v; want every one at most the pace, %v", gaps, steady, acceptPace)
	}
	// The stream clocks rebased with the events: within 20 ms, plus how
	// much later the client saw one stream's response head than another's
	// after its model's clock started (the spread of the anchoring
	// delays, measured in this run: a few ms when idle, tens under load).
	mu.Lock()
	spread := anchorSpread(t, log.events, srv.Streams(), clocks)
	mu.Unlock()
	back := log.checkTimeline(t, 20*time.Millisecond+spread)
	// A rotation that began as the call ended leaves one stream more:
	// its successor was opened and sent its Preamble, then closed unused.
	all := srv.Streams()
	want := len(log.events) + 1
	if len(all) == want+1 && onlyText(all[len(all)-1], "config") {
		t.Logf("a rotation begun as the call ended was abandoned")
		want++
	}
	if streams := len(all); streams != want || int(preambles.Load()) != streams || int(finishes.Load()) != len(log.events) {
		t.Errorf("%d streams, %d rotations, %d preambles, %d finishes", streams, len(log.events), preambles.Load(), finishes.Load())
	}
	// Each stream's messages begin with its Preamble's answer, and those
	// of a stream rotated away from end with its Finish message's.
	for gen := 1; gen <= len(log.events)+1; gen++ {
		texts := log.texts[gen]
		want := []string{"config", "finalize"}
		if gen == len(log.events)+1 {
			want = want[:1] // Finish of the call does not call Rotation.Finish
		}
		if !slices.Equal(texts, want) {
			t.Errorf("stream %d: texts %q, want %q", gen, texts, want)
		}
		if first := slices.IndexFunc(log.replies, func(r stampReply) bool { return r.gen == gen }); first >= 0 {
			if cfg := slices.IndexFunc(log.items, func(it rotItem) bool { return it.gen == gen && string(it.msg.Data) == "config" }); cfg > log.replies[first].index {
				t.Errorf("stream %d: a frame's answer before its Preamble's", gen)
			}
		}
	}
	t.Logf("%d frames in %v, %d rotations; reply gap at rotations: largest %v, median %v; steady state p90 %v (ratios %.2f, %.2f); timeline steps back at most %v (anchoring spread %v)",
		frames, log.elapsed.Round(time.Millisecond), len(log.events), atRot.Round(time.Microsecond), median.Round(time.Microsecond), steady.Round(time.Microsecond),
		float64(atRot)/float64(steady), float64(median)/float64(steady), back, spread.Round(time.Microsecond))
}

// onlyText reports whether st received nothing but the UTF-8 text want
// (once, or not yet when the stream was closed).
func onlyText(st *biditest.Stream, want string) bool {
	parts := st.Received()
	return len(parts) == 0 || len(parts) == 1 && parts[0].Type == bidi.DataTypeUTF8 && parts[0].Complete && string(parts[0].Data) == want
}

// anchorSpread returns the largest difference between two streams' anchoring
// delays: how long after its model's clock started (clocks, by server
// stream) the client saw a stream's response head (StreamStart.Time, the
// first stream's taken from the events' Offset). A rebased timeline can
// step back by that much between two streams' replies.
func anchorSpread(t *testing.T, events []bidi.RotationEvent, streams []*biditest.Stream, clocks map[*biditest.Stream]time.Time) time.Duration {
	t.Helper()
	if len(events) == 0 || len(streams) != len(events)+1 {
		return 0 // the stream count is checked on its own
	}
	first := events[0].Start.Time.Add(-events[0].Start.Offset)
	var lo, hi time.Duration
	for i, st := range streams {
		at := first
		if i > 0 {
			at = events[i-1].Start.Time
		}
		clock, ok := clocks[st]
		if !ok {
			t.Fatalf("stream %d: its clock's start was not recorded", i+1)
		}
		d := at.Sub(clock)
		if i == 0 || d < lo {
			lo = d
		}
		if i == 0 || d > hi {
			hi = d
		}
	}
	return hi - lo
}

// Finish right after a rotation loses nothing: the replies of the stream
// rotated away from and those of the last stream all come back, although
// the model drops whatever it has not sent when an input ends.
func TestRotationFinishAfterRotate(t *testing.T) { synctest.Test(t, rotationFinishAfterRotate) }

func rotationFinishAfterRotate(t *testing.T) {
	srv, dial := newMemServer(t, biditest.StampedEcho(acceptDelay, nil))
	ctx := testCtx(t)
	r := &bidi.Rotation{FinishQuiet: 200 * time.Millisecond}
	start, items := receiveAll(r, 1<<10)
	rs, err := srv.Client(dial).OpenRotating(ctx, &bidi.OpenInput{EndpointName: "audio"}, r)
	if err != nil {
		t.Fatalf("OpenRotating: %v", err)
	}
	defer rs.Close()
	start(ctx, rs)
	send := func(from, to int) {
		for i := from; i < to; i++ {
			if err := rs.Send(ctx, bidi.Binary(audioFrame(uint32(i)))); err != nil {
				t.Fatalf("Send %d: %v", i, err)
			}
		}
	}
	send(0, 20)
	if err := rs.Rotate(ctx); err != nil {
		t.Fatalf("Rotate: %v", err)
	}
	if g := rs.Generation(); g != 2 {
		t.Fatalf("generation %d after Rotate, want 2", g)
	}
	send(20, 40)
	if err := rs.Finish(ctx, 200*time.Millisecond); err != nil {
		t.Fatalf("Finish: %v", err)
	}
	got := map[uint32]int{}
	var ev *bidi.RotationEvent
	for it := range items {
		switch {
		case it.ev != nil:
			ev = it.ev
		case it.end > 0:
			if it.endErr != nil {
				t.Errorf("stream %d ended with %v", it.end, it.endErr)
			}
		case it.err != nil:
			if it.err != io.EOF {
				t.Fatalf("Recv: %v", it.err)
			}
		default:
			st, err := biditest.ParseStamp(it.msg.Data)
			if err != nil {
				t.Fatal(err)
			}
			f := binary.BigEndian.Uint32(st.Data)
			if want := 1 + int(f/20); it.gen != want {
				t.Errorf("frame %d from stream %d, want %d", f, it.gen, want)
			}
			got[f]++
		}
	}
	for f := uint32(0); f < 40; f++ {
		if got[f] != 1 {
			t.Errorf("frame %d answered %d times, want once", f, got[f])
		}
	}
	if ev == nil || ev.Reason != bidi.RotationRequested || ev.Start.Messages != 20 || ev.Start.Bytes != 20*frameLen {
		t.Errorf("event %+v, want a requested rotation starting at message 20", ev)
	}
}

// checkAnswers checks that every frame was answered, and answered more
// than once only by streams whose replay (replayed: generation -> [from,
// to) frames) covered it: of n answers, n-1 must come from such streams
// (the first answer may come after a replayed one, when the stream it
// comes from was still finishing). It returns the number of answers
// beyond the first.
func (l *callLog) checkAnswers(t *testing.T, frames int, replayed map[int][2]int64) (marked int) {
	t.Helper()
	gens := make([][]int, frames)
	for _, r := range l.replies {
		gens[r.frame] = append(gens[r.frame], r.gen)
	}
	for f, gs := range gens {
		if len(gs) == 0 {
			t.Errorf("frame %d never answered", f)
			continue
		}
		covered := 0
		for _, g := range gs {
			if span, ok := replayed[g]; ok && int64(f) >= span[0] && int64(f) < span[1] {
				covered++
			}
		}
		if covered < len(gs)-1 {
			t.Errorf("frame %d answered by streams %v, of which %d replayed it", f, gs, covered)
		}
		marked += len(gs) - 1
	}
	return marked
}

// replays returns the frames each stream was replayed, by generation.
func (l *callLog) replays() map[int][2]int64 {
	m := map[int][2]int64{}
	for _, ev := range l.events {
		if ev.Replayed > 0 {
			m[ev.To] = [2]int64{ev.ReplayFrom, ev.ReplayFrom + int64(ev.Replayed)}
		}
	}
	return m
}

// faultPlan fires each fault once, at its frame.
type faultPlan struct {
	pending []fault
}

type fault struct {
	frame int
	fire  func()
}

// before is pacedCall's hook.
func (p *faultPlan) before(i int) {
	if len(p.pending) > 0 && i == p.pending[0].frame {
		p.pending[0].fire()
		p.pending = p.pending[1:]
	}
}

// The acceptance test of replay: the paced call of TestRotationPacedAudioTwoHours
// with a stream reset by the model, the TCP connection dropped and a
// GOAWAY, at random frames (a fault may hit a stream still finishing
// after a planned rotation too), and a replay window of 2 s. Every frame
// reaches the model at least once; every frame is answered, and Recv
// returns each answer once, except the answers to replayed frames, which
// the rotation event marks (the application drops those it saw); the
// audio positions rebased with the events are exact.
func TestRotationReplayAfterFaults(t *testing.T) { synctest.Test(t, replayAfterFaults) }

func replayAfterFaults(t *testing.T) {
	const frames = 300
	rng := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 19))
	resetFrame, dropFrame, goAwayFrame := 40+rng.IntN(40), 120+rng.IntN(40), 200+rng.IntN(40)
	t.Logf("reset at frame %d, dropped connection at %d, GOAWAY at %d", resetFrame, dropFrame, goAwayFrame)
	var resetNow atomic.Bool
	srv, dial := newMemServer(t, biditest.StampedEcho(acceptDelay, func(st *biditest.Stream, seq int) bool {
		return resetNow.CompareAndSwap(true, false)
	}), func(s *biditest.Server) {
		s.MaxStreamAge = acceptCap
		s.MaxRecorded = 4096
	})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var preambles atomic.Int32
	r := &bidi.Rotation{
		After:        acceptAfter,
		Preamble:     textPreamble("config", &preambles),
		ReplayWindow: 2 * time.Second,
		Backoff:      func(int) time.Duration { return 0 },
	}
	start, items := receiveAll(r, 1<<14)
	rs, err := srv.Client(dial).OpenRotating(ctx, &bidi.OpenInput{EndpointName: "audio"}, r)
	if err != nil {
		t.Fatalf("OpenRotating: %v", err)
	}
	defer rs.Close()
	start(ctx, rs)
	goAways := make(chan struct{})
	plan := &faultPlan{pending: []fault{
		{resetFrame, func() { resetNow.Store(true) }},
		{dropFrame, srv.CloseClientConnections},
		{goAwayFrame, func() { go func() { srv.GoAway(); close(goAways) }() }},
	}}
	log := pacedCall(t, ctx, rs, items, frames, 2*time.Second, plan.before)
	if len(plan.pending) > 0 {
		t.Fatalf("%d faults not fired", len(plan.pending))
	}
	<-goAways

	if log.final != io.EOF || log.finish != nil {
		t.Errorf("Recv ended with %v, Finish returned %v; want io.EOF and nil", log.final, log.finish)
	}
	// Every frame reached the model.
	reached := make([]bool, frames)
	for _, st := range srv.Streams() {
		for _, p := range st.Received() {
			if p.Type == bidi.DataTypeBinary && len(p.Data) == frameLen {
				reached[binary.BigEndian.Uint32(p.Data)] = true
			}
		}
	}
	for f, ok := range reached {
		if !ok {
			t.Errorf("frame %d never reached the model", f)
		}
	}
	// The early ends are reported with their replays.
	replayed := map[int][2]int64{} // generation -> replayed frames [from, to)
	early := 0
	for _, ev := range log.events {
		if ev.Reason == bidi.RotationOverlapFault {
			// A fault that hit a stream still finishing after a planned
			// rotation (the scheduler decides which comes first): the
			// current stream is replaced and replays from the failed
			// stream's messages on.
			early++
			if ev.Err == nil || ev.Replayed == 0 {
				t.Errorf("overlap fault %+v: want its error and a replay", ev)
			}
			replayed[ev.To] = [2]int64{ev.ReplayFrom, ev.ReplayFrom + int64(ev.Replayed)}
			continue
		}
		if ev.Reason != bidi.RotationEarlyEnd {
			if ev.Err != nil || ev.Replayed != 0 {
				t.Errorf("planned rotation %+v with an error or a replay", ev)
			}
			continue
		}
		early++
		if ev.Err == nil || ev.Replayed == 0 || ev.Start.Messages != ev.ReplayFrom || ev.Start.Bytes != ev.ReplayFrom*frameLen {
			t.Errorf("early end %+v: want its error, a replay, and the stream starting at the first replayed message", ev)
		}
		replayed[ev.To] = [2]int64{ev.ReplayFrom, ev.ReplayFrom + int64(ev.Replayed)}
	}
	if early < 2 {
		t.Errorf("%d early ends, want at least 2 (the reset and the dropped connection): %+v", early, log.events)
	}
	marked := log.checkAnswers(t, frames, replayed)
	log.checkTimeline(t, time.Hour) // the audio positions; the wall clock is checked without faults
	t.Logf("%d rotations (%d early ends), %d streams, %d answers returned twice and marked as replayed; events: %+v",
		len(log.events), early, len(srv.Streams()), marked, log.events)
}

// expiringCredentials issues credentials that expire life after they are
// retrieved, and records when each expires.
type expiringCredentials struct {
	life time.Duration

	mu     sync.Mutex
	issued []time.Time // expiries, in order
}

func (p *expiringCredentials) Retrieve(context.Context) (aws.Credentials, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	exp := time.Now().Add(p.life)
	p.issued = append(p.issued, exp)
	return aws.Credentials{AccessKeyID: serverCredentials.AccessKeyID, SecretAccessKey: serverCredentials.SecretAccessKey, CanExpire: true, Expires: exp}, nil
}

// The acceptance test of rotation ahead of expiring credentials: with
// credentials that expire 1.5 s after they are issued (before the cap,
// rotation by age off) and a margin of 500 ms, every stream is replaced
// by a successor signed with new credentials before its own expire, and
// the application sees no error and loses nothing.
func TestRotationBeforeCredentialsExpire(t *testing.T) { synctest.Test(t, beforeCredentialsExpire) }

func beforeCredentialsExpire(t *testing.T) {
	const frames = 150
	srv, dial := newMemServer(t, biditest.StampedEcho(acceptDelay, nil), func(s *biditest.Server) { s.MaxStreamAge = acceptCap })
	creds := &expiringCredentials{life: 1500 * time.Millisecond}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	r := &bidi.Rotation{After: -1, ExpiryMargin: 500 * time.Millisecond}
	start, items := receiveAll(r, 1<<12)
	client := srv.Client(dial, func(o *bidi.Options) { o.Credentials = creds })
	rs, err := client.OpenRotating(ctx, &bidi.OpenInput{EndpointName: "audio"}, r)
	if err != nil {
		t.Fatalf("OpenRotating: %v", err)
	}
	defer rs.Close()
	start(ctx, rs)
	log := pacedCall(t, ctx, rs, items, frames, 2*time.Second, nil)

	log.checkClean(t)
	count := make([]int, frames)
	for _, r := range log.replies {
		count[r.frame]++
	}
	for f, n := range count {
		if n != 1 {
			t.Errorf("frame %d answered %d times, want once", f, n)
		}
	}
	if len(log.events) < 2 {
		t.Errorf("%d rotations in %v, want at least 2", len(log.events), log.elapsed)
	}
	// Each stream was signed with credentials of its own: stream n with
	// the n-th issued. One more may have been issued for a successor of
	// the last stream that the call's end overtook (the call ends about
	// when a rotation is due: whether that rotation happens first is up to
	// the scheduler), and then not before the last stream started.
	streams := len(log.events) + 1
	switch n := len(creds.issued); {
	case n < streams || n > streams+1:
		t.Fatalf("%d credentials issued for %d streams, want %d or one more; %v %+v", n, streams, streams, creds.issued, log.events)
	case n == streams+1 && len(log.events) > 0:
		last := log.events[len(log.events)-1].Start.Time
		if issued := creds.issued[n-1].Add(-creds.life); issued.Before(last) {
			t.Errorf("credentials %d issued at %v, before the last stream started at %v: not for its successor", n, issued, last)
		}
	}
	for _, ev := range log.events {
		exp := creds.issued[ev.From-1]
		if ev.Reason != bidi.RotationExpiry || ev.Err != nil || !ev.Start.Time.Before(exp) {
			t.Errorf("rotation %+v: want by expiry, clean, before the old stream's credentials expire at %v", ev, exp)
		}
	}
	t.Logf("%d rotations by expiry in %v, %d credentials issued", len(log.events), log.elapsed.Round(time.Millisecond), len(creds.issued))
}

// The acceptance test of many calls: 50 paced calls at once, each past
// its streams' age, with replay on (5 s: the race detector under load can
// take seconds to notice a reset) and the first stream of each reset by
// the model early on, ended with Finish. (No cap: 50 calls under the race
// detector on a loaded machine may fall seconds behind, and the cap is
// not what this test is about. Under such load the reset may reach a
// stream only after it was rotated away from: the rotation that replays
// its messages is then a RotationOverlapFault.) Every call gets every answer (twice only
// where marked as replayed); the heap the calls hold while running is
// reported per call; after Close no goroutine of package bidi is left and
// the heap is back where it was.
//
// Its streams ask StampedEcho to drain (drain=true: it answers what it
// was sent before the input ended), so their quiet periods can be short:
// a quiet period long enough for 50 calls under the race detector on a
// saturated host (5 s) was most of this test's time. That no reply is
// lost to an input ended while the model is still answering (without
// drain, StampedEcho drops those, as SageMaker does) is asserted, on
// exact time, by TestRotationPacedAudioTwoHours and
// TestRotationReplayAfterFaults.
const manyCallsQuiet = 50 * time.Millisecond

func TestRotationManyCalls(t *testing.T) {
	const (
		calls  = 50
		frames = 75
	)
	waitNoBidiGoroutines(t, 5*time.Second) // other tests' leftovers
	var resets sync.Map                    // endpoint name -> reset done
	srv := newServer(t, biditest.StampedEcho(acceptDelay, func(st *biditest.Stream, seq int) bool {
		if seq != 5+len(st.EndpointName)%5 {
			return false
		}
		_, done := resets.LoadOrStore(st.EndpointName, true)
		return !done
	}), func(s *biditest.Server) { s.MaxRecorded = -1 }) // the heap figures are the calls'
	client := srv.Client()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	// A call first, so that lazy one-time initialisations (net/http's
	// header maps, ...) are not counted as left by the calls.
	warm, err := client.OpenRotating(ctx, &bidi.OpenInput{EndpointName: "warm-up"}, &bidi.Rotation{ReplayWindow: time.Second})
	if err != nil {
		t.Fatalf("OpenRotating: %v", err)
	}
	go func() {
		for range warm.Messages(ctx) {
		}
	}()
	if err := warm.Send(ctx, bidi.Binary(audioFrame(0))); err != nil {
		t.Fatal(err)
	}
	if err := warm.Finish(ctx, 100*time.Millisecond); err != nil {
		t.Fatal(err)
	}
	warm.Close()

	var before, during, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	sessions := make([]*bidi.RotatingSession, calls)
	logs := make([]*callLog, calls)
	var wg sync.WaitGroup
	halfway := make(chan struct{}, calls)
	for c := range calls {
		// A short FinishQuiet, for the call and its streams rotated
		// away from: with drain=true, StampedEcho answers what it has
		// queued when the input ends.
		r := &bidi.Rotation{After: acceptAfter, ReplayWindow: 5 * time.Second, Backoff: func(int) time.Duration { return 0 }, FinishQuiet: manyCallsQuiet}
		start, items := receiveAll(r, 1<<12)
		rs, err := client.OpenRotating(ctx, &bidi.OpenInput{EndpointName: fmt.Sprintf("call-%d", c), ModelQueryString: "drain=true"}, r)
		if err != nil {
			t.Fatalf("OpenRotating %d: %v", c, err)
		}
		sessions[c] = rs
		start(ctx, rs)
		wg.Go(func() {
			logs[c] = pacedCall(t, ctx, rs, items, frames, manyCallsQuiet, func(i int) {
				if i == frames/2 {
					halfway <- struct{}{}
				}
			})
		})
	}
	for range calls {
		<-halfway
	}
	runtime.GC()
	runtime.ReadMemStats(&during)
	wg.Wait()
	early := 0
	for c, l := range logs {
		if l.final != io.EOF || l.finish != nil {
			t.Errorf("call %d: Recv ended with %v, Finish returned %v; %s\nevents %+v\nends %v", c, l.final, l.finish, bidi.DescribeRotating(sessions[c]), l.events, l.ends)
		}
		if l.checkAnswers(t, frames, l.replays()) < 0 || t.Failed() && testing.Verbose() {
			t.Logf("call %d: events %+v ends %v", c, l.events, l.ends)
		}
		for _, ev := range l.events {
			if ev.Reason == bidi.RotationEarlyEnd || ev.Reason == bidi.RotationOverlapFault {
				early++
			}
		}
	}
	for _, rs := range sessions {
		rs.Close()
	}
	client.CloseIdleConnections()
	waitNoBidiGoroutines(t, 10*time.Second)
	for _, st := range srv.Streams() {
		srv.ForgetStream(st)
	}
	logs, sessions = nil, nil
	runtime.GC()
	runtime.GC() // and the pools' victim caches
	runtime.ReadMemStats(&after)
	perCall := (int64(during.HeapAlloc) - int64(before.HeapAlloc)) / calls
	left := int64(after.HeapAlloc) - int64(before.HeapAlloc)
	if early < calls {
		t.Errorf("%d early ends in %d calls, want one each", early, calls)
	}
	if left > calls<<13 {
		t.Errorf("%d B left on the heap after the calls were closed", left)
	}
	t.Logf("%d calls: heap %d KiB per running call (client and server), %d KiB left after Close (%d B per call); %d early ends replayed",
		calls, perCall>>10, left>>10, left/calls, early)
}

// A stream that fails while it finishes after a planned rotation loses
// the answers it had not sent; with replay on, the current stream is
// replaced too (RotationOverlapFault) and the successor is sent the
// failed stream's messages and the ones after them, in order: every
// frame is answered, and twice only where marked.
func TestRotationOverlapFault(t *testing.T) { synctest.Test(t, rotationOverlapFault) }

func rotationOverlapFault(t *testing.T) {
	// Stream 1 is reset by its 11th message: the Finish message that
	// follows the 10 frames once Rotate moved the input to stream 2.
	// Stream 1 is the first whose handler starts (Open awaits its
	// response, so before stream 2 is opened), not the first to receive
	// a message: a busy server can read stream 2's first frame before
	// stream 1's.
	var first atomic.Pointer[biditest.Stream]
	echo := biditest.StampedEcho(acceptDelay, func(st *biditest.Stream, seq int) bool {
		return seq == 10 && first.Load() == st
	})
	srv, dial := newMemServer(t, biditest.HandlerFunc(func(st *biditest.Stream) {
		first.CompareAndSwap(nil, st)
		echo.ServeBidi(st)
	}))
	ctx := testCtx(t)
	r := &bidi.Rotation{
		ReplayWindow: 2 * time.Second,
		FinishQuiet:  200 * time.Millisecond,
		Finish: func(ctx context.Context, send func(bidi.Message) error) error {
			return send(bidi.Text("finalize"))
		},
	}
	start, items := receiveAll(r, 1<<10)
	rs, err := srv.Client(dial).OpenRotating(ctx, &bidi.OpenInput{EndpointName: "audio", AwaitResponse: true}, r)
	if err != nil {
		t.Fatalf("OpenRotating: %v", err)
	}
	defer rs.Close()
	start(ctx, rs)
	send := func(from, to int) {
		for i := from; i < to; i++ {
			if err := rs.Send(ctx, bidi.Binary(audioFrame(uint32(i)))); err != nil {
				t.Fatalf("Send %d: %v", i, err)
			}
		}
	}
	log := &callLog{ends: map[int]error{}, endAt: map[int]int{}}
	// collect takes items until stop says so.
	collect := func(stop func(rotItem) bool) {
		for it := range items {
			switch {
			case it.ev != nil:
				log.events = append(log.events, *it.ev)
			case it.end > 0:
				log.ends[it.end] = it.endErr
			case it.err != nil:
				log.final = it.err
			case it.msg.Type == bidi.DataTypeBinary:
				st, err := biditest.ParseStamp(it.msg.Data)
				if err != nil {
					t.Fatal(err)
				}
				log.replies = append(log.replies, stampReply{gen: it.gen, frame: binary.BigEndian.Uint32(st.Data), stamp: st})
			}
			if stop(it) {
				return
			}
		}
	}
	send(0, 10)
	if err := rs.Rotate(ctx); err != nil {
		t.Fatalf("Rotate: %v", err)
	}
	send(10, 20)
	// Stream 1 fails once Finish sent it the 11th message; the overlap
	// fault replaces stream 2 with stream 3.
	collect(func(it rotItem) bool {
		return it.ev != nil && it.ev.Reason == bidi.RotationOverlapFault || it.end == 1 && it.endErr == nil
	})
	if err, ok := log.ends[1]; ok && err == nil {
		t.Fatalf("stream 1 ended cleanly; events %+v", log.events)
	}
	send(20, 30)
	finished := make(chan error, 1)
	go func() { finished <- rs.Finish(ctx, 200*time.Millisecond) }()
	collect(func(rotItem) bool { return false })
	if err := <-finished; err != nil || log.final != io.EOF {
		t.Fatalf("Finish: %v, Recv ended with %v", err, log.final)
	}
	// The reset may overtake the sending of frames 10-19: the replay
	// then covers what stream 2 had been sent when it was replaced
	// (frames 0 to 9 and some of 10-19), and the rest goes to stream 3
	// as new input. checkAnswers shows that every frame is answered.
	fault := log.events[len(log.events)-1]
	if len(log.events) != 2 || fault.From != 2 || fault.Err == nil || fault.ReplayFrom != 0 || fault.Replayed < 10 || fault.Replayed > 20 || fault.Start.Messages != 0 {
		t.Fatalf("events %+v, want a requested rotation, then an overlap fault replacing stream 2 that replays frames 0 to 9 or more, up to 19", log.events)
	}
	if log.ends[1] == nil {
		t.Errorf("stream 1 ended cleanly, want its reset")
	}
	marked := log.checkAnswers(t, 30, log.replays())
	log.checkTimeline(t, time.Hour)
	t.Logf("%d answers returned twice, marked as replayed", marked)
}

// A stream rotated away from that fails after the call's input ended
// (Finish was called while it still finished) leaves messages
// unanswered all the same: with replay on, the call still gets a
// successor, which is sent the replay window and finished in turn. Every
// frame is answered, Finish returns nil and Recv io.EOF. (Found under
// load by TestRotationManyCalls: a stream reset late lost its frames
// without an error.)
func TestRotationOverlapFaultAfterInputEnded(t *testing.T) {
	synctest.Test(t, rotationOverlapFaultAfterInputEnded)
}

func rotationOverlapFaultAfterInputEnded(t *testing.T) {
	var (
		first     atomic.Pointer[biditest.Stream]
		input2    = make(chan struct{}) // stream 2's input ended: so has the call's
		closeOnce sync.Once
	)
	srv, dial := newMemServer(t, biditest.HandlerFunc(func(st *biditest.Stream) {
		// Stream 1's handler starts first (the call awaits its answer
		// before it opens stream 2), but may accept after stream 2's:
		// claim first before accepting.
		isFirst := first.CompareAndSwap(nil, st)
		if st.Accept() != nil {
			return
		}
		if isFirst {
			// Stream 1 reads its frames and answers none; once the
			// call's input ended, it fails.
			for {
				if _, err := st.Recv(); err != nil {
					break
				}
			}
			select {
			case <-input2:
			case <-st.Context().Done():
				return
			}
			st.Reset()
			return
		}
		for {
			m, err := st.Recv()
			if err != nil {
				if first.Load() != st && st.EndpointName == "call" {
					closeOnce.Do(func() { close(input2) })
				}
				return
			}
			if st.Send(m) != nil {
				return
			}
		}
	}))
	ctx := testCtx(t)
	r := &bidi.Rotation{After: -1, ReplayWindow: time.Minute, FinishQuiet: 50 * time.Millisecond}
	start, items := receiveAll(r, 1<<10)
	rs, err := srv.Client(dial).OpenRotating(ctx, &bidi.OpenInput{EndpointName: "call", AwaitResponse: true}, r)
	if err != nil {
		t.Fatalf("OpenRotating: %v", err)
	}
	defer rs.Close()
	start(ctx, rs)
	const frames = 10
	for i := range frames {
		if i == frames/2 {
			if err := rs.Rotate(ctx); err != nil {
				t.Fatalf("Rotate: %v", err)
			}
		}
		if err := rs.Send(ctx, bidi.Binary(audioFrame(uint32(i)))); err != nil {
			t.Fatalf("Send %d: %v", i, err)
		}
	}
	finished := make(chan error, 1)
	go func() { finished <- rs.Finish(ctx, 50*time.Millisecond) }()
	answers, events, final := frameReplies(t, items, frames)
	if err := <-finished; err != nil || final != io.EOF {
		t.Fatalf("Finish: %v, Recv ended with %v; want nil and io.EOF (events %+v)", err, final, events)
	}
	if len(events) != 2 || events[0].Reason != bidi.RotationRequested ||
		events[1].Reason != bidi.RotationOverlapFault || events[1].From != 2 || events[1].To != 3 ||
		events[1].Err == nil || events[1].ReplayFrom != 0 || events[1].Replayed != frames {
		t.Fatalf("events %+v, want a requested rotation, then an overlap fault 2 -> 3 replaying all %d frames", events, frames)
	}
	for f, gens := range answers {
		want := []int{3} // stream 1 answered nothing
		if f >= frames/2 {
			want = []int{2, 3} // answered by stream 2, and again after the replay
		}
		if !slices.Equal(gens, want) {
			t.Errorf("frame %d answered by streams %v, want %v", f, gens, want)
		}
	}
}

// frameReplies takes a call's items until Recv ends, each reply an echo of
// one of frames audio frames: it returns, by frame, the streams that
// answered it, the rotation events and how Recv ended.
func frameReplies(t *testing.T, items <-chan rotItem, frames int) (answers [][]int, events []bidi.RotationEvent, final error) {
	t.Helper()
	answers = make([][]int, frames)
	for it := range items {
		switch {
		case it.ev != nil:
			events = append(events, *it.ev)
		case it.err != nil:
			final = it.err
		case it.end == 0:
			f := binary.BigEndian.Uint32(it.msg.Data)
			if int(f) >= frames || !bytes.Equal(it.msg.Data, audioFrame(f)) {
				t.Fatalf("reply %d bytes, not a frame sent", len(it.msg.Data))
			}
			answers[f] = append(answers[f], it.gen)
		}
	}
	return answers, events, final
}

// The stream that is current when Finish ends the input may fail while it
// finishes too (a reset while its model still owes answers): with replay
// on it is replaced as a stream rotated away from would be
// (RotationOverlapFault), the successor is sent the replay window and
// finished in turn, and Finish and Recv end cleanly with every frame
// answered.
func TestRotationFinishRecoversCurrentStream(t *testing.T) {
	synctest.Test(t, rotationFinishRecoversCurrentStream)
}

func rotationFinishRecoversCurrentStream(t *testing.T) {
	var first atomic.Pointer[biditest.Stream]
	srv, dial := newMemServer(t, biditest.HandlerFunc(func(st *biditest.Stream) {
		isFirst := first.CompareAndSwap(nil, st) // before accepting: see above
		if st.Accept() != nil {
			return
		}
		if isFirst {
			// Stream 1 reads its frames and answers none; when its
			// input ends (the call's Finish), it fails.
			for {
				if _, err := st.Recv(); err != nil {
					break
				}
			}
			st.Reset()
			return
		}
		for {
			m, err := st.Recv()
			if err != nil {
				return
			}
			if st.Send(m) != nil {
				return
			}
		}
	}))
	ctx := testCtx(t)
	r := &bidi.Rotation{After: -1, ReplayWindow: time.Minute, FinishQuiet: 50 * time.Millisecond}
	start, items := receiveAll(r, 1<<10)
	rs, err := srv.Client(dial).OpenRotating(ctx, &bidi.OpenInput{EndpointName: "call", AwaitResponse: true}, r)
	if err != nil {
		t.Fatalf("OpenRotating: %v", err)
	}
	defer rs.Close()
	start(ctx, rs)
	const frames = 10
	for i := range frames {
		if err := rs.Send(ctx, bidi.Binary(audioFrame(uint32(i)))); err != nil {
			t.Fatalf("Send %d: %v", i, err)
		}
	}
	finished := make(chan error, 1)
	go func() { finished <- rs.Finish(ctx, 50*time.Millisecond) }()
	answers, events, final := frameReplies(t, items, frames)
	if err := <-finished; err != nil || final != io.EOF {
		t.Fatalf("Finish: %v, Recv ended with %v; want nil and io.EOF (events %+v)", err, final, events)
	}
	if len(events) != 1 || events[0].Reason != bidi.RotationOverlapFault || events[0].From != 1 || events[0].To != 2 ||
		events[0].Err == nil || events[0].ReplayFrom != 0 || events[0].Replayed != frames {
		t.Fatalf("events %+v, want one overlap fault 1 -> 2 replaying all %d frames", events, frames)
	}
	for f, gens := range answers {
		if !slices.Equal(gens, []int{2}) {
			t.Errorf("frame %d answered by streams %v, want [2]", f, gens)
		}
	}
}
