package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sync/atomic"
	"time"

	"github.com/sagemaker-bidi/sagemaker-bidi/bidi"
	"github.com/sagemaker-bidi/sagemaker-bidi/examples/internal/cli"
)

// Exit codes; usage documents them.
const (
	exitOK          = 0
	exitFailure     = 1
	exitUsage       = 2
	exitHTTP        = 3
	exitStream      = 4
	exitConnect     = 5
	exitInterrupted = cli.ExitInterrupted
)

// errTimeout is the cause of the context of a session that hit -timeout.
var errTimeout = errors.New("timed out (-timeout)")

// run is the program: it parses args, runs one session and returns the
// exit code. Output goes to stdout; the status line, notes and errors to
// stderr. ctx is cancelled on interrupt.
func run(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	o, err := parseFlags(args, stdout, stderr)
	if err != nil {
		if isHelp(err) {
			return exitOK
		}
		var ue *usageError
		if errors.As(err, &ue) {
			fmt.Fprintf(stderr, "bidicat: usage: %v\nRun 'bidicat -h' for the flags.\n", err)
		}
		if wantsJSON(args) {
			// Scripts get the error and the summary line as after any
			// other failure.
			enc := json.NewEncoder(stdout)
			enc.SetEscapeHTML(false)
			enc.Encode(jsonError{Type: "error", ExitCode: exitUsage, Class: "usage", Error: err.Error()})
			enc.Encode(jsonSummary{Type: "summary", ExitCode: exitUsage})
		}
		return exitUsage
	}
	if o.version {
		fmt.Fprintln(stdout, version())
		return exitOK
	}
	sessCtx := ctx
	if o.timeout > 0 {
		var cancel context.CancelFunc
		sessCtx, cancel = context.WithTimeoutCause(ctx, o.timeout, errTimeout)
		defer cancel()
	}
	// Someone typing the input on the terminal gets no live line, which
	// would be drawn over what they type; the summary still comes.
	typing := cli.IsTerminal(stdin) && o.binary == "" && len(o.files) == 0
	o.applyDefaults(typing, cli.IsTerminal(stdout))
	st := newStatus(stderr, !o.quiet && cli.IsTerminal(stderr), !typing, cli.IsTerminal(stdout))
	c := &cat{o: o, st: st, out: newOutput(o, stdout, st), typing: typing}
	err = c.session(sessCtx, stdin)
	st.finish()
	return c.report(err, cli.Interrupted(ctx))
}

// cat runs one session: a sender goroutine for the input, a receiver
// goroutine for the output.
type cat struct {
	o          *options
	st         *status
	out        *output
	typing     bool        // the input is typed on a terminal
	started    atomic.Bool // the service accepted the stream (HTTP 200)
	inputEnded atomic.Bool // the whole input was read and sent
}

// prompt tells someone about to type the input what to type and how to
// end, on a terminal (a note: not with -q).
func (c *cat) prompt() {
	what := "one message per line"
	if c.o.mode != modeRaw {
		what = `one request per line, e.g. {"messages":[{"role":"user","content":"hi"}],"stream":true}`
	}
	c.st.note("type %s; Ctrl-D ends the input, Ctrl-C stops", what)
}

// interruptedWhile says what the session was doing when it was
// interrupted, for the message of an interrupt.
func (c *cat) interruptedWhile() string {
	switch {
	case !c.started.Load() && !c.inputEnded.Load():
		return "before the service answered"
	case !c.inputEnded.Load() && c.typing:
		return "while the input was open (Ctrl-D ends it and waits for the answers)"
	case !c.inputEnded.Load():
		return "while the input was being sent"
	case c.o.mode == modeAnswer:
		return "while waiting for the answers"
	}
	return fmt.Sprintf("while waiting for the model after the input ended (-linger %s)", c.o.linger)
}

