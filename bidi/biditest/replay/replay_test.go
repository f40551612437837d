package replay_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/sagemaker-bidi/sagemaker-bidi/bidi"
	"github.com/sagemaker-bidi/sagemaker-bidi/bidi/biditest"
	"github.com/sagemaker-bidi/sagemaker-bidi/bidi/biditest/replay"
	"github.com/sagemaker-bidi/sagemaker-bidi/bidi/cassette"
	"github.com/sagemaker-bidi/sagemaker-bidi/internal/memnet"
)

const replayTimeout = 10 * time.Second

// scriptModel answers each text message with its upper case in three
// parts (PARTIAL, PARTIAL, COMPLETE), echoes binary messages whole, and
// fails the stream with ModelStreamError 1011 on the text "fail".
func scriptModel() biditest.Handler {
	return biditest.HandlerFunc(func(st *biditest.Stream) {
		for {
			m, err := st.Recv()
			if err != nil {
				return
			}
			if m.Type == bidi.DataTypeBinary {
				if st.Send(m) != nil {
					return
				}
				continue
			}
			if string(m.Data) == "fail" {
				st.SendException("ModelStreamError", []byte(`{"Message":"Model container closed the WebSocket connection (code 1011, reason \"boom\")","ErrorCode":"1011"}`))
				return
			}
			up := []byte(strings.ToUpper(string(m.Data)))
			n := len(up) / 3
			for i, p := range [][]byte{up[:n], up[n : 2*n], up[2*n:]} {
				if st.SendPart(bidi.Part{Data: p, Type: bidi.DataTypeUTF8, Complete: i == 2}) != nil {
					return
				}
			}
		}
	})
}

// syncBuffer is a bytes.Buffer safe for the recorder's goroutine and the
// test's.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *syncBuffer) Bytes() []byte {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]byte(nil), b.b.Bytes()...)
}

// recordingServer starts a server running h whose streams are recorded,
// each to its own buffer, returned in order.
func recordingServer(t *testing.T, h biditest.Handler) (*biditest.Server, func() [][]byte) {
	t.Helper()
	var mu sync.Mutex
	var bufs []*syncBuffer
	srv := biditest.NewUnstartedServer(h)
	srv.Record = func(*biditest.Stream) cassette.Sink {
		b := new(syncBuffer)
		w, err := cassette.NewWriter(b, &cassette.WriterOptions{Recorder: "biditest"})
		if err != nil {
			t.Error(err)
			return nil
		}
		mu.Lock()
		bufs = append(bufs, b)
		mu.Unlock()
		return w
	}
	srv.Start()
	t.Cleanup(srv.Close)
	return srv, func() [][]byte {
		srv.Close() // every handler returned, every sink closed
		mu.Lock()
		defer mu.Unlock()
		out := make([][]byte, len(bufs))
		for i, b := range bufs {
			out[i] = b.Bytes()
		}
		return out
	}
}

// outcome is what a client got from a session.
type outcome struct {
	msgs []bidi.Message
	end  error
}

// converse sends msgs, then ends its input, and reads every reply.
func converse(t *testing.T, client *bidi.Client, msgs []bidi.Message) outcome {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), replayTimeout)
	defer cancel()
	sess, err := client.Open(ctx, &bidi.OpenInput{EndpointName: "replayed"})
	if err != nil {
		t.Fatal(err)
	}
	defer sess.Close()
	go func() {
		for _, m := range msgs {
			if sess.Send(ctx, m) != nil {
				return
			}
		}
		sess.CloseSend()
	}()
	var o outcome
	for {
		m, err := sess.Recv(ctx)
		if err != nil {
			o.end = err
			return o
		}
		o.msgs = append(o.msgs, m)
	}
}

