package bridge_test

import (
	"bytes"
	"errors"
	"io"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sagemaker-bidi/sagemaker-bidi/bidi"
	"github.com/sagemaker-bidi/sagemaker-bidi/examples/gateway/bridge"
)

// These tests put a frame-level container behind the gateway, to check
// the mapping frame by frame.

// Every client part becomes exactly one masked frame: the first of a
// message text (UTF8) or binary (BINARY), the others continuation frames,
// FIN set on the COMPLETE part; the payload is the part's bytes, without
// the padding of its P header. The end frame becomes a close frame with
// 1000 after the last data frame.
func TestUpstreamOnePartPerFrame(t *testing.T) {
	rc := newRawContainer(t)
	g := startGateway(t, rc.url)
	// Parts of at most 4 bytes; the default padding gives every part a P
	// header.
	c := g.client(t, func(o *bidi.Options) { o.MaxPartSize = 4 })
	sess := open(t, c, bidi.OpenInput{})
	peer := rc.accept(t)
	ctx := testContext(t)

	send := func(p bidi.Part) {
		t.Helper()
		if err := sess.SendPart(ctx, p); err != nil {
			t.Fatal(err)
		}
	}
	send(bidi.Part{Data: []byte("ab"), Type: bidi.DataTypeUTF8})
	send(bidi.Part{Data: []byte("cd"), Type: bidi.DataTypeUTF8})
	send(bidi.Part{Data: []byte("ef"), Type: bidi.DataTypeUTF8, Complete: true})
	if err := sess.Send(ctx, bidi.Binary([]byte("0123456789"))); err != nil { // split in 4+4+2
		t.Fatal(err)
	}
	sess.Send(ctx, bidi.Text(""))
	sess.Send(ctx, bidi.Binary([]byte{0, 0xff, 0x80}))
	sess.Send(ctx, bidi.Text("héllo")) // 6 bytes, cut by bytes: 4+2
	if err := sess.CloseSend(); err != nil {
		t.Fatal(err)
	}

	want := []rawFrame{
		{fin: false, op: opText, payload: []byte("ab")},
		{fin: false, op: opCont, payload: []byte("cd")},
		{fin: true, op: opCont, payload: []byte("ef")},
		{fin: false, op: opBinary, payload: []byte("0123")},
		{fin: false, op: opCont, payload: []byte("4567")},
		{fin: true, op: opCont, payload: []byte("89")},
		{fin: true, op: opText, payload: []byte{}},
		{fin: true, op: opBinary, payload: []byte{0, 0xff, 0x80}},
		{fin: false, op: opText, payload: []byte("h\xc3\xa9l")},
		{fin: true, op: opCont, payload: []byte("lo")},
	}
	for i, w := range want {
		f := peer.readData()
		if f.fin != w.fin || f.op != w.op || !bytes.Equal(f.payload, w.payload) || !f.masked {
			t.Fatalf("frame %d = %v, want %v masked", i, f, w)
		}
	}
	f := peer.readData()
	if f.op != opClose || !bytes.Equal(f.payload, []byte{0x03, 0xe8}) || !f.masked {
		t.Fatalf("after the end frame: %v, want close 1000 without reason", f)
	}
	peer.writeClose(1000, "")
	expectEOF(t, sess)
	// The gateway then drops the TCP connection.
	if f, err := peer.read(); err != io.EOF {
		t.Fatalf("after the close handshake: %v, %v; want EOF", f, err)
	}
}

