// Command bidicat is a command-line client for SageMaker bidirectional
// streaming endpoints (InvokeEndpointWithBidirectionalStream), in the
// manner of websocat or grpcurl: it opens one session, sends its input
// as messages and prints what the model streams back.
//
// Install it with
//
//	go install github.com/sagemaker-bidi/sagemaker-bidi/examples/bidicat@latest
//
// Try it without an AWS account against an in-process demo model:
//
//	echo '{"messages":[{"role":"user","content":"hi"}],"stream":true}' | bidicat -local -o answer
//
// Talk to a real endpoint with the usual AWS credentials chain, or to the
// local gateway of examples/gateway:
//
//	bidicat -endpoint my-endpoint -region us-west-2 < prompts.jsonl
//	bidicat -endpoint demo -endpoint-url https://localhost:8443 -ca-cert /tmp/gateway.pem -linger 3s
//
// Input is standard input line by line (one message per line), whole
// files (-file), or a binary file in paced chunks (-binary, -chunk,
// -rate), sent as UTF8 or BINARY (-type). Output is the raw bytes of the
// model's messages (a newline after each on a terminal, -nl), the decoded
// events of its SSE or JSON Lines stream (-o events) or the answers
// rebuilt from them (-o answer, printed token by token as they stream,
// and as far as they got, marked incomplete, when the stream fails);
// -json prints one JSON object per line for scripts, always ending with
// one summary line that carries the exit code (usage errors included). On a terminal a live status line on standard error shows
// the invoked variant, the bytes and parts each way, the time to the
// first byte and a spinner or an upload progress bar; -q silences it.
//
// When the input ends, bidicat waits until the model has been silent for
// -linger (1s by default unless the input is typed on a terminal) before
// it ends its side of the stream: SageMaker then closes the model's
// WebSocket, and an answer still on its way would be lost. With -o
// answer, the wait ends as soon as every request has its complete
// answer.
//
// Exit codes: 0 success, 1 other failures, 2 usage errors, 3 HTTP errors
// before the stream started, 4 errors in the middle of the stream
// (including input the service ended the stream on), 5 could not
// connect, 130 interrupted. Run bidicat -h for every flag (the help goes
// to standard output), bidicat -version for the build.
package main

import (
	"context"
	"os"

	"github.com/sagemaker-bidi/sagemaker-bidi/examples/internal/cli"
)

func main() {
	ctx, stop := cli.NotifyInterrupt(context.Background())
	code := run(ctx, os.Args[1:], os.Stdin, os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}
