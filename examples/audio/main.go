// Command audio streams audio to a model in real-time-paced chunks over a
// bidirectional session, while a second goroutine prints the model's
// partial results as they arrive, part by part (Session.RecvPart).
//
// The audio is synthetic: a sine tone rendered as 16-bit mono PCM, cut
// into chunks of -chunk-ms milliseconds, each sent when a live capture
// would have recorded it. Each chunk is a BINARY message of its own
// (Session.Send): that is the way to stream live audio, since SageMaker
// hands each message to the model container as one WebSocket message
// and the model can answer it at once.
//
// With -fragment the chunks are instead the PARTIAL…COMPLETE parts of
// one message (Session.SendPart). The container receives them as one
// fragmented WebSocket message, and a container built on a message-level
// WebSocket library (most are) sees it only once it is complete: the
// first result then waits for the whole recording. Fragments are right
// for one large message that must arrive whole (a recorded file, an
// image), not for live audio; the program shows the difference.
//
// With no flags it needs no AWS account: it runs against an in-process
// SageMaker-compatible server whose toy "recognizer" answers every
// message of audio at once with its level and pitch so far. Like a real
// container, it sees a fragmented message only when it is complete
// (biditest's Server.WholeMessages).
//
//	go run ./examples/audio
//	go run ./examples/audio -seconds 5 -freq 220 -fragment
//
// With -rotate-after the call is carried by a bidi.RotatingSession, as a
// call past SageMaker's 30-minute cap on a stream must be: its streams
// are replaced make-before-break at that age, the demo server resets one
// stream in the middle (-fault-at), the audio a failed stream may have
// lost is sent again to its successor (-replay), and the call ends with
// Finish, which loses no answer. The transcript prints every partial
// result at its place on the call's audio timeline, rebased with each
// rotation's StreamStart, and drops the answers to replayed audio it had
// already printed:
//
//	go run ./examples/audio -seconds 6 -chunk-ms 100 -rotate-after 2s
//
// Against a real streaming speech endpoint (or the local gateway of
// examples/gateway), the same program prints whatever the model answers:
//
//	go run ./examples/audio -endpoint my-asr -region us-west-2 -query language=en
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/sagemaker-bidi/sagemaker-bidi/bidi/biditest"
	"github.com/sagemaker-bidi/sagemaker-bidi/examples/internal/cli"
)