// Every container frame becomes exactly one part: text → UTF8, binary →
// BINARY, a fragmented message → PARTIAL parts ended by a COMPLETE one,
// empty frames included; pings between fragments are answered with pongs
// and not forwarded.
func TestDownstreamOneFramePerPart(t *testing.T) {
	rc := newRawContainer(t)
	g := startGateway(t, rc.url)
	sess := open(t, g.client(t), bidi.OpenInput{})
	peer := rc.accept(t)

	peer.write(false, opText, []byte("a"))
	peer.write(true, opPing, []byte("ping-1"))
	peer.write(false, opCont, []byte("b"))
	peer.write(true, opPong, []byte("unsolicited"))
	peer.write(true, opCont, []byte("c"))
	peer.write(true, opBinary, []byte("xyz"))
	peer.write(true, opText, nil)
	peer.write(false, opBinary, []byte{1})
	peer.write(true, opCont, nil)
	big := bytes.Repeat([]byte("0123456789abcdef"), 5000) // 80000 bytes: a 64-bit length
	peer.write(true, opBinary, big)

	got := recvParts(t, sess, 8)
	want := []bidi.Part{
		{Data: []byte("a"), Type: bidi.DataTypeUTF8},
		{Data: []byte("b"), Type: bidi.DataTypeUTF8},
		{Data: []byte("c"), Type: bidi.DataTypeUTF8, Complete: true},
		{Data: []byte("xyz"), Type: bidi.DataTypeBinary, Complete: true},
		{Data: []byte{}, Type: bidi.DataTypeUTF8, Complete: true},
		{Data: []byte{1}, Type: bidi.DataTypeBinary},
		{Data: []byte{}, Type: bidi.DataTypeBinary, Complete: true},
		{Data: big, Type: bidi.DataTypeBinary, Complete: true},
	}
	if !equalParts(got, want) {
		t.Fatalf("parts = %s", describeSizes(got))
	}
	if f := peer.mustRead(); f.op != opPong || string(f.payload) != "ping-1" || !f.masked {
		t.Fatalf("answer to the ping = %v, want a pong with its payload", f)
	}
}

// After the client's end frame, the container may still send until it
// answers the close frame: those frames reach the client before the clean
// end of the stream.
func TestEndFrameDrainsContainer(t *testing.T) {
	rc := newRawContainer(t)
	g := startGateway(t, rc.url)
	sess := open(t, g.client(t), bidi.OpenInput{})
	peer := rc.accept(t)
	ctx := testContext(t)
	sess.Send(ctx, bidi.Text("question"))
	sess.CloseSend()

	if f := peer.readData(); f.op != opText || string(f.payload) != "question" {
		t.Fatalf("first frame = %v", f)
	}
	if f := peer.readData(); f.op != opClose || f.closeCode() != 1000 {
		t.Fatalf("second frame = %v, want close 1000", f)
	}
	peer.write(true, opText, []byte("last words"))
	peer.writeClose(1000, "")
	if m, err := sess.Recv(ctx); err != nil || string(m.Data) != "last words" {
		t.Fatalf("Recv = %q, %v", m.Data, err)
	}
	expectEOF(t, sess)
}

// A container that does not answer the close frame is dropped after
// CloseTimeout; the client, which ended its side, still gets a clean end.
func TestCloseHandshakeTimeout(t *testing.T) {
	rc := newRawContainer(t)
	g := startGateway(t, rc.url, func(c *bridge.Config) { c.CloseTimeout = 100 * time.Millisecond })
	sess := open(t, g.client(t), bidi.OpenInput{})
	peer := rc.accept(t)
	sess.CloseSend()
	if f := peer.readData(); f.op != opClose {
		t.Fatalf("frame = %v, want close", f)
	}
	start := time.Now()
	expectEOF(t, sess)
	if d := time.Since(start); d > 2*time.Second {
		t.Errorf("clean end after %v", d)
	}
	if _, err := peer.read(); err != io.EOF {
		t.Fatalf("container read after the timeout: %v, want EOF", err)
	}
}

// A client that goes away gets its container WebSocket closed with 1001.
func TestClientGoneClosesWebSocket(t *testing.T) {
	rc := newRawContainer(t)
	g := startGateway(t, rc.url)
	sess := open(t, g.client(t), bidi.OpenInput{})
	peer := rc.accept(t)
	ctx := testContext(t)
	sess.Send(ctx, bidi.Text("hello"))
	if f := peer.readData(); string(f.payload) != "hello" {
		t.Fatalf("frame = %v", f)
	}
	sess.Close() // resets the stream, no end frame
	f := peer.readData()
	if f.op != opClose || f.closeCode() != 1001 || string(f.payload[2:]) != "client went away" {
		t.Fatalf("frame = %v, want close 1001 \"client went away\"", f)
	}
	peer.writeClose(1001, "")
	waitFor(t, "the session to end", func() bool { return g.Handler().ActiveSessions() == 0 })
}