func (c *cat) session(ctx context.Context, stdin io.Reader) (err error) {
	client, cleanup, err := newClient(ctx, c.o, c.st)
	if err != nil {
		return err
	}
	defer cleanup()
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()

	in := c.o.conn.OpenInput(localEndpoint)
	sess, err := client.Open(ctx, in)
	if err != nil {
		return err
	}
	defer sess.Close()
	rec, stopRecording, err := record(c.o, sess, in)
	if err != nil {
		return err
	}
	defer func() {
		if rerr := stopRecording(); err == nil {
			err = rerr
		}
	}()
	c.st.start(time.Now())
	if c.typing {
		c.prompt()
	}

	recvDone := make(chan error, 1)
	go func() { recvDone <- c.receive(ctx, rec) }()
	snd := &sender{sess: rec, o: c.o, st: c.st}
	sendDone := make(chan error, 1)
	go func() { sendDone <- snd.run(ctx, stdin, &c.inputEnded) }()

	select {
	case err := <-recvDone:
		// The stream is over. A sender still waiting for stdin is left
		// behind: its next Send fails once the session is closed. One
		// that was in the middle of a message lost it.
		if err == nil && snd.pending.Load() {
			return c.inputCut(bidi.ErrStreamEnded)
		}
		return err
	case err := <-sendDone:
		var le *localError
		if errors.As(err, &le) {
			sess.Close()
			<-recvDone // the receiver writes output: wait for it
			return err
		}
		// After a session error the receiver reports the cause too; it
		// is the better one to report. A stream the service ended
		// cleanly before the input was sent is a failure all the same.
		rerr := <-recvDone
		switch {
		case rerr != nil:
			return rerr
		case errors.Is(err, bidi.ErrStreamEnded):
			return c.inputCut(err)
		}
		return err
	}
}

// inputCutError reports a stream that the service ended, without giving
// a reason, before bidicat had sent all its input: what was sent so far
// and err, which matches bidi.ErrStreamEnded.
type inputCutError struct {
	sent string
	err  error
}

func (e *inputCutError) Error() string {
	return fmt.Sprintf("the service ended the stream before all the input was sent (sent %s): the message in progress was not delivered; "+
		"no reason was given (is the message larger than the model accepts?)", e.sent)
}

func (e *inputCutError) Unwrap() error { return e.err }

func (c *cat) inputCut(err error) error {
	sp, sb, _, _, _, _ := c.st.snapshot()
	return &inputCutError{sent: count(sp, sb), err: err}
}

// receive prints the response headers, then every part the model sends,
// until the stream ends.
func (c *cat) receive(ctx context.Context, sess session) error {
	resp, err := sess.Response(ctx)
	if err != nil {
		return err
	}
	c.started.Store(true)
	c.st.setConnected(resp.InvokedProductionVariant)
	if err := c.out.response(resp); err != nil {
		return err
	}
	for {
		p, err := sess.RecvPart(ctx)
		switch {
		case err == io.EOF:
			return c.out.end()
		case errors.As(err, new(*bidi.MessageTooLargeError)):
			// The part was dropped; the stream goes on.
			if err := c.out.problem("receive", err); err != nil {
				return err
			}
			continue
		case err != nil:
			// What was received before the failure is still printed:
			// an answer as far as it went, marked incomplete.
			why := "the stream failed before the answer ended"
			if cli.Interrupted(ctx) {
				why = "interrupted before the answer ended"
			}
			c.out.abort(why)
			return err
		}
		c.st.received(len(p.Data))
		if err := c.out.part(p); err != nil {
			return err
		}
	}
}

// jsonSummary is the last line of -json output, whatever the outcome: a
// usage error, a failed connection (zero counts and duration) included.
type jsonSummary struct {
	Type          string  `json:"type"`
	ExitCode      int     `json:"exit_code"`
	SentParts     int64   `json:"sent_parts"`
	SentBytes     int64   `json:"sent_bytes"`
	ReceivedParts int64   `json:"received_parts"`
	ReceivedBytes int64   `json:"received_bytes"`
	FirstByteMS   float64 `json:"first_byte_ms,omitempty"`
	DurationMS    float64 `json:"duration_ms"`
}

// report prints err, if any, and the -json summary, and returns the exit
// code.
func (c *cat) report(err error, interrupted bool) int {
	code := exitOK
	if err != nil {
		code = c.reportError(err, interrupted)
	} else {
		c.warnSilence()
	}
	if c.o.json {
		sp, sb, rp, rb, ttfb, total := c.st.snapshot()
		c.out.emit(jsonSummary{Type: "summary", ExitCode: code, SentParts: sp, SentBytes: sb,
			ReceivedParts: rp, ReceivedBytes: rb, FirstByteMS: ms(ttfb), DurationMS: ms(total)})
	}
	return code
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// warnSilence warns, unless -q, when the input was sent and the stream
// ended cleanly without a byte of answer: most likely the model needed
// more time after the input ended than -linger gave it.
func (c *cat) warnSilence() {
	sp, sb, rp, _, _, _ := c.st.snapshot()
	if c.o.quiet || sp == 0 || rp > 0 {
		return
	}
	c.st.write(c.st.stderr, fmt.Appendf(nil, "bidicat: sent %s but received nothing; the model may need time after the input ends: try -linger %s\n",
		count(sp, sb), max(3*time.Second, 2*c.o.linger)))
}
