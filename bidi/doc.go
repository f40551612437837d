// Package bidi is a client for Amazon SageMaker's bidirectional streaming
// API, InvokeEndpointWithBidirectionalStream: one HTTP/2 stream per
// session, carrying SigV4 chunk-signed event-stream messages to the model
// and the model's messages back.
//
// # Tour
//
// Build a [Client] from an aws.Config, the way aws-sdk-go-v2 service
// clients are built, and open a [Session] per conversation:
//
//	cfg, err := config.LoadDefaultConfig(ctx)
//	client := bidi.NewFromConfig(cfg)
//	sess, err := client.Open(ctx, &bidi.OpenInput{EndpointName: "my-endpoint"})
//	defer sess.Close()
//
// Open validates the input, signs the request and returns as soon as the
// request is on its way. Send messages with [Session.Send] and read the
// model's with [Session.Recv] (or range over [Session.Messages]):
//
//	err = sess.Send(ctx, bidi.Text(`{"inputs":"hello"}`))
//	err = sess.CloseSend()             // no more input; replies keep coming
//	for msg, err := range sess.Messages(ctx) { ... }
//
// Large messages are split into parts of at most Options.MaxPartSize and
// reassembled on receipt (bounded by Options.MaxMessageSize); every part
// is padded (Options.Padding) so its size on the wire reveals only a
// bucket. [Session.SendPart] and [Session.RecvPart] work with the parts
// themselves, and [Session.Reader] presents the incoming bytes as an
// io.Reader.
//
// Live audio: send one message per audio frame ([Session.Send] of each
// 20–100 ms chunk). A model container behind SageMaker receives a
// fragmented message (SendPart's PARTIAL…COMPLETE) as one WebSocket
// message, only once it is complete, so an utterance streamed with
// SendPart reaches the model, and gets its first result, only at its end.
// Fragments are right for one large message that must arrive whole (a
// file, an image, a long prompt). While a message begun with
// SendPart is incomplete, CloseSend returns an error and
// ends nothing: check its error, or a Recv waiting for io.EOF waits until
// its context ends.
//
// # Errors
//
// Errors from the service are typed and reachable with errors.As: HTTP
// errors as [*ResponseError] (unwrapping to [*ModelError],
// [*InputValidationError], [*InternalServerError],
// [*ServiceUnavailableError]), mid-stream failures as [*ModelStreamError],
// [*InternalStreamFailure] or [*ExceptionError]. An HTTP error arrives as
// soon as the service sends it, through the next or pending Send or Recv
// and through [Session.Response]. Recv returns io.EOF only for a clean end
// of stream; a truncated stream is an error wrapping io.ErrUnexpectedEOF.
// A stream ended by HTTP/2 (RST_STREAM, GOAWAY) holds an [*HTTP2Error]
// with the protocol's error code.
//
// # Lifetime and concurrency
//
// A session ends when the service ends it, when it fails, when the
// context given to Open is cancelled or when [Session.Close] is called;
// then every goroutine it started exits. Sends may come from many
// goroutines; receives from one at a time. The [Session] documentation
// has the full contract.
//
// # Opening, retries and clock skew
//
// Open returns once the request is on its way; with Options.AwaitResponse
// (or OpenInput.AwaitResponse) it waits for the service's answer and
// returns the typed HTTP error itself. Opening is retried on throttling,
// 503 and the transient 424 "Failed to establish WebSocket connection",
// replaying what was already sent; never on a 4xx of the request or of
// the container, and never once the model answered. The client's
// aws.Retryer (aws.Config.Retryer, RetryMaxAttempts, RetryMode) decides
// the rest, and its token bucket is a retry budget shared by all of the
// client's sessions. A signature refused for the client's clock is
// corrected from the service's Date header and retried once.
//
// # Long-lived sessions
//
// [Session.Finish] ends the input only once the model has been quiet for
// a while, so that its last replies are not lost, and tells a normal
// closure (close code 1000, [IsNormalClosure]) from a failure.
// [Client.OpenRotating] keeps a session going past the service's 30-minute
// stream cap by opening a successor stream before the cap
// (make-before-break), with callbacks for what each stream needs first
// and last.
//
// # Observability
//
// Options.TracerProvider and Options.MeterProvider (smithy-go's
// interfaces, as in aws-sdk-go-v2) trace each session with one span from
// Open to the stream's end and record client.call.* and stream-level
// metrics (their names are documented on the two fields); unset, they
// cost nothing. Payloads, credentials and signatures never appear in them.
//
// # Connections
//
// The client has its own HTTP/2 engine: a pool of connections per
// endpoint, each carrying up to Options.MaxStreamsPerConnection sessions
// and never more than the server allows; sessions wait for a slot rather
// than dial connections of their own. Trust comes from Options.TLSConfig
// or the aws.Config's CA bundle; HTTPS proxies from the environment are
// used through CONNECT. [Client.CloseIdleConnections] releases idle
// connections.
//
// The companion package biditest is an in-process server for tests.
package bidi