// Whatever the container's close code and reason, the client gets them in
// a ModelStreamError, and the container gets its code echoed.
func TestContainerCloseCodes(t *testing.T) {
	rc := newRawContainer(t)
	g := startGateway(t, rc.url)
	c := g.client(t)
	for _, tc := range []struct {
		payload  []byte
		wantCode string
		wantMsg  string
		echo     []byte
	}{
		{[]byte{0x03, 0xe8}, "1000", "Model container closed the WebSocket connection (code 1000)", []byte{0x03, 0xe8}},
		{append([]byte{0x03, 0xf3}, "model crashed: \"oom\"\n"...), "1011",
			`Model container closed the WebSocket connection (code 1011, reason "model crashed: \"oom\"\n")`, []byte{0x03, 0xf3}},
		{append([]byte{0x0f, 0xa1}, "héllo"...), "4001", `Model container closed the WebSocket connection (code 4001, reason "héllo")`, []byte{0x0f, 0xa1}},
		{nil, "1005", "Model container closed the WebSocket connection (code 1005)", []byte{}},
	} {
		sess := open(t, c, bidi.OpenInput{})
		peer := rc.accept(t)
		peer.write(true, opText, []byte("before"))
		peer.write(true, opClose, tc.payload)
		if m, err := sess.Recv(testContext(t)); err != nil || string(m.Data) != "before" {
			t.Fatalf("Recv = %q, %v", m.Data, err)
		}
		mse := expectStreamError(t, sess)
		if mse.ErrorCode_ != tc.wantCode || mse.Message != tc.wantMsg {
			t.Errorf("close %x: ModelStreamError = %q %q, want %q %q", tc.payload, mse.ErrorCode_, mse.Message, tc.wantCode, tc.wantMsg)
		}
		if f := peer.readData(); f.op != opClose || !bytes.Equal(f.payload, tc.echo) {
			t.Errorf("close %x: answer %v, want close %x", tc.payload, f, tc.echo)
		}
	}
	// The gateway keeps nothing of the streams it served.
	waitFor(t, "the streams to be forgotten", func() bool { return len(g.Server().Streams()) == 0 })
}

// A container that breaks the WebSocket protocol (or sends bytes that are
// not frames) gets a close frame with 1002, or 1009 for a frame over the
// limit, and the client a ModelStreamError with that code.
func TestContainerProtocolErrors(t *testing.T) {
	rc := newRawContainer(t)
	g := startGateway(t, rc.url, func(c *bridge.Config) { c.MaxFrameSize = 1024 })
	c := g.client(t)
	masked := []byte{0x81, 0x82, 1, 2, 3, 4, 'h' ^ 1, 'i' ^ 2}
	for _, tc := range []struct {
		name     string
		bytes    []byte
		wantCode string
		wantMsg  string
	}{
		{"reserved opcode", frameBytes(true, 0x3, []byte("x")), "1002", "reserved opcode 0x3"},
		{"reserved bits", []byte{0xC1, 0x01, 'x'}, "1002", "reserved bits 100 set"},
		{"masked frame", masked, "1002", "masked frame from the server"},
		{"continuation first", frameBytes(true, opCont, []byte("x")), "1002", "continuation frame outside a fragmented message"},
		{"message inside a message", append(frameBytes(false, opText, []byte("a")), frameBytes(true, opBinary, []byte("b"))...), "1002", "binary frame inside a fragmented message"},
		{"fragmented ping", frameBytes(false, opPing, nil), "1002", "fragmented ping frame"},
		{"long ping", frameBytes(true, opPing, make([]byte, 126)), "1002", "ping frame of 126 bytes"},
		{"one-byte close", frameBytes(true, opClose, []byte{3}), "1002", "close frame with a one-byte payload"},
		// Close codes RFC 6455 forbids on the wire are never echoed, and a
		// container that sends 1006 broke the protocol: it did not drop
		// the connection.
		{"close code 0", frameBytes(true, opClose, []byte{0, 0}), "1002", "close frame with code 0, which must not be sent"},
		{"close code 999", frameBytes(true, opClose, []byte{0x03, 0xe7}), "1002", "code 999, which must not be sent"},
		{"close code 1006", frameBytes(true, opClose, []byte{0x03, 0xee}), "1002", "code 1006, which must not be sent"},
		{"close code 1015", frameBytes(true, opClose, []byte{0x03, 0xf7}), "1002", "code 1015, which must not be sent"},
		{"close code 2000", frameBytes(true, opClose, []byte{0x07, 0xd0}), "1002", "code 2000, which must not be sent"},
		{"close code 5000", frameBytes(true, opClose, []byte{0x13, 0x88}), "1002", "code 5000, which must not be sent"},
		{"close code 65535", frameBytes(true, opClose, []byte{0xff, 0xff}), "1002", "code 65535, which must not be sent"},
		{"close reason not UTF-8", frameBytes(true, opClose, []byte{0x03, 0xe8, 0xc3, 0x28}), "1002", "reason that is not valid UTF-8"},
		{"HTTP instead of frames", []byte("HTTP/1.1 200 OK\r\n\r\n"), "1002", "reserved bits"},
		{"frame over the limit", frameBytes(true, opBinary, make([]byte, 2000)), "1009", "a frame of 2000 bytes, over the gateway's limit of 1024"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sess := open(t, c, bidi.OpenInput{})
			peer := rc.accept(t)
			peer.writeRaw(tc.bytes)
			mse := expectStreamError(t, sess)
			if mse.ErrorCode_ != tc.wantCode || !strings.Contains(mse.Message, tc.wantMsg) || !strings.HasSuffix(mse.Message, "(code "+tc.wantCode+")") {
				t.Errorf("ModelStreamError = %q %q, want %q with %q", mse.ErrorCode_, mse.Message, tc.wantCode, tc.wantMsg)
			}
			f := peer.readData()
			if f.op != opClose || f.closeCode() != atoi(tc.wantCode) {
				t.Errorf("container got %v, want close %s", f, tc.wantCode)
			}
		})
	}
}