func loadCassette(t *testing.T, b []byte) *cassette.Cassette {
	t.Helper()
	c, err := cassette.Load(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func sameOutcome(t *testing.T, got, want outcome) {
	t.Helper()
	if len(got.msgs) != len(want.msgs) {
		t.Fatalf("replay gave %d messages, recording %d", len(got.msgs), len(want.msgs))
	}
	for i := range got.msgs {
		if got.msgs[i].Type != want.msgs[i].Type || !bytes.Equal(got.msgs[i].Data, want.msgs[i].Data) {
			t.Errorf("message %d: replay %v %q, recording %v %q", i, got.msgs[i].Type, got.msgs[i].Data, want.msgs[i].Type, want.msgs[i].Data)
		}
	}
	if (got.end == io.EOF) != (want.end == io.EOF) || got.end != io.EOF && got.end.Error() != want.end.Error() {
		t.Errorf("replay ended with %v, recording with %v", got.end, want.end)
	}
}

// A stream recorded by Server.Record replays byte for byte: fragmented
// text answers, a binary echo larger than a part, and the ModelStreamError
// that ended it.
func TestRecordThenReplay(t *testing.T) {
	big := bytes.Repeat([]byte{0, 1, 2, 0xff}, 40<<10) // 160 KiB: three parts
	msgs := []bidi.Message{bidi.Text("hello there"), bidi.Binary(big), bidi.Text("fail")}
	srv, cassettes := recordingServer(t, scriptModel())
	rec := converse(t, srv.Client(), msgs)
	var mse *bidi.ModelStreamError
	if !errors.As(rec.end, &mse) || mse.CloseCode() != 1011 || len(rec.msgs) != 2 {
		t.Fatalf("recording: %d messages, end %v", len(rec.msgs), rec.end)
	}
	cs := cassettes()
	if len(cs) != 1 {
		t.Fatalf("%d cassettes, want 1", len(cs))
	}
	c := loadCassette(t, cs[0])
	var kinds []string
	for _, e := range c.Events {
		kinds = append(kinds, string(e.Kind))
	}
	want := "open send response recv recv recv send send send recv send exception end"
	if got := strings.Join(kinds, " "); got != want {
		t.Errorf("events %q, want %q", got, want)
	}
	if end := c.Events[len(c.Events)-1]; end.Reason != cassette.EndException || end.CloseCode != 1011 {
		t.Errorf("end event %+v", end)
	}
	for _, e := range c.Events {
		if e.Kind == cassette.KindSend && e.Padding <= 0 {
			t.Errorf("send event without its padding length: %+v", e.Padding)
		}
	}

	rsrv, r := replay.NewServer(t, c, &replay.Options{TimeScale: -1})
	sameOutcome(t, converse(t, rsrv.Client(), msgs), rec)
	rsrv.Close()
	if err := r.Err(); err != nil || r.Streams() != 1 {
		t.Errorf("replayer: %d streams, %v", r.Streams(), err)
	}
}

// A clean end replays as a clean end, and the client's end of input is
// expected where it was recorded.
func TestReplayCleanEnd(t *testing.T) {
	msgs := []bidi.Message{bidi.Text("abc"), bidi.Text("defghi")}
	srv, cassettes := recordingServer(t, scriptModel())
	rec := converse(t, srv.Client(), msgs)
	if rec.end != io.EOF || len(rec.msgs) != 2 {
		t.Fatalf("recording: %d messages, end %v", len(rec.msgs), rec.end)
	}
	c := loadCassette(t, cassettes()[0])
	rsrv, r := replay.NewServer(t, c, &replay.Options{TimeScale: -1})
	sameOutcome(t, converse(t, rsrv.Client(), msgs), rec)
	rsrv.Close()
	if err := r.Err(); err != nil {
		t.Error(err)
	}
}

// handCassette is a cassette written by hand: one text message answered
// by two replies, first and second after it.
func handCassette(t *testing.T, first, second time.Duration) *cassette.Cassette {
	t.Helper()
	var b bytes.Buffer
	w, err := cassette.NewWriter(&b, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range []cassette.Event{
		{Kind: cassette.KindOpen, Endpoint: "replayed"},
		{Kind: cassette.KindResponse, Status: 200, Variant: "Blue", RequestID: "r-1"},
		{Kind: cassette.KindSend, T: time.Millisecond, Type: bidi.DataTypeUTF8, Complete: true, Size: 2, Data: []byte("hi"), Padding: 62},
		{Kind: cassette.KindRecv, T: time.Millisecond + first, Type: bidi.DataTypeUTF8, Complete: true, Size: 5, Data: []byte("first"), Padding: -1},
		{Kind: cassette.KindRecv, T: time.Millisecond + second, Type: bidi.DataTypeUTF8, Complete: true, Size: 6, Data: []byte("second"), Padding: -1},
		{Kind: cassette.KindSendEnd, T: 2*time.Millisecond + second},
		{Kind: cassette.KindEnd, T: 2*time.Millisecond + second, Reason: cassette.EndCompleted},
	} {
		if err := w.Write(&e); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return loadCassette(t, b.Bytes())
}

// A client that sends something else than the recording gets the
// mismatch error in strict mode, and passes in loose mode.
func TestReplayStrictAndLoose(t *testing.T) {
	c := handCassette(t, 0, 0)

	r := replay.New(c, &replay.Options{TimeScale: -1})
	srv := biditest.NewServer(r)
	got := converse(t, srv.Client(), []bidi.Message{bidi.Text("ho")})
	srv.Close()
	var se *bidi.ExceptionError
	if !errors.As(got.end, &se) || se.Code != replay.MismatchErrorCode {
		t.Errorf("strict replay of another message ended with %v, want a %s StreamError", got.end, replay.MismatchErrorCode)
	}
	var re *replay.Error
	if err := r.Err(); !errors.Is(err, replay.ErrMismatch) || !errors.As(err, &re) || re.Event != 2 {
		t.Errorf("Err() = %v, want a mismatch at event 2", err)
	} else if strings.Contains(err.Error(), "ho") {
		t.Errorf("the mismatch names the payload: %v", err)
	}

	r = replay.New(c, &replay.Options{Loose: true, TimeScale: -1})
	srv = biditest.NewServer(r)
	got = converse(t, srv.Client(), []bidi.Message{bidi.Binary([]byte("other bytes"))})
	srv.Close()
	if got.end != io.EOF || len(got.msgs) != 2 || string(got.msgs[1].Data) != "second" {
		t.Errorf("loose replay: %d messages, end %v", len(got.msgs), got.end)
	}
	if err := r.Err(); err != nil {
		t.Errorf("loose replay: %v", err)
	}

	// Loose still counts: two messages where one was recorded.
	r = replay.New(c, &replay.Options{Loose: true, TimeScale: -1})
	srv = biditest.NewServer(r)
	converse(t, srv.Client(), []bidi.Message{bidi.Text("a"), bidi.Text("b")})
	srv.Close()
	if err := r.Err(); !errors.Is(err, replay.ErrMismatch) {
		t.Errorf("loose replay of two messages for one: Err() = %v", err)
	}
}

// A test that stops reading before the recorded replies were delivered
// fails: the Replayer reports the replies left.
func TestReplayUnreadRepliesFail(t *testing.T) {
	c := handCassette(t, 0, time.Hour) // the second reply would come much later
	r := replay.New(c, nil)
	srv := biditest.NewServer(r)
	defer srv.Close()
	ctx, cancel := context.WithTimeout(context.Background(), replayTimeout)
	defer cancel()
	sess, err := srv.Client().Open(ctx, &bidi.OpenInput{EndpointName: "replayed"})
	if err != nil {
		t.Fatal(err)
	}
	if err := sess.Send(ctx, bidi.Text("hi")); err != nil {
		t.Fatal(err)
	}
	if _, err := sess.Recv(ctx); err != nil {
		t.Fatal(err)
	}
	sess.Close() // one reply unread
	srv.Close()  // waits for the handler
	var re *replay.Error
	if err := r.Err(); !errors.Is(err, replay.ErrUndelivered) || !errors.As(err, &re) || re.Event != 4 {
		t.Errorf("Err() = %v, want replies undelivered from event 4", err)
	}

	// NewReplayServer turns that into a test failure.
	ft := &fakeT{TB: t}
	rsrv, _ := replay.NewServer(ft, c, nil)
	sess, err = rsrv.Client().Open(ctx, &bidi.OpenInput{EndpointName: "replayed"})
	if err != nil {
		t.Fatal(err)
	}
	sess.Send(ctx, bidi.Text("hi"))
	sess.Recv(ctx)
	sess.Close()
	ft.runCleanups()
	if !ft.failed {
		t.Error("NewReplayServer did not fail a test that left a reply unread")
	}
}

// fakeT records failures and cleanups instead of acting on them.
type fakeT struct {
	testing.TB
	failed   bool
	cleanups []func()
}

func (f *fakeT) Helper()               {}
func (f *fakeT) Errorf(string, ...any) { f.failed = true }
func (f *fakeT) Cleanup(fn func())     { f.cleanups = append(f.cleanups, fn) }
func (f *fakeT) runCleanups() {
	for i := len(f.cleanups) - 1; i >= 0; i-- {
		f.cleanups[i]()
	}
}

// An HTTP error recorded as the response is answered again.
func TestReplayHTTPError(t *testing.T) {
	var b bytes.Buffer
	w, _ := cassette.NewWriter(&b, nil)
	w.Write(&cassette.Event{Kind: cassette.KindOpen})
	w.Write(&cassette.Event{Kind: cassette.KindResponse, Status: 424, ErrorType: "ModelError", RequestID: "x",
		Body: `{"Message":"Failed to establish WebSocket connection","OriginalStatusCode":503}`})
	w.Write(&cassette.Event{Kind: cassette.KindEnd, Reason: cassette.EndHTTPError})
	w.Close()
	srv, r := replay.NewServer(t, loadCassette(t, b.Bytes()), nil)
	got := converse(t, srv.Client(), nil)
	var me *bidi.ModelError
	if !errors.As(got.end, &me) || me.OriginalStatusCode != 503 {
		t.Errorf("replay of a 424 ended with %v", got.end)
	}
	srv.Close()
	if err := r.Err(); err != nil {
		t.Error(err)
	}
}

// At the recorded speed, each reply comes at its recorded time: as long
// after the stream's start as recorded, and no sooner after the client's
// message than recorded. On a testing/synctest clock, with the server
// and its client talking over memnet, exactly. handCassette records the
// message 1 ms after the start: a client that sends at once gets every
// reply 1 ms later after its message than recorded (the start rules); one
// that sends 500 ms after the start gets them as long after its message
// as recorded (the message rules).
func TestReplayTiming(t *testing.T) {
	const delay = 120 * time.Millisecond
	for _, late := range []time.Duration{0, 500 * time.Millisecond} {
		synctest.Test(t, func(t *testing.T) {
			r := replay.New(handCassette(t, delay/2, delay), nil)
			l := memnet.Listen()
			srv := biditest.NewUnstartedServer(r)
			srv.Listener = l
			srv.Start()
			defer srv.Close()
			ctx, cancel := context.WithTimeout(context.Background(), replayTimeout)
			defer cancel()
			sess, err := srv.Client(func(o *bidi.Options) { o.DialContext = l.DialContext }).Open(ctx, &bidi.OpenInput{EndpointName: "replayed", AwaitResponse: true})
			if err != nil {
				t.Fatal(err)
			}
			defer sess.Close()
			time.Sleep(late)
			sent := time.Now()
			if err := sess.Send(ctx, bidi.Text("hi")); err != nil {
				t.Fatal(err)
			}
			for _, recorded := range []time.Duration{delay / 2, delay} {
				if _, err := sess.Recv(ctx); err != nil {
					t.Fatal(err)
				}
				want := max(time.Millisecond+recorded-late, recorded)
				if got := time.Since(sent); got != want {
					t.Fatalf("sent %v after the start: a reply came %v after the message, want %v", late, got, want)
				}
			}
			sess.CloseSend()
			if _, err := sess.Recv(ctx); err != io.EOF {
				t.Fatalf("end: %v", err)
			}
			if err := r.Err(); err != nil {
				t.Error(err)
			}
		})
	}
}

// Server.Record records the length of the padding each client part
// carried: a bucket's worth by default, 0 (not unknown) for a part
// without P.
func TestRecordPadding(t *testing.T) {
	for _, tc := range []struct {
		name   string
		policy func(payloadLen int) int
		want   int // pad of the 5-byte part
	}{{"default", nil, 59}, {"none", func(int) int { return 0 }, 0}} {
		t.Run(tc.name, func(t *testing.T) {
			srv, cassettes := recordingServer(t, biditest.Echo())
			converse(t, srv.Client(func(o *bidi.Options) { o.Padding = tc.policy }), []bidi.Message{bidi.Text("hello")})
			c := loadCassette(t, cassettes()[0])
			var pads []int
			for _, e := range c.Events {
				if e.Kind == cassette.KindSend {
					pads = append(pads, e.Padding)
				}
			}
			if len(pads) != 1 || pads[0] != tc.want {
				t.Errorf("recorded pads %v, want [%d]", pads, tc.want)
			}
		})
	}
}
