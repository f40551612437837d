package model

import (
	"bytes"
	"testing"

	"github.com/coder/websocket"
)

func TestTextEcho(t *testing.T) {
	srv, _ := newServer(t, Options{})
	c := dial(t, srv, "/invocations-bidirectional-stream")
	ctx := testContext(t)
	for _, msg := range []string{"hello", "", "not {json", `{"no":"messages"}`, "héllo wörld €"} {
		if err := c.Write(ctx, websocket.MessageText, []byte(msg)); err != nil {
			t.Fatal(err)
		}
		typ, p, err := c.Read(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if typ != websocket.MessageText || string(p) != msg {
			t.Errorf("echo of %q = %v %q", msg, typ, p)
		}
	}
}

func TestTextEchoIsOneFrame(t *testing.T) {
	srv, _ := newServer(t, Options{})
	rc := dialRaw(t, srv, "/invocations-bidirectional-stream")
	rc.writeFrame(true, opText, []byte("hello"))
	fs := rc.readMessage()
	if len(fs) != 1 || fs[0].opcode != opText || string(fs[0].payload) != "hello" {
		t.Fatalf("frames = %v, want one FIN text frame", fs)
	}
}

// TestBinaryEchoFragmented reads the echo frame by frame: a binary frame
// with FIN=0, continuation frames, and a FIN=1 frame last.
func TestBinaryEchoFragmented(t *testing.T) {
	audio := make([]byte, 2500)
	for i := range audio {
		audio[i] = byte(i * 7)
	}
	for _, tc := range []struct {
		query string
		sizes []int // payload sizes of the frames
	}{
		{"", []int{1024, 1024, 452, 0}},
		{"?fragment=1000", []int{1000, 1000, 500, 0}},
		{"?mode=echo&fragment=2500", []int{2500, 0}},
	} {
		t.Run(tc.query, func(t *testing.T) {
			srv, _ := newServer(t, Options{})
			rc := dialRaw(t, srv, "/invocations-bidirectional-stream"+tc.query)
			rc.writeFrame(true, opBinary, audio)
			fs := rc.readMessage()
			if len(fs) != len(tc.sizes) {
				t.Fatalf("frames = %v, want %d frames", fs, len(tc.sizes))
			}
			for i, f := range fs {
				wantOp := byte(opContinuation)
				if i == 0 {
					wantOp = opBinary
				}
				if last := i == len(fs)-1; f.fin != last || f.opcode != wantOp || len(f.payload) != tc.sizes[i] {
					t.Errorf("frame %d = %v, want op=%#x fin=%v len=%d", i, f, wantOp, last, tc.sizes[i])
				}
			}
			if got := joinPayloads(fs); got != string(audio) {
				t.Errorf("reassembled echo differs from the audio sent")
			}
		})
	}
}

// TestFragmentedInput sends a message in three frames; the container reads
// it as one message and echoes it whole.
func TestFragmentedInput(t *testing.T) {
	srv, _ := newServer(t, Options{})
	rc := dialRaw(t, srv, "/invocations-bidirectional-stream")
	rc.writeFrame(false, opText, []byte("hel"))
	rc.writeFrame(false, opContinuation, []byte("lo "))
	rc.writeFrame(true, opContinuation, []byte("there"))
	fs := rc.readMessage()
	if len(fs) != 1 || fs[0].opcode != opText || string(fs[0].payload) != "hello there" {
		t.Fatalf("frames = %v, want one text frame \"hello there\"", fs)
	}
}

func TestFragmentText(t *testing.T) {
	srv, _ := newServer(t, Options{})
	rc := dialRaw(t, srv, "/?fragment_text=true&fragment=2")
	rc.writeFrame(true, opText, []byte("hello"))
	fs := rc.readMessage()
	var sizes []int
	for _, f := range fs {
		sizes = append(sizes, len(f.payload))
	}
	if fs[0].opcode != opText || joinPayloads(fs) != "hello" || len(fs) != 4 {
		t.Fatalf("frames = %v (sizes %v), want he|ll|o|(empty FIN) as text", fs, sizes)
	}
}

func TestBinaryEchoThroughLibrary(t *testing.T) {
	srv, _ := newServer(t, Options{})
	c := dial(t, srv, "/invocations-bidirectional-stream")
	ctx := testContext(t)
	audio := bytes.Repeat([]byte{0, 1, 2, 3, 250}, 1000)
	if err := c.Write(ctx, websocket.MessageBinary, audio); err != nil {
		t.Fatal(err)
	}
	typ, p, err := c.Read(ctx)
	if err != nil || typ != websocket.MessageBinary || !bytes.Equal(p, audio) {
		t.Fatalf("read = %v, %d bytes, %v", typ, len(p), err)
	}
}
