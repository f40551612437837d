// Package relay is a WebSocket front door for SageMaker bidirectional
// streams: an http.Handler that lets browsers, phones and any WebSocket
// client talk to a model through a Go backend, which holds the AWS
// credentials and signs every event, with rotation hidden and memory
// bounded.
//
// # A tour
//
// Mount a [Handler] built from a bidi.Client and an [AuthorizeFunc] that
// decides, per request, whether it may open a session and with which
// input:
//
//	h, err := relay.New(client, func(r *http.Request) (*bidi.OpenInput, error) {
//		if !validSession(r) {
//			return nil, &relay.StatusError{Status: http.StatusUnauthorized}
//		}
//		return &bidi.OpenInput{EndpointName: "my-endpoint"}, nil
//	}, nil)
//	http.Handle("/ws", h)
//
// Each request is checked (a WebSocket upgrade, an allowed Origin, a
// free slot under Options.MaxClients), authorised, given its model
// session (a [bidi.RotatingSession] by default, see [Rotating] and
// [Sessions]), and only then upgraded. From then on:
//
//   - one WebSocket message is one model message, both ways: binary
//     frames are BINARY parts, text frames UTF8 parts (a text message that
//     is not UTF-8 closes the connection with 1007); large messages are
//     fragmented by the session as usual;
//   - each direction has a queue bounded in bytes (Options.ToModelQueueBytes,
//     ToClientQueueBytes); when it is full, Options.Overflow decides: close
//     with 1008 (the default) or 1013, or drop the oldest binary message
//     first;
//   - hooks (Options.ToModel, ToClient) see, change or drop each message;
//   - the client is pinged, and idle, lifetime and ping-flood limits apply.
//
// # How a call ends
//
// Gracefully, without losing the model's last answer, when the input
// ends: the client's EndOfInput message (Options.EndOfInput), its close
// frame, Options.IdleTimeout, Options.MaxLifetime or [Handler.Shutdown].
// The model's input ends through [Finisher] (Session.Finish: once the
// model has been quiet for Options.FinishQuiet) or, for a Model without
// Finish (RotatingSession today), by the relay's own wait for the same
// quiet period and then CloseSend; every reply
// still on its way is delivered (unless the client is gone), and the
// client gets the close code of the model's end, [CloseFor]'s table
// (1000 for a clean end), or 1001 for idle, lifetime and shutdown.
// A WebSocket close from the client is answered at once by the WebSocket
// protocol, and browsers drop what arrives after it, so a client that
// wants the last answer sends its EndOfInput message and waits for the
// close.
//
// At once, with a close code, when something goes wrong:
//
//	what happened                                  code  close_kind
//	the model side ended or failed                 CloseFor(err)  model_end
//	the model side could not be opened             CloseFor(err)  open_refused
//	                                               (or an HTTP status before the upgrade: RefuseWithHTTPStatus)
//	a text message that is not UTF-8               1007  invalid_utf8
//	a message over Options.MaxMessageSize          1009  message_too_big
//	a queue overflowed (OverflowClose)             1008  overflow ("client too slow" / "model too slow")
//	a queue overflowed (OverflowTryAgainLater)     1013  overflow
//	pings faster than MaxPingsPerSecond            1008  ping_flood
//	no pong within PingTimeout                     none (connection dropped)  ping_timeout
//	a data message after EndOfInput                1008  protocol
//	a Hook's websocket.CloseError                  its code  hook
//	a Hook's other error                           1011  hook
//	idle / lifetime / Shutdown                     1001  idle / lifetime / shutdown
//	a graceful end over FinishTimeout, Close       1001  finish_timeout / shutdown
//
// A client that broke the protocol (1007, 1009, ping_flood, protocol)
// is failed, as RFC 6455 has an endpoint fail a connection: it gets the
// close frame, and the relay reads nothing more of it and drops the
// connection. Every other close the relay begins reads what the client
// sent meanwhile, and its close frame, up to 64 KiB within 5 s; a client
// that sends more is dropped without it. A close costs the relay a
// bounded amount of reading, whatever frame the client announced.
//
// Before any upgrade, a request is refused with an HTTP status: 426 (not
// a WebSocket upgrade), 403 (Origin not allowed), 503 with Retry-After
// (MaxClients reached, or shutting down), or the AuthorizeFunc's status.
//
// # Memory and goroutines
//
// ServeHTTP returns once a call is relayed: the call runs on two
// goroutines of its own (one reads the client, one the model); its model
// session and its timers need none. The goroutine that read a
// message delivers it itself when nothing is queued its way, so a call
// that keeps up wakes no other goroutine. Once a peer stops keeping up
// (a delivery still in progress after one to two milliseconds, which a
// watchdog the Handler runs while its calls deliver notices, or messages
// queued; its tick looks at the calls only while a delivery is in
// progress, so calls that are idle or whose peers stopped reading cost
// it nothing), one more goroutine per direction delivers while that
// direction has messages queued, and the reading goes on, so that the
// queue's bound and Options.Overflow apply. The model is read on even
// when its queue is full: pausing it would leave its replies in the
// session's flow-control window (up to bidi's stream window per call, and
// the connection's window is shared by every call on it), where no bound
// of the relay's applies.
//
// What a call buffers is bounded by its two queues (each message charged
// its length plus 64 bytes; the messages are copied into one buffer per
// queue, grown in powers of two to what the queue held at its fullest and
// given back once it is empty), one client message being read (MaxMessageSize; into
// a pooled buffer given back once sent), one being delivered each way,
// and the connection's 1 KiB read and write buffers; the session's own
// bounds are bidi's. Calls are independent: a client that does not read
// fills only its own queue. Before it, the kernel's socket send buffer
// holds what the client has not read: Linux grows it to hundreds of KiB
// per connection on fast links, outside the process's memory; a server
// that wants less sets SO_SNDBUF on the connections its listener accepts.
//
// Sizing a server. With the default 8 KiB queues to the clients (the
// queues toward the model hold nothing while the models keep up), a
// thousand clients that never read (every queue to them full) keep about
// 23 MiB live and 3,000 goroutines (12 MiB of stacks): the relay's
// queues 8 MiB, the WebSocket connections 3.5 MiB, the calls 2 MiB, the
// model sessions (engine streams included) about 5 MiB, contexts 1.4
// MiB, the runtime and the sockets the rest. A connected, silent client
// costs about 23 KiB. The Go runtime lets the heap grow by as much as is
// live, stacks counted, before it collects (GOGC=100), and what the
// calls allocate meanwhile decides how far toward that it gets. Set the
// Client's Options.MessageBuffer to [MessageBuffer] so that replies,
// dropped or delivered, make no garbage: that crowd then allocates about
// 50 MiB while it connects and its queues fill. Replies that arrive while
// the relay's goroutines wait for a CPU wait in its buffers, and the
// collector, counting them live, lets the heap grow by as much again:
// sharing two CPUs with the crowd's clients and model, the relay held up
// to 5–6 MiB of them at once (2.5 MiB on a CPU of its own) and peaked at
// 59–68 MiB resident (median 64). A server with a memory budget sets a
// soft limit (GOMEMLIMIT, or runtime/debug.SetMemoryLimit) a little under
// it: a 56 MiB limit held that crowd at 59.6–61.2 MiB resident at the
// most, in sixteen runs of sixteen sharing the two CPUs, and the other
// clients' p99 round trip within 1.2 times a run without the crowd. It
// sizes its calls so that what they keep live, stacks included, stays
// well below the limit: the collector then runs more often instead of
// letting the heap double, while a limit at or below what is live makes
// it run all the time, slowing every call, and is exceeded anyway (see
// BENCHMARKS.md).
//
// # Observability
//
// A span per call (SpanName, with the model session's span as its child)
// and counters for messages, bytes, drops, closes and refusals (the Metric
// constants), through the providers of the bidi.Client unless Options
// names others. No attribute holds a payload, a credential or a close
// reason.
package relay
