package transport

import (
	"encoding/binary"
	"time"
)

// healthCheck runs on the ping timer: a connection that read nothing for
// PingInterval gets a PING; one that then reads nothing for PingTimeout
// is closed with ErrDeadPeer, failing its streams.
func (cc *conn) healthCheck() {
	interval, timeout := cc.t.cfg.PingInterval, cc.t.cfg.pingTimeout()
	cc.mu.Lock()
	if cc.err != nil {
		cc.mu.Unlock()
		return
	}
	now := int64(time.Since(cc.epoch))
	last := cc.lastRead.Load()
	if cc.pingPending && last > cc.pingSent {
		cc.pingPending = false // the peer is alive, even if the ack is late
	}
	switch {
	case cc.pingPending:
		if wait := time.Duration(cc.pingSent + int64(timeout) - now); wait > 0 {
			cc.pingTimer.Reset(wait)
			cc.mu.Unlock()
			return
		}
		cc.mu.Unlock()
		cc.fail(&ConnError{Reason: "health check", Cause: ErrDeadPeer})
		return
	case now-last < int64(interval):
		cc.pingTimer.Reset(time.Duration(last + int64(interval) - now))
	default:
		cc.pingPending = true
		cc.pingSent = now
		binary.BigEndian.PutUint64(cc.pingData[:], uint64(now))
		cc.queueLocked(ctrlItem{kind: ctrlPing, data: cc.pingData})
		cc.pingTimer.Reset(timeout)
	}
	cc.mu.Unlock()
}
