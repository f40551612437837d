// Package biditest provides a SageMaker-compatible server for testing
// code that uses package bidi, in the manner of net/http/httptest: a real
// HTTP/2 server over TLS on a loopback address that checks the request the
// way the service does and runs a [Handler] that plays the model.
//
// # A tour
//
// Start a server with a handler and get a client for it:
//
//	srv := biditest.NewServer(biditest.Echo())
//	defer srv.Close()
//	client := srv.Client() // a *bidi.Client trusting only srv's certificate
//	sess, err := client.Open(ctx, &bidi.OpenInput{EndpointName: "my-endpoint"})
//
// [Server.AWSConfig] gives the pieces instead (Region, static
// credentials, BaseEndpoint = [Server.URL], an HTTP/2-only *http.Client). Use [NewUnstartedServer] to set fields such as
// MaxConcurrentStreams, MaxReceiveBufferPerStream, Credentials, H2C,
// ProductionVariant, WholeMessages or MaxStreamAge before [Server.Start].
// [Server.Shutdown] stops the server gracefully (GOAWAY, running streams
// finish), [Server.Close] at once.
//
// A handler scripts the model with a [Stream]: [Stream.RecvPart] and
// [Stream.Recv] read request events (raw parts or reassembled messages),
// [Stream.SendPart] and [Stream.Send] answer with any DataType and
// CompletionState, [Stream.Fail] answers with an HTTP error instead (for
// example a 424 ModelError), [Stream.SendException] fails the stream
// mid-way (a ModelStreamError or InternalStreamFailure),
// [Stream.SendError] sends an unmodeled error message,
// [Stream.WriteRaw] sends anything at all, and
// [Stream.Reset] resets the stream. Blocking on [Stream.Context] stalls.
// [Server.GoAway], [Server.CloseClientConnections] and
// [Server.PauseConnections] (a peer that stops answering, PINGs included,
// until resumed) act on connections.
//
// # Checks
//
// By default the server verifies what the real service requires (docs/wire.md
// §3–4) and fails loudly on any violation: POST
// /endpoints/{EndpointName}/invocations-bidirectional-stream over HTTP/2,
// Content-Type application/vnd.amazon.eventstream, X-Amz-Content-Sha256
// STREAMING-AWS4-HMAC-SHA256-EVENTS, a SigV4 Authorization signed for
// service "sagemaker" with the server's credentials, region and clock
// (±15 minutes), the model's patterns for the endpoint name and the
// SageMaker headers, then, as the handler receives, the :chunk-signature
// of every envelope chained from the request signature, PayloadPart inner
// events with the model's DataType and CompletionState values and no
// empty header value, and the signed end frame, after which the body must
// end. The server is strict where a client is lenient: it is the
// conformance check of clients.
//
// The request signature is verified as SigV4 defines it, from the
// client's own SignedHeaders list, so that any AWS SDK is accepted: the
// canonical request is rebuilt from the headers the client named, extra
// ones included, and over HTTP/2 either "host" or the ":authority"
// pseudo-header may stand for the authority (aws-sdk-go-v2 and the Rust
// SDK sign "host", AWS's JavaScript SDK signs ":authority"). Neither
// signed, an x-amz-* or x-amzn-sagemaker-* header left unsigned, a
// credential scope for another region, service or day, and a clock skew
// are refused with the service's error types and messages.
//
// A request that fails a check before the handler gets a restJson1 error
// (400, 403, 404 or 505 with X-Amzn-ErrorType and a JSON body; the 400s of
// the request checks are the model's InputValidationError) and never
// reaches the handler; a violation mid-stream is returned by RecvPart,
// sent to the client as an error message and ends in a stream reset.
// Every violation is recorded as a [*Violation] in [Server.Violations], or
// handed to [Server.OnViolation].
// Set [Server.SkipVerify] to accept unsigned requests.
//
// # What it emulates, and what it cannot know
//
// Where the service model or the platform is documented, the server
// behaves alike: modeled error names on the wire (InputValidationError,
// ModelError with its members, InternalServerError,
// ServiceUnavailableError through [Stream.Fail]; ModelStreamError and
// InternalStreamFailure mid-stream), X-Amzn-Invoked-Production-Variant on
// every 200 (the TargetVariant, else [Server.ProductionVariant], else
// "AllTraffic"), and unsigned response events. Where only the behaviour
// of a model container behind SageMaker's WebSocket bridge is known, it
// plays such a container: [Echo] and [DemoModel] end the stream with
// ModelStreamError "1009" on a message over [Server.MaxRecvMessageSize],
// as a WebSocket container's read limit does behind the platform, and
// [Server.WholeMessages] shows the handler each message only once it is
// complete, as a container built on a message-level WebSocket library
// sees it. [Server.MaxStreamAge] emulates the cap on a stream's duration
// that users report (about 30 minutes; its exact value and the way the
// service ends the stream are not documented: the server sends an
// InternalStreamFailure, a platform fault the client should answer by
// opening a new stream).
//
// It cannot know what the service does not publish: the exact messages of
// the service's own errors (the server's follow AWS's usual wording), the
// size limits the service enforces, throttling, the service's own
// health checks and routing between variants, the WebSocket timing of a
// real container, and any change AWS makes after docs/wire.md was written. The
// local gateway in examples/gateway puts a real container behind the
// same checks.
//
// For assertions, [Server.Streams] lists the streams received, each with
// its request inputs and headers, and [Stream.Received] the parts it
// received, with their padding, envelope size and date.
//
// # Recording and replay
//
// [Server.Record] records every stream as a cassette (package cassette):
// the request, the response head, both directions' parts, exceptions and
// the end. Package bidi/biditest/replay turns a cassette, recorded here,
// by the local gateway, by bidicat -record or by cassette.Record against
// a real endpoint, into a Handler that answers as the recording did, and
// package bidi/biditest/inspect shows a Server's streams live in a
// browser.
//
// # Time that moves only when the test waits
//
// A server and its clients run in a testing/synctest bubble when they
// talk over a network in memory: set [Server.Listener] to a listener
// whose connections are one end of a net.Pipe each, and the client's
// bidi.Options.DialContext to a function that hands the listener the
// other end (the listener's Addr should be 127.0.0.1, which the server's
// certificate names). Start the server and open the sessions inside the
// bubble. Then a paced call of minutes takes only the CPU time its work
// needs, every timer (rotation, Finish's quiet period, a handler's
// pauses, MaxStreamAge) fires exactly when due, and a reply's delay is
// the code's, never the machine's. Package bidi's acceptance tests of
// rotation run this way.
//
// # Flow control
//
// The request body is read only when the handler receives, so a handler
// that never calls a Recv method leaves the client blocked by HTTP/2 flow
// control once MaxReceiveBufferPerStream bytes are in flight: that is how
// tests prove that a client's Send blocks. Responses are flushed after
// every Send, so events reach the client at once.
//
// # Limits
//
// A server is meant for tests and local gateways, but a hostile local
// process must not be able to stop it or make it hold without bound. Like
// http.Server.Serve, it retries an accept that fails for lack of
// descriptors, with backoff. Each of these has a default, and a negative
// value lifts it: [Server.HandshakeTimeout] (10 s) for the TLS handshake
// or the h2c preface, [Server.IdleTimeout] (30 s) for a connection with
// no stream, [Server.MaxConnections] (1024) and [Server.MaxSessions]
// (1024) for what is held at once, [Server.MaxEventSize] (16 MiB + 64 KiB)
// for the bytes one stream buffers, checked from an event's length prefix,
// and [Server.MaxRecordedBytes] (64 MiB) for what [Stream.Received]
// keeps. [Server.MaxStreamAge] ends a stream even when its client stopped
// reading. Violation messages are bounded, and the lines a client can
// cause at will (connections over the cap, say) are logged a few times a
// minute at most.
package biditest
