// Package cassette records bidirectional streaming sessions to files and
// reads them back, so that a session recorded once against a real
// endpoint can be replayed in tests (package bidi/biditest/replay serves a
// cassette as the model).
//
// # The format
//
// A cassette is one session in JSON Lines: UTF-8 text, one JSON object per
// line, so that diffs read well. The first line is the [Header]:
//
//	{"cassette":"sagemaker-bidi","version":1,"recorded":"2026-11-26T13:45:00Z","recorder":"gateway"}
//
// Every other line is an [Event] with its kind and its time since the
// session started, in microseconds ("t_us"):
//
//	{"t_us":0,"kind":"open","endpoint":"my-endpoint"}
//	{"t_us":812,"kind":"response","status":200,"variant":"AllTraffic","request_id":"…"}
//	{"t_us":950,"kind":"send","type":"UTF8","state":"COMPLETE","size":5,"pad":59,"text":"hello"}
//	{"t_us":1210,"kind":"recv","type":"BINARY","state":"PARTIAL","size":3,"b64":"AAEC"}
//	{"t_us":1400,"kind":"send_end"}
//	{"t_us":1630,"kind":"exception","exception":"ModelStreamError","body":"{\"Message\":\"…\",\"ErrorCode\":\"1011\"}"}
//	{"t_us":1631,"kind":"end","reason":"exception","close_code":1011}
//
// or, for a session that ended cleanly where the WebSocket close was
// seen (through the gateway):
//
//	{"t_us":1631,"kind":"end","reason":"completed","close_code":1000,"close_reason":"bye"}
//
// "send" is a part the client sent, "recv" a part the model sent, each as
// it travelled (PARTIAL…COMPLETE fragments are kept). A payload is stored
// as "text" when it is UTF-8 without control characters other than tab,
// CR and LF, else as base64 in "b64"; either way the bytes read back are
// the bytes recorded. "size" is the payload's length and "pad" the length
// of its padding (the P header), when known: the padded size is the
// bucket an observer of the encrypted traffic sees (the gateway records
// the P a client sent, 0 for none; [Record] what the session's padding
// policy gives). A payload masked by a redaction hook
// ([WriterOptions.Redact]) is marked "redacted":true and keeps its
// original size; so is every payload of a cassette rebuilt by the
// inspector, which keeps none.
//
// A cassette never holds credentials, the Authorization header, SigV4
// request or chunk signatures, or the contents of the padding: recorders
// have no field for them.
//
// # Versions
//
// [Version] is the format version this package writes. A reader accepts
// every version up to its own and skips fields and event kinds it does not
// know, so that a later minor addition does not break an older reader;
// a cassette of a later version is refused with a [*VersionError].
// testdata/v1.jsonl is the checked-in cassette every later version must
// keep reading.
//
// Additions within version 1, which older readers skip: "close_reason"
// on the end event. A writer never bumps the version for an optional
// member that a reader may ignore; it would for a change in the meaning
// of an existing one.
//
// # Recording
//
// [Writer] streams events to an io.Writer (a file) through a fixed
// buffer: a session is never held in memory whole. [Record] wraps a
// *bidi.Session so that an application's own tests can record what it
// sends and receives; the local gateway (examples/gateway -record DIR)
// and bidicat (-record FILE) record the sessions they carry, and
// biditest.Server.Record records a test server's streams.
package cassette
