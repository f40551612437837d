package echoserver

import (
	"bytes"
	"io"
	"net"
	"testing"
	"time"

	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"
)

// FuzzFrameEcho feeds arbitrary bytes after the client preface to one
// FrameEcho connection: whatever they are, the connection's goroutine
// returns once the input ends (no panic, no hang).
func FuzzFrameEcho(f *testing.F) {
	var seed bytes.Buffer
	fr := http2.NewFramer(&seed, nil)
	fr.WriteSettings(http2.Setting{ID: http2.SettingInitialWindowSize, Val: 10})
	var hbuf bytes.Buffer
	enc := hpack.NewEncoder(&hbuf)
	enc.WriteField(hpack.HeaderField{Name: ":method", Value: "POST"})
	fr.WriteHeaders(http2.HeadersFrameParam{StreamID: 1, BlockFragment: hbuf.Bytes(), EndHeaders: true})
	// One envelope of 16 bytes carrying a 0-byte inner message, then
	// more than the client's window of 10 bytes echoed.
	fr.WriteData(1, false, []byte{0, 0, 0, 16, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0})
	fr.WriteData(1, false, append([]byte{0, 0, 0, 40, 0, 0, 0, 0, 0, 0, 0, 0}, make([]byte, 28)...))
	fr.WriteWindowUpdate(1, 100)
	fr.WriteWindowUpdate(0, 100)
	fr.WritePing(false, [8]byte{1})
	fr.WriteData(1, true, nil)
	fr.WriteRSTStream(3, http2.ErrCodeCancel)
	fr.WriteGoAway(0, 0, nil)
	f.Add(seed.Bytes())
	f.Add([]byte{0, 0, 0, 4, 0, 0, 0, 0, 0})
	f.Fuzz(func(t *testing.T, in []byte) {
		server, client := net.Pipe()
		done := make(chan struct{})
		go func() {
			defer close(done)
			serveFrameEcho(server)
			server.Close()
		}()
		go io.Copy(io.Discard, client)
		client.SetWriteDeadline(time.Now().Add(5 * time.Second))
		client.Write([]byte(http2.ClientPreface))
		client.Write(in)
		client.Close()
		select {
		case <-done:
		case <-time.After(5 * time.Second):
			t.Fatal("the connection did not end after its input did")
		}
	})
}