// A container that drops the connection: 1006.
func TestContainerDropsTCP(t *testing.T) {
	rc := newRawContainer(t)
	g := startGateway(t, rc.url)
	sess := open(t, g.client(t), bidi.OpenInput{})
	peer := rc.accept(t)
	peer.write(false, opBinary, []byte("half a message"))
	peer.c.Close()
	if p := recvParts(t, sess, 1); string(p[0].Data) != "half a message" || p[0].Complete {
		t.Fatalf("part = %s", describe(p))
	}
	mse := expectStreamError(t, sess)
	if mse.ErrorCode_ != "1006" {
		t.Fatalf("ModelStreamError = %+v", *mse)
	}
}

// The gateway pings every PingInterval; pongs keep the session alive; after
// MaxMissedPongs intervals without one, the container gets a close frame
// 1001 "ping timeout" and the client a ModelStreamError.
func TestPingFrames(t *testing.T) {
	rc := newRawContainer(t)
	g := startGateway(t, rc.url, func(c *bridge.Config) {
		c.PingInterval = 20 * time.Millisecond
		c.MaxMissedPongs = 3
		c.CloseTimeout = 200 * time.Millisecond
	})
	sess := open(t, g.client(t), bidi.OpenInput{})
	peer := rc.accept(t)
	var payloads [][]byte
	for range 6 { // answer six pings, over about 120 ms
		f := peer.mustRead()
		if f.op != opPing || !f.masked || len(f.payload) > 125 {
			t.Fatalf("frame = %v, want a ping", f)
		}
		payloads = append(payloads, f.payload)
		peer.write(true, opPong, f.payload)
	}
	if bytes.Equal(payloads[0], payloads[1]) {
		t.Errorf("pings carry the same payload %x", payloads[0])
	}
	// Stop answering: three more pings, then the close frame.
	var pings int
	for {
		f := peer.mustRead()
		if f.op == opPing {
			pings++
			continue
		}
		if f.op != opClose || f.closeCode() != 1001 || string(f.payload[2:]) != "ping timeout" {
			t.Fatalf("frame = %v, want close 1001 \"ping timeout\"", f)
		}
		break
	}
	// Three intervals without a pong: three pings, or four when the
	// gateway sent the first of them before the last pong reached it (a
	// pong late by more than the 20 ms interval, on a loaded machine).
	if pings != 3 && pings != 4 {
		t.Errorf("%d unanswered pings before the close, want 3 (4 if the last pong was late)", pings)
	}
	peer.writeClose(1001, "")
	mse := expectStreamError(t, sess)
	if mse.ErrorCode_ != "1006" || !strings.Contains(mse.Message, "did not answer 3 WebSocket pings") {
		t.Fatalf("ModelStreamError = %+v", *mse)
	}
}

