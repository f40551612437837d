// Package eventstream implements the AWS event-stream binary message format
// (application/vnd.amazon.eventstream) and the per-event SigV4 chunk signing
// used on the request side of AWS bidirectional streaming operations.
//
// # Messages
//
// A [Message] is a list of typed [Header] values and an opaque payload.
// [AppendMessage] encodes one message onto a caller's buffer (one frame, one
// allocation at most when the buffer must grow) and an [Encoder] writes each
// frame to an io.Writer in a single Write call.
//
// A [Decoder] reads messages from an io.Reader. It reuses its buffers, so a
// decoded message, its headers and its payload are valid only until the next
// call to [Decoder.Decode]. Lengths are checked against [DecoderOptions]
// limits from the 12-byte prelude, before the rest of the message is
// buffered or any buffer is grown for it; each violation has its own error ([ErrPayloadTooLarge],
// [ErrHeadersTooLarge], [ErrInvalidLength]). Within the limits, the
// decoder's buffer grows with the bytes that actually arrive, never
// straight to the length a prelude claims. A CRC mismatch is a
// [*ChecksumError] naming the checksum, the expected and the computed value.
// A stream that ends inside a frame yields an error wrapping
// io.ErrUnexpectedEOF; io.EOF is returned only at a frame boundary. A
// non-blocking reader returns [ErrWouldBlock] when nothing is ready, and
// Decode resumes where it stopped on the next call. A reader that buffers
// its input can lend it (see [Peeker]): a message that lies whole in the
// lent bytes is decoded there, without being copied first.
//
// # Signing
//
// A [Signer] wraps encoded event messages in signed envelopes: an outer
// message with a :date timestamp header and a :chunk-signature header holding
// the SigV4 signature chained from the previous one, starting at the seed
// signature of the HTTP request. [Signer.AppendEnd] produces the signed empty
// frame that ends the stream. A [Verifier] checks such a chain on the
// receiving side. Signing an event allocates nothing once the day's
// signing key is derived.
//
// Neither a Signer nor a Verifier is safe for concurrent use: a signature
// chain is sequential by nature.
package eventstream
