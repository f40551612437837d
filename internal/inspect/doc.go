// Package inspect is a live view of bidirectional streaming sessions: a
// bounded in-memory [Store] fed through cassette sinks (one per session)
// and a local web page listing the sessions as they run (state, timings,
// response head, end, WebSocket close code and reason) and each session's
// messages (direction, type, size, fragment, padding bucket, errors, an
// optional payload preview), with every session downloadable as a
// cassette: the session's cassette file when it was recorded to one,
// else a cassette rebuilt from the store, which keeps no payloads, marked
// as such (every part redacted, the recorder [RedactedRecorder], a name
// ending in "-redacted.jsonl", and the page says so).
//
// The local gateway (examples/gateway -inspect ADDR) serves it; biditest
// could, through Server.Record. It is internal so that its page and API
// can change freely.
//
// # Memory
//
// The store keeps at most Options.MaxSessions sessions (1,000 by
// default) and Options.MaxMessages messages over all of them (1,000,000).
// A message costs MessageBytes in memory whatever its payload (the
// payload is never kept, only a preview of at most 32 bytes), a session
// at most SessionBytes beyond its messages, so the store stays under
// MaxMessages*MessageBytes + MaxSessions*(SessionBytes+chunk slack)
// (about 75 MiB with the defaults; TestMemoryBound measures it). When a
// bound is reached the oldest ended sessions are dropped; a running
// session over the message bound keeps its first messages and counts the
// rest as dropped.
//
// # Safety
//
// The page is served to loopback clients only unless
// Options.AllowRemote is set, and only for a loopback Host header (which
// defeats DNS rebinding). Credentials, signatures and padding bytes never
// reach the store: cassette events have no field for them.
package inspect
