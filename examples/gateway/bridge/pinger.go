package bridge

import (
	"encoding/binary"
	"time"

	"github.com/sagemaker-bidi/sagemaker-bidi/examples/gateway/internal/wsframe"
)

// pingLoop pings the container every PingInterval. At each tick it looks
// back on the interval: a pong resets the count of missed intervals; no
// pong while a ping was outstanding adds one, unless the reader forwarded
// a part during the interval or is waiting for a slow client at the tick.
// A container whose data the gateway is still reading is alive, and its
// pong may be queued behind that data: a backlog (a client that was slow,
// then reads) is read in bursts between deliveries, so what the reader
// does at the tick alone does not tell. After MaxMissedPongs missed
// intervals in a row the session ends with a ping timeout: the gateway
// sends a close frame (1001) and drops the connection if no answer comes
// within CloseTimeout. Any pong counts, whatever its payload.
func (s *session) pingLoop() {
	defer s.writers.Done()
	interval, limit := s.h.opts.PingInterval, s.h.opts.MaxMissedPongs
	t := time.NewTicker(interval)
	defer t.Stop()
	missed, outstanding := 0, false
	var seq uint64
	var payload [8]byte
	for {
		select {
		case <-s.stop:
			return
		case <-t.C:
		}
		pongs, forwarded := s.pongs.Swap(0), s.forwarded.Swap(false)
		switch {
		case pongs > 0:
			missed = 0
		case forwarded || s.delivering.Load():
		case outstanding:
			missed++
		}
		if missed >= limit {
			s.log.Warn("container missed pongs", "missed", missed, "interval", interval)
			s.end(pingTimeout(missed, interval), wsframe.ClosePayload(wsframe.CloseGoingAway, "ping timeout"))
			return
		}
		seq++
		binary.BigEndian.PutUint64(payload[:], seq)
		s.sendControl(wsframe.OpPing, payload[:])
		outstanding = true
	}
}