// A client that reads slowly does not make the container miss pongs: the
// gateway does not count intervals during which it waits for the client
// (the pongs are then queued behind data it cannot read yet).
func TestSlowClientIsNotAPingTimeout(t *testing.T) {
	t.Parallel() // mostly waiting: the client's slow start
	rc := newRawContainer(t)
	g := startGateway(t, rc.url, func(c *bridge.Config) {
		c.PingInterval = 25 * time.Millisecond
		c.MaxMissedPongs = 4
	})
	sess := open(t, g.client(t), bidi.OpenInput{})
	peer := rc.accept(t)
	// The container answers pings and the close frame in the background...
	readerDone := peer.answerInBackground(true)
	// ... while it sends more than the client's HTTP/2 window (1 MiB) and
	// read-ahead queue (1 MiB) hold, which the client does not read for 12
	// ping intervals.
	const n = 80
	chunk := bytes.Repeat([]byte("x"), 60<<10)
	go func() {
		for range n {
			if _, err := peer.c.Write(frameBytes(true, opBinary, chunk)); err != nil {
				return
			}
		}
	}()
	time.Sleep(300 * time.Millisecond)
	ctx := testContext(t)
	for i := range n {
		m, err := sess.Recv(ctx)
		if err != nil {
			t.Fatalf("Recv %d after a slow start: %v", i, err)
		}
		if len(m.Data) != len(chunk) {
			t.Fatalf("message of %d bytes", len(m.Data))
		}
	}
	sess.CloseSend()
	expectEOF(t, sess) // a ping timeout would end the stream with a ModelStreamError
	if err := <-readerDone; err != nil {
		t.Fatalf("container: %v", err)
	}
	if strings.Contains(g.logs.String(), "missed pongs") {
		t.Error("the gateway counted missed pongs while the client was slow")
	}
}

// A container that keeps sending is not given up for pongs it has not
// answered while the gateway forwards its data, even if the reader is not
// waiting for the client at the ticks (a client that keeps up); once it
// falls silent, the missed pongs count. Before, only a reader caught
// waiting at a tick kept an interval from counting, and a backlog read
// in bursts between deliveries could end a live session (found under two
// CPU hogs in TestSlowClientIsNotAPingTimeout: "did not answer 4
// WebSocket pings" while it read the slow client's backlog).
func TestStreamingContainerIsNotAPingTimeout(t *testing.T) {
	t.Parallel() // mostly waiting: a second of lockstep frames, then eight ping intervals
	rc := newRawContainer(t)
	g := startGateway(t, rc.url, func(c *bridge.Config) {
		// 8 intervals of 50 ms: a turn of the lockstep below (the
		// client's Recv, the container's write, the gateway's read) must
		// not stall that long, which two CPU hogs beside the suite made
		// a turn do against 5 of 20 ms.
		c.PingInterval = 50 * time.Millisecond
		c.MaxMissedPongs = 8
		c.CloseTimeout = 200 * time.Millisecond
	})
	sess := open(t, g.client(t), bidi.OpenInput{})
	peer := rc.accept(t)
	// The container never answers a ping; it answers the close frame.
	readerDone := peer.answerInBackground(false)
	// It sends a frame each time the client has the last one, for 20
	// ping intervals, then falls silent: between frames the gateway's
	// reader waits for the container, not for the client, so at the ticks
	// it is mostly not delivering. sent is written before done is closed.
	var sent int
	took := make(chan struct{}, 1)  // the client has the last frame
	recvOver := make(chan struct{}) // the client's Recv ended
	stopRecv := sync.OnceFunc(func() { close(recvOver) })
	defer stopRecv()
	done := make(chan struct{})
	go func() {
		defer close(done)
		frame := frameBytes(true, opBinary, bytes.Repeat([]byte("a"), 256))
		for start := time.Now(); time.Since(start) < time.Second; {
			if _, err := peer.c.Write(frame); err != nil {
				return
			}
			sent++
			select {
			case <-took:
			case <-recvOver:
				return
			}
		}
	}()
	ctx := testContext(t)
	received := 0
	for {
		m, err := sess.Recv(ctx)
		if err != nil {
			stopRecv()
			var mse *bidi.ModelStreamError
			if !errors.As(err, &mse) || mse.ErrorCode_ != "1006" || !strings.Contains(mse.Message, "did not answer 8 WebSocket pings") {
				t.Fatalf("Recv after %d messages = %v, want the ping timeout's ModelStreamError", received, err)
			}
			select {
			case <-done:
			default:
				t.Fatalf("a ping timeout after %d messages, while the container was still sending", received)
			}
			break
		}
		if len(m.Data) != 256 {
			t.Fatalf("message %d of %d bytes", received, len(m.Data))
		}
		received++
		took <- struct{}{}
	}
	if received != sent {
		t.Fatalf("the client got %d of the %d messages the container sent", received, sent)
	}
	if err := <-readerDone; err != nil {
		t.Fatalf("container: %v", err)
	}
}

func atoi(s string) int {
	n := 0
	for _, c := range s {
		n = n*10 + int(c-'0')
	}
	return n
}