func main() {
	ctx, stop := cli.NotifyInterrupt(context.Background())
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// options are the command-line flags.
type options struct {
	conn cli.Flags

	seconds, freq, speed float64
	sampleRate, chunkMS  int
	fragment             bool
	timeout              time.Duration

	rotateAfter, replay time.Duration
	faultAt             float64
}

// newFlagSet defines every flag on a new flag set writing to out.
func newFlagSet(out io.Writer) (*flag.FlagSet, *options) {
	o := &options{}
	fs := cli.NewFlagSet("audio", "usage: audio [flags]\n\nExample: audio -endpoint my-asr -region us-west-2 -seconds 5\n\n", out)
	o.conn.Register(fs, "; empty runs the in-process demo server")
	o.conn.RegisterQuery(fs)
	fs.Float64Var(&o.seconds, "seconds", 2, "length of the audio in `seconds`, e.g. -seconds 0.5")
	fs.Float64Var(&o.freq, "freq", 440, "pitch of the tone in `Hz`, e.g. -freq 220")
	fs.IntVar(&o.sampleRate, "sample-rate", 16000, "`samples` per second of the 16-bit mono PCM, e.g. -sample-rate 8000")
	fs.IntVar(&o.chunkMS, "chunk-ms", 100, "audio per chunk in `milliseconds`, e.g. -chunk-ms 20")
	fs.Float64Var(&o.speed, "speed", 1, "pace relative to real time (2: twice as fast; 0: no pacing), e.g. -speed 0")
	fs.BoolVar(&o.fragment, "fragment", false, "send the chunks as PARTIAL…COMPLETE parts of one message, which a container sees only when complete (to compare; live audio wants one message per chunk), e.g. -fragment")
	fs.DurationVar(&o.timeout, "timeout", 2*time.Minute, "bound of the whole session, e.g. -timeout 30s")
	fs.DurationVar(&o.rotateAfter, "rotate-after", 0, "carry the call on a RotatingSession that replaces its stream at this age (SageMaker caps a stream at 30 minutes; the demo server at 3 times this); 0: one session, e.g. -rotate-after 1s")
	fs.DurationVar(&o.replay, "replay", 2*time.Second, "with -rotate-after: the replay window, the audio sent again to a successor after a fault; 0: none, e.g. -replay 4s")
	fs.Float64Var(&o.faultAt, "fault-at", 0, "with -rotate-after, demo server only: reset the stream once this many `seconds` of audio reached the model (0: half of -seconds; negative: no fault), e.g. -fault-at 1.5")
	return fs, o
}

func parseFlags(args []string, stderr io.Writer) (*options, error) {
	fs, o := newFlagSet(stderr)
	if err := cli.Parse(fs, args); err != nil {
		return nil, errPrinted{err}
	}
	if fs.NArg() > 0 {
		return nil, fmt.Errorf("unexpected argument %q", fs.Arg(0))
	}
	if err := o.conn.Check(); err != nil {
		return nil, err
	}
	switch {
	case o.seconds <= 0 || o.seconds > 600:
		return nil, errors.New("-seconds: want 0 to 600")
	case o.sampleRate < 1000 || o.chunkMS <= 0 || o.speed < 0 || o.freq <= 0:
		return nil, errors.New("-sample-rate, -chunk-ms, -speed and -freq must be positive (-sample-rate at least 1000)")
	case o.sampleRate*2*o.chunkMS/1000 == 0:
		return nil, errors.New("-chunk-ms: a chunk must hold at least one sample")
	case o.rotateAfter < 0 || o.replay < 0:
		return nil, errors.New("-rotate-after and -replay: want 0 or more")
	case o.rotateAfter > 0 && o.fragment:
		return nil, errors.New("-rotate-after: send one message per chunk (without -fragment)")
	}
	if o.faultAt == 0 {
		o.faultAt = o.seconds / 2
	}
	return o, nil
}

// errPrinted is a command-line error cli.Parse printed already.
type errPrinted struct{ error }

func (e errPrinted) Unwrap() error { return e.error }

// run runs the program and returns its exit code.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	o, err := parseFlags(args, stderr)
	var printed errPrinted
	switch {
	case errors.Is(err, flag.ErrHelp):
		return 0
	case errors.As(err, &printed):
		return 2
	case err != nil:
		fmt.Fprintf(stderr, "audio: usage: %v\nRun 'audio -h' for the flags.\n", err)
		return 2
	}
	ctx, cancel := context.WithTimeout(ctx, o.timeout)
	defer cancel()
	if err := session(ctx, o, stdout); err != nil {
		return cli.Fail(ctx, stderr, "audio", o.conn.Describe(err))
	}
	return 0
}

func session(ctx context.Context, o *options, stdout io.Writer) error {
	var srv *biditest.Server
	if o.conn.Endpoint == "" {
		srv = biditest.NewUnstartedServer(recognizer(o.sampleRate, o.demoFault()))
		// A container sees a fragmented message only when complete,
		// as behind SageMaker.
		srv.WholeMessages = true
		if o.rotateAfter > 0 {
			srv.MaxStreamAge = 3 * o.rotateAfter // SageMaker's 30 minutes
			fmt.Fprintf(stdout, "streams capped at %v by the demo server\n", srv.MaxStreamAge)
		}
		srv.Start()
		defer srv.Close()
		fmt.Fprintf(stdout, "in-process server at %s with a toy streaming recognizer\n", srv.URL)
	}
	client, err := o.conn.Client(ctx, srv)
	if err != nil {
		return err
	}
	pcm := sineWave(o.freq, o.sampleRate, o.seconds)
	fmt.Fprintf(stdout, "%.1f s of a %g Hz tone: %d bytes of 16-bit PCM at %d Hz, in %d ms chunks\n\n",
		o.seconds, o.freq, len(pcm), o.sampleRate, o.chunkMS)

	if o.rotateAfter > 0 {
		return rotating(ctx, client, pcm, o, &logger{out: stdout, start: time.Now()})
	}
	sess, err := client.Open(ctx, o.conn.OpenInput("demo-asr"))
	if err != nil {
		return err
	}
	defer sess.Close()
	return stream(ctx, sess, pcm, o, &logger{out: stdout, start: time.Now()})
}
