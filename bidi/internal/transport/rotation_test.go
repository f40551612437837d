package transport

import (
	"bytes"
	"fmt"
	"testing"

	"golang.org/x/net/http2"
)

// TestStreamRingOrder: the ring is a FIFO across growth and wrap-around,
// and holds no stream once drained.
func TestStreamRingOrder(t *testing.T) {
	var r streamRing
	streams := make([]*Stream, 1000)
	for i := range streams {
		streams[i] = &Stream{id: uint32(2*i + 1)}
	}
	next, want := 0, 0 // next to push, next expected at the front
	check := func() {
		t.Helper()
		if r.len() != next-want {
			t.Fatalf("len %d, want %d", r.len(), next-want)
		}
		if r.len() > 0 && r.front() != streams[want%len(streams)] {
			t.Fatalf("front is stream %d, want %d", r.front().id, streams[want%len(streams)].id)
		}
	}
	// Push in bursts of 7 and pop 5, so that the front wraps around
	// while the ring grows, then drain.
	for next < 700 {
		for range 7 {
			r.push(streams[next%len(streams)])
			next++
			check()
		}
		for range 5 {
			r.pop()
			want++
			check()
		}
	}
	for r.len() > 0 {
		r.pop()
		want++
		check()
	}
	for i, s := range r.buf {
		if s != nil {
			t.Errorf("slot %d still holds stream %d", i, s.id)
		}
	}
}

// TestRotationHoldsEachStreamOnce: while the connection window is used
// up, streams whose bodies become ready again and again stay in the
// writer's rotation once each (the writer's work per window update does
// not grow with how often they were ready), and once the window comes
// back every byte goes out, in order.
func TestRotationHoldsEachStreamOnce(t *testing.T) {
	const streams, writes, chunk = 8, 50, 6
	blocked, release := make(chan struct{}), make(chan struct{})
	got := make(chan map[uint32][]byte, 1)
	srv := newTestServer(t, serverOpts{}, func(sc *serverConn) {
		sc.handshake(http2.Setting{ID: http2.SettingInitialWindowSize, Val: 1 << 20})
		for range streams {
			h := sc.headers()
			sc.writeHeaders(h.StreamID, 200, false)
		}
		bodies := map[uint32][]byte{}
		n := 0
		for n < 65535 {
			f := sc.expect("DATA", func(f frame) bool { return f.Type == http2.FrameData })
			bodies[f.StreamID] = append(bodies[f.StreamID], f.Data...)
			n += len(f.Data)
		}
		close(blocked)
		<-release
		sc.writeWindowUpdate(0, 1<<20)
		for n < 65535+streams*writes*chunk {
			f := sc.expect("DATA", func(f frame) bool { return f.Type == http2.FrameData })
			bodies[f.StreamID] = append(bodies[f.StreamID], f.Data...)
			n += len(f.Data)
		}
		got <- bodies
		sc.drain()
	})
	tr := newTransport(t, testConfig(nil))
	ctx := testCtx(t)
	var ids []uint32
	var bodies []*testBody
	for range streams {
		b := newBody(1 << 20)
		st, err := tr.NewStream(ctx, srv.url, nil, b)
		if err != nil {
			t.Fatal(err)
		}
		if _, _, err := st.Response(ctx); err != nil {
			t.Fatal(err)
		}
		ids, bodies = append(ids, st.ID()), append(bodies, b)
	}
	if err := bodies[0].write(ctx, make([]byte, 65535)); err != nil {
		t.Fatal(err)
	}
	<-blocked
	want := map[uint32][]byte{ids[0]: make([]byte, 65535)}
	for k := range writes {
		for i, b := range bodies {
			p := []byte(fmt.Sprintf("%02d/%03d", i, k))
			if err := b.write(ctx, p); err != nil {
				t.Fatal(err)
			}
			want[ids[i]] = append(want[ids[i]], p...)
		}
	}
	cc := onlyConn(t, tr, srv)
	waitFor(t, "the writer to take every ready stream", func() bool {
		cc.mu.Lock()
		defer cc.mu.Unlock()
		return len(cc.ready) == 0 && cc.rotationLen >= streams && cc.connBlocked
	})
	cc.mu.Lock()
	n := cc.rotationLen
	cc.mu.Unlock()
	if n != streams {
		t.Errorf("the rotation holds %d entries for %d streams", n, streams)
	}
	close(release)
	bodiesGot := <-got
	for _, id := range ids {
		if !bytes.Equal(bodiesGot[id], want[id]) {
			t.Errorf("stream %d: server got %d bytes, want %d in order", id, len(bodiesGot[id]), len(want[id]))
		}
	}
}
