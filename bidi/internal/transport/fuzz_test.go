package transport

import (
	"bytes"
	"context"
	"errors"
	"io"
	"math"
	"net"
	"net/http"
	"net/url"
	"testing"
	"time"

	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"
)

// FuzzServerFrames feeds arbitrary bytes, as the frames a server sends
// after a valid SETTINGS, to a client connection carrying one stream
// (stream 1, with request body bytes ready). Whatever the bytes, the
// engine must not panic, must end the stream within a bound once the
// server has sent them and closed the connection, and must report a
// typed error (or a clean io.EOF).
func FuzzServerFrames(f *testing.F) {
	for _, seed := range fuzzSeeds() {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		client, server := net.Pipe()
		dialed := false
		cfg := Config{
			DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
				if dialed {
					return nil, errors.New("fuzz: one connection only")
				}
				dialed = true
				return client, nil
			},
			DialTimeout:  2 * time.Second,
			IdleTimeout:  -1,
			StreamWindow: 4096,
		}
		tr := New(cfg)
		defer tr.Close()

		srvDone := make(chan struct{})
		go fuzzServer(server, data, srvDone)
		defer func() {
			server.Close()
			<-srvDone
		}()

		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		body := newBody(1 << 10)
		body.buf = []byte("request body bytes")
		st, err := tr.NewStream(ctx, &url.URL{Scheme: "http", Host: "fuzz.test", Path: "/"}, http.Header{"X-Fuzz": {"1"}}, body)
		if err != nil {
			checkFuzzErr(t, "NewStream", err)
			return
		}
		if _, _, err := st.Response(ctx); err != nil {
			checkFuzzErr(t, "Response", err)
			return
		}
		buf := make([]byte, 1024)
		total := 0
		for {
			n, err := readWait(st, buf)
			total += n
			if total > 1<<20 {
				t.Fatalf("read %d bytes on a stream with a window of %d", total, cfg.StreamWindow)
			}
			if err == io.EOF {
				return
			}
			if err != nil {
				checkFuzzErr(t, "Read", err)
				return
			}
		}
	})
}

func checkFuzzErr(t *testing.T, op string, err error) {
	t.Helper()
	if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled) {
		t.Fatalf("%s: %v: the stream did not end after the server closed the connection", op, err)
	}
	if !typedErr(err) {
		t.Fatalf("%s: untyped error %T: %v", op, err, err)
	}
}

// fuzzServer reads the client preface, sends an empty SETTINGS, waits for
// the HEADERS of stream 1, sends data and closes the connection. A
// goroutine reads everything the client writes.
func fuzzServer(nc net.Conn, data []byte, done chan<- struct{}) {
	defer close(done)
	defer nc.Close()
	headers := make(chan struct{})
	go func() {
		defer nc.Close()
		preface := make([]byte, len(http2.ClientPreface))
		if _, err := io.ReadFull(nc, preface); err != nil {
			close(headers)
			return
		}
		fr := http2.NewFramer(nil, nc)
		seen := false
		for {
			f, err := fr.ReadFrame()
			if err != nil {
				if !seen {
					close(headers)
				}
				io.Copy(io.Discard, nc)
				return
			}
			if f.Header().Type == http2.FrameHeaders && !seen {
				seen = true
				close(headers)
			}
		}
	}()
	fr := http2.NewFramer(nc, nil)
	if fr.WriteSettings() != nil {
		return
	}
	select {
	case <-headers:
	case <-time.After(2 * time.Second):
		return
	}
	nc.Write(data)
}

