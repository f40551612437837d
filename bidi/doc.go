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
// SendPart is incomplete, CloseSend returns [ErrMessageInProgress] and
// ends nothing: check its error, or a Recv waiting for io.EOF waits until
// its context ends.
//
// # Errors
//
// Errors from the service are typed and reachable with errors.As: HTTP
// errors as [*ResponseError] (unwrapping to [*ModelError],
// [*InputValidationError], [*InternalServerError],
// [*ServiceUnavailableError]), mid-stream failures as [*ModelStreamError],
// [*InternalStreamFailure] or [*StreamError]. An HTTP error arrives as
// soon as the service sends it, through the next or pending Send or Recv
// and through [Session.Response]. Recv returns io.EOF only for a clean end
// of stream; a truncated stream is an error wrapping io.ErrUnexpectedEOF.
//
// # Lifetime and concurrency
//
// A session ends when the service ends it, when it fails, when the
// context given to Open is cancelled or when [Session.Close] is called;
// then every goroutine it started exits. Sends may come from many
// goroutines; receives from one at a time. The [Session] documentation
// has the full contract. Opening is retried on throttling, 503 and the
// transient 424 "Failed to establish WebSocket connection", replaying what
// was already sent; a stream the model has answered is never retried.
//
// The companion package biditest is an in-process server for tests.
package bidi
