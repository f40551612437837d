package eventstream_test

import (
	"bytes"
	"encoding/hex"
	"fmt"
	"io"
	"log"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/sagemaker-bidi/sagemaker-bidi/eventstream"
)

// Encode two messages into a stream and decode them again. The decoded
// message is only valid until the next call to Decode.
func Example() {
	var stream bytes.Buffer
	enc := eventstream.NewEncoder(&stream)
	for _, text := range []string{"Hello", " world"} {
		err := enc.Encode(&eventstream.Message{
			Headers: eventstream.Headers{
				{Name: ":message-type", Value: eventstream.StringValue("event")},
				{Name: ":event-type", Value: eventstream.StringValue("PayloadPart")},
				{Name: "DataType", Value: eventstream.StringValue("UTF8")},
			},
			Payload: []byte(text),
		})
		if err != nil {
			log.Fatal(err)
		}
	}
	fmt.Println("stream bytes:", stream.Len())

	dec := eventstream.NewDecoder(&stream)
	for {
		m, err := dec.Decode()
		if err == io.EOF {
			break
		}
		if err != nil {
			log.Fatal(err)
		}
		eventType, _ := m.Headers.Get(":event-type")
		fmt.Printf("%s %q\n", eventType, m.Payload)
	}
	// Output:
	// stream bytes: 171
	// PayloadPart "Hello"
	// PayloadPart " world"
}

// Sign a PayloadPart event and the end frame the way a SageMaker
// bidirectional stream needs them, then check the chain as the service
// would. The clock is fixed so that the signature is a known answer (it is
// the first signature of chain 1 in the project's test vectors).
func ExampleSigner() {
	creds := aws.Credentials{AccessKeyID: "AKIDEXAMPLE", SecretAccessKey: "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY"}
	seed := make([]byte, 32) // normally: eventstream.SeedFromAuthorization(req.Header.Get("Authorization"))
	clock := func(o *eventstream.SignerOptions) {
		o.Now = func() time.Time { return time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC) }
	}
	signer := eventstream.NewSigner(creds, "us-west-2", "sagemaker", seed, clock)

	event := &eventstream.Message{
		Headers: eventstream.Headers{
			{Name: "DataType", Value: eventstream.StringValue("UTF8")},
			{Name: "CompletionState", Value: eventstream.StringValue("PARTIAL")},
			{Name: ":event-type", Value: eventstream.StringValue("PayloadPart")},
			{Name: ":message-type", Value: eventstream.StringValue("event")},
			{Name: ":content-type", Value: eventstream.StringValue("application/octet-stream")},
		},
		Payload: []byte(`{"inputs":"Hello"}`),
	}
	body, err := signer.AppendMessage(nil, event)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("signature:", signer.PrevSignature())
	body = signer.AppendEnd(body)

	// The receiving side.
	dec := eventstream.NewDecoder(bytes.NewReader(body))
	verifier := eventstream.NewVerifier(creds, "us-west-2", "sagemaker", seed)
	var inner eventstream.Message
	for !verifier.Ended() {
		envelope, err := dec.Decode()
		if err != nil {
			log.Fatal(err)
		}
		payload, err := verifier.Verify(envelope)
		if err != nil {
			log.Fatal(err)
		}
		if len(payload) == 0 {
			fmt.Println("end frame verified")
			break
		}
		if err := eventstream.Unmarshal(payload, &inner); err != nil {
			log.Fatal(err)
		}
		sig, _ := envelope.Headers.Get(eventstream.ChunkSignatureHeader)
		fmt.Printf("verified %s %s, :chunk-signature %s…\n", inner.Headers[2].Value, inner.Payload, hex.EncodeToString(sig.Bytes)[:16])
	}
	// Output:
	// signature: ce42ec697bfe8a7097d092448dde2eca156290f25ba6c3661827f16b6e29b659
	// verified PayloadPart {"inputs":"Hello"}, :chunk-signature ce42ec697bfe8a70…
	// end frame verified
}

// lender is a reader over bytes it already holds, which it lends to a
// Decoder instead of copying them out.
type lender struct{ buf []byte }

func (l *lender) Read(p []byte) (int, error) {
	if len(l.buf) == 0 {
		return 0, io.EOF
	}
	n := copy(p, l.buf)
	l.buf = l.buf[n:]
	return n, nil
}

func (l *lender) Peek() ([]byte, error) { return l.buf, nil }
func (l *lender) Discard(n int)         { l.buf = l.buf[n:] }

// A Decoder reading from a Peeker decodes each message where the reader
// holds it: the payload is a view of the reader's own bytes, so the
// message stays in the reader until the next Decode.
func ExamplePeeker() {
	var stream []byte
	for _, text := range []string{"in", "place"} {
		var err error
		stream, err = eventstream.AppendMessage(stream, &eventstream.Message{Payload: []byte(text)})
		if err != nil {
			log.Fatal(err)
		}
	}
	src := &lender{buf: stream}
	dec := eventstream.NewDecoder(src)
	for {
		m, err := dec.Decode()
		if err == io.EOF {
			break
		}
		if err != nil {
			log.Fatal(err)
		}
		fmt.Printf("%q: the reader holds %d bytes\n", m.Payload, len(src.buf))
	}
	fmt.Printf("at the end: %d bytes\n", len(src.buf))
	// Output:
	// "in": the reader holds 39 bytes
	// "place": the reader holds 21 bytes
	// at the end: 0 bytes
}