// fuzzSeeds are server frame sequences for stream 1: well-formed
// exchanges and the abuses the tests cover.
func fuzzSeeds() [][]byte {
	var seeds [][]byte
	add := func(build func(fr *http2.Framer, hdr func(id uint32, end, endHeaders bool, kv ...string) []byte)) {
		var b, hb bytes.Buffer
		fr := http2.NewFramer(&b, nil)
		enc := hpack.NewEncoder(&hb)
		hdr := func(id uint32, end, endHeaders bool, kv ...string) []byte {
			hb.Reset()
			for i := 0; i+1 < len(kv); i += 2 {
				enc.WriteField(hpack.HeaderField{Name: kv[i], Value: kv[i+1]})
			}
			fr.WriteHeaders(http2.HeadersFrameParam{StreamID: id, BlockFragment: hb.Bytes(), EndStream: end, EndHeaders: endHeaders})
			return bytes.Clone(hb.Bytes())
		}
		build(fr, hdr)
		seeds = append(seeds, bytes.Clone(b.Bytes()))
	}
	add(func(fr *http2.Framer, hdr func(uint32, bool, bool, ...string) []byte) {
		hdr(1, false, true, ":status", "200", "content-type", "application/vnd.amazon.eventstream")
		fr.WriteData(1, false, []byte("hello "))
		fr.WriteData(1, true, []byte("world"))
	})
	add(func(fr *http2.Framer, hdr func(uint32, bool, bool, ...string) []byte) {
		hdr(1, false, true, ":status", "200")
		fr.WriteWindowUpdate(1, math.MaxInt32)
		fr.WriteWindowUpdate(1, math.MaxInt32)
		fr.WriteData(1, true, nil)
	})
	add(func(fr *http2.Framer, hdr func(uint32, bool, bool, ...string) []byte) {
		hdr(1, false, true, ":status", "200")
		fr.WriteWindowUpdate(0, math.MaxInt32)
	})
	add(func(fr *http2.Framer, hdr func(uint32, bool, bool, ...string) []byte) {
		fr.WriteRSTStream(1, http2.ErrCodeRefusedStream)
	})
	add(func(fr *http2.Framer, hdr func(uint32, bool, bool, ...string) []byte) {
		fr.WriteGoAway(0, http2.ErrCodeNo, []byte("bye"))
	})
	add(func(fr *http2.Framer, hdr func(uint32, bool, bool, ...string) []byte) {
		hdr(1, false, true, ":status", "200")
		fr.WriteGoAway(1, http2.ErrCodeEnhanceYourCalm, nil)
		fr.WriteData(1, false, []byte("after goaway"))
	})
	add(func(fr *http2.Framer, hdr func(uint32, bool, bool, ...string) []byte) {
		fr.WriteSettings(http2.Setting{ID: http2.SettingMaxFrameSize, Val: 0})
	})
	add(func(fr *http2.Framer, hdr func(uint32, bool, bool, ...string) []byte) {
		fr.WriteSettings(http2.Setting{ID: http2.SettingInitialWindowSize, Val: 1 << 31})
	})
	add(func(fr *http2.Framer, hdr func(uint32, bool, bool, ...string) []byte) {
		fr.WriteSettings(http2.Setting{ID: http2.SettingInitialWindowSize, Val: 0}, http2.Setting{ID: http2.SettingHeaderTableSize, Val: 0})
		hdr(1, false, true, ":status", "200")
		fr.WriteSettings(http2.Setting{ID: http2.SettingInitialWindowSize, Val: 1 << 30})
	})
	add(func(fr *http2.Framer, hdr func(uint32, bool, bool, ...string) []byte) {
		for i := range 20 {
			fr.WritePing(false, [8]byte{byte(i)})
		}
		fr.WriteSettings()
		fr.WritePing(true, [8]byte{})
	})
	add(func(fr *http2.Framer, hdr func(uint32, bool, bool, ...string) []byte) {
		hdr(3, false, false, ":status", "200") // a stream never opened, a header block never ended
	})
	add(func(fr *http2.Framer, hdr func(uint32, bool, bool, ...string) []byte) {
		var hb bytes.Buffer
		enc := hpack.NewEncoder(&hb)
		enc.WriteField(hpack.HeaderField{Name: ":status", Value: "200"})
		enc.WriteField(hpack.HeaderField{Name: "x-a", Value: "b"})
		block := hb.Bytes()
		fr.WriteHeaders(http2.HeadersFrameParam{StreamID: 1, BlockFragment: block[:1]})
		fr.WriteContinuation(1, false, block[1:3])
		fr.WriteContinuation(1, false, nil)
		fr.WriteContinuation(1, true, block[3:])
		fr.WriteData(1, true, []byte("continued"))
	})
	add(func(fr *http2.Framer, hdr func(uint32, bool, bool, ...string) []byte) {
		fr.WriteRawFrame(0xfa, 0xff, 1, []byte("unknown"))
		fr.WritePriority(1, http2.PriorityParam{StreamDep: 1, Weight: 1})
		fr.WriteData(1, false, []byte("data before headers"))
	})
	add(func(fr *http2.Framer, hdr func(uint32, bool, bool, ...string) []byte) {
		hdr(1, false, true, ":status", "100")
		hdr(1, false, true, ":status", "200")
		fr.WriteDataPadded(1, false, []byte("padded"), make([]byte, 100))
		hdr(1, true, true, "x-trailer", "t")
	})
	add(func(fr *http2.Framer, hdr func(uint32, bool, bool, ...string) []byte) {
		fr.WritePushPromise(http2.PushPromiseParam{StreamID: 1, PromiseID: 2, EndHeaders: true})
	})
	add(func(fr *http2.Framer, hdr func(uint32, bool, bool, ...string) []byte) {
		hdr(3, false, true, ":status", "200")
		fr.WriteData(2, false, []byte("x"))
		fr.WriteRSTStream(5, http2.ErrCodeCancel)
	})
	add(func(fr *http2.Framer, hdr func(uint32, bool, bool, ...string) []byte) {
		hdr(1, false, true, ":status", "200")
		fr.WriteData(1, false, make([]byte, 5000))
	})
	add(func(fr *http2.Framer, hdr func(uint32, bool, bool, ...string) []byte) {
		hdr(1, false, true, ":status", "2000", "Bad-Name", "x")
		hdr(1, false, true, ":status", "200")
		fr.WriteData(1, false, []byte("x"))
		hdr(1, false, true, "x-trailer-without-end", "t")
	})
	return seeds
}
