// Package bridge is the logic of the local SageMaker gateway
// (examples/gateway): an endpoint that speaks SageMaker's
// InvokeEndpointWithBidirectionalStream to clients and, for each session,
// opens a WebSocket to a real model container and maps the two exactly as
// SageMaker does, so that a container's WebSocket contract can be tested
// locally before a deployment.
//
// # A tour
//
// [Start] serves a [Handler] on a [biditest.Server], which provides the
// service side: HTTP/2 over TLS with a generated certificate (or h2c),
// SigV4 verification of the request and of every event, and the
// service's request checks.
//
//	ln, _ := net.Listen("tcp", "localhost:8443")
//	g, err := bridge.Start(bridge.Config{
//		Options:     bridge.Options{Container: "ws://localhost:8080"},
//		Listener:    ln,
//		Credentials: aws.Credentials{AccessKeyID: "AKIDLOCAL", SecretAccessKey: "local-secret"},
//	})
//	defer g.Close()
//	os.WriteFile("gateway.pem", g.CertificatePEM(), 0o644) // for clients to trust
//
// A bidi client then uses g.URL() as its BaseEndpoint and an HTTP client
// trusting that certificate. A [Handler] may also run on a biditest.Server
// of one's own.
//
// # Before the stream
//
// The checks run in this order; the first failure answers the request
// with an HTTP error, before any event is read:
//
//  1. biditest's request checks (HTTP/2, operation path, headers,
//     signature, input patterns): 400, 403, 404 or 505 with the
//     service's error types. Rejections are logged.
//  2. A TargetVariant other than [Options.Variant]: 400
//     InputValidationError.
//  3. The container's health, as the last scheduled check found it: the
//     handler sends GET /ping every HealthInterval (5 s by default) on
//     its own schedule, as SageMaker does, never per session. While the
//     last check failed (anything but 200 within HealthTimeout), sessions
//     get the 424 ModelError SageMaker gives when it cannot reach a model,
//     Message "Failed to establish WebSocket connection", with
//     OriginalMessage "Model container failed its health check: GET
//     http://…/ping answered 503 Service Unavailable" (or "… failed:
//     <network error>") and OriginalStatusCode the status when there was
//     one. The log tells when the container becomes unhealthy and healthy
//     again.
//  4. The WebSocket handshake on ws://HOST/{ModelInvocationPath}?{ModelQueryString}
//     (path "invocations-bidirectional-stream" by default; no extension, no
//     subprotocol): a refusal, a failed connection or a bad handshake
//     gives 424 ModelError, Message "Failed to establish WebSocket
//     connection", with OriginalStatusCode and OriginalMessage (the start
//     of the body) when the container answered with an HTTP status. The
//     container has DialTimeout to accept, by default SageMaker's limit
//     of 250 ms (SageMakerAcceptLimit): a slower container gets the same
//     424, its OriginalMessage and the log naming the limit
//     ([AcceptTimeoutError]). The bidi client retries this 424 on its own.
//
// Then the response is 200 with X-Amzn-Invoked-Production-Variant set to
// [Options.Variant].
//
// # Mapping
//
// Client to container: each request PayloadPart becomes exactly one
// masked WebSocket frame carrying the part's bytes, never merged with
// another part, never split, never inspected. The first part of a message
// becomes a text frame if its DataType is UTF8 and a binary frame if it is
// BINARY or absent; the following parts of a PARTIAL…COMPLETE run become
// continuation frames (their DataType is ignored: a WebSocket message has
// one type); FIN is set on the COMPLETE part (an absent CompletionState
// means COMPLETE). So a run of PARTIAL parts ended by a COMPLETE one is one
// fragmented WebSocket message with one frame per part. The P header
// (padding) is not forwarded. The client's end frame closes the WebSocket
// with 1000 after every earlier part was written; a client that ends its
// stream inside a message gets the same close.
//
// Container to client: each data frame becomes exactly one ResponsePayloadPart
// with the frame's bytes: a text frame gives UTF8, a binary frame BINARY,
// a continuation frame the type of its message; FIN=1 gives COMPLETE,
// FIN=0 PARTIAL. Empty frames give empty parts (coder/websocket, for one,
// ends fragmented messages with an empty FIN frame, which the client sees
// as an empty COMPLETE part). Text frames are not checked for UTF-8, as
// SageMaker never looks inside payloads. Pings are answered with pongs
// carrying the same payload; pongs and pings are not forwarded.
//
// # How a session ends
//
// After the client's end frame the container may keep sending until it
// answers the close frame; what it sends is forwarded, then the response
// stream ends cleanly (the client reads io.EOF). A container that does not
// answer within CloseTimeout is dropped, and the stream still ends
// cleanly. A client that goes away (reset, disconnected, a protocol
// violation) gets its WebSocket closed with 1001, reason "client went
// away". The gateway's own ends say so instead: a stream that reaches the
// connection cap (Config.MaxStreamAge, 30 minutes by default, as users
// report SageMaker's) gives the client an InternalStreamFailure ("The
// stream reached its maximum duration…", a platform fault: open a new
// stream) and the container a close 1001 "connection cap reached";
// [Gateway.Shutdown] lets sessions finish within its grace period, then
// gives each client still connected an InternalStreamFailure ("The
// endpoint is shutting down…") and each container a close 1001 "gateway
// shutting down"; [Gateway.Close] closes the containers' WebSockets with
// the same reason and cuts the clients' streams.
//
// Every other end is reported to the client as a ModelStreamError event
// whose ErrorCode is the WebSocket close code in decimal and whose
// Message ends with "(code N)", or "(code N, reason "R")" with the
// container's reason quoted as in Go:
//
//	how the WebSocket ended          ErrorCode  Message
//	container sent Close(C, R)       "C"        Model container closed the WebSocket connection (code C, reason "R")
//	                                            (", reason …" is left out when R is empty; C is 1005 for
//	                                            a close frame without a code; the gateway echoes C)
//	ended without a close frame      "1006"     Model container connection ended without a close frame (code 1006)
//	missed pongs                     "1006"     Model container did not answer 5 WebSocket pings sent every 1m0s (code 1006)
//	                                            (the gateway sends Close 1001 "ping timeout", then drops the connection)
//	container broke RFC 6455         "1002"     Model container broke the WebSocket protocol: <what> (code 1002)
//	                                            (masked frame, reserved bits or opcode, bad fragmentation, bad
//	                                            control frame, bytes that are not frames, a close code that must
//	                                            not be sent, 1006 included, or a close reason that is not UTF-8;
//	                                            the gateway sends Close 1002 and never echoes a forbidden code)
//	frame over MaxFrameSize          "1009"     Model container sent a frame of N bytes, over the gateway's limit of M (code 1009)
//	writing to the container failed  "1006"     Model container connection failed while the gateway was writing to it (code 1006)
//
// Parts the container sent before the end are delivered first. "Garbage"
// inside frames is forwarded as it is; garbage instead of frames is a
// protocol error (1002).
//
// # Pings
//
// The gateway pings the container every PingInterval (60 s by default).
// An interval counts as missed when no pong arrived during it while a
// ping was outstanding; MaxMissedPongs (5) missed intervals in a row end
// the session. An interval is not counted when the gateway forwarded a
// part of the container's during it, or is waiting for a slow client to
// take one: the container is sending, and its pong may be queued behind
// data the gateway has not read yet.
//
// # Limits
//
// Nothing waits without bound: the health checks, the handshake and the
// close handshake have timeouts; a silent container is caught by the
// pings; a frame is bounded by MaxFrameSize (16 MiB, at most 24 MiB, the
// event-stream payload limit) before its payload is read, and is the only
// thing buffered, since frames and parts map one to one and messages are
// never reassembled (the client bounds the messages it reassembles).
// Flow control is end to end: the gateway reads the next client part only
// after the previous frame was written, and the next container frame only
// after the client took the previous part.
//
// On the client side, [Config] caps what a local process can make the
// gateway hold: the TLS handshake and idle connections are timed
// (HandshakeTimeout, IdleTimeout), connections and sessions are counted
// (MaxConnections, MaxSessions), a client event is refused from its length
// prefix over MaxEventSize (1 MiB), and MaxStreamAge ends a session even
// when its client stopped reading. The worst case is then about
// MaxSessions × (MaxEventSize + the 1 MiB HTTP/2 window of a stream + a
// container frame on its way); examples/gateway's README gives measured
// figures. An accept that fails for lack of descriptors is retried with
// backoff; a listener that fails for good closes [Gateway.Done]. The log
// lines a client can cause at will (rejected requests, failed TLS
// handshakes) are throttled to five per kind every 10 s.
package bridge
